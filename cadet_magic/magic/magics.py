"""The ``%%ask`` / ``%ask`` and ``%cadet`` magics: parse, delegate, return a display object.

Usage and configuration errors (a bad option, no model, no connection, an interrupt) raise
IPython's :class:`~IPython.core.error.UsageError`: IPython shows its one line without a
traceback, the cell fails and "Run All" stops there. The outcome of a question, even one with no
answer after every attempt, is a result, not an error.

The magic class is thin: its options are traits generated from ``AskOptions``
(:mod:`cadet_magic.magic.traits`), its line is read by :mod:`cadet_magic.magic.args`, and what
it shows besides an answer (messages, the one line of a failure) is
:mod:`cadet_magic.magic.output`'s.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets.config import Configurable

from cadet_magic.db.frames import a_kind, is_frame
from cadet_magic.errors import CadetError, ConfigurationError
from cadet_magic.llm import ENV_VAR
from cadet_magic.magic.args import (
    follow_arguments,
    follow_number,
    option_hint,
    read_follow,
)
from cadet_magic.magic.output import (
    Message,
    rows_as_dicts,
    running_context,
    usage_error,
)
from cadet_magic.magic.traits import OptionTraits, Secret, SecretUnicode  # noqa: F401
from cadet_magic.options import AskOptions


def notebook_frames(ns: dict, names: str | None, con_name: str | None, con: Any) -> dict:
    """The frames ``--df a,b`` names (or the frame ``--con VAR`` holds), by variable name: the
    tables the question is asked of (:mod:`cadet_magic.db.frames`)."""
    if names is None:  # --con VAR holding a DataFrame: the table is named after the variable
        return {str(con_name): con}
    if con_name:
        raise UsageError("--df and --con name two sources: use one of them.")
    listed = [n.strip() for n in names.split(",") if n.strip()]
    if not listed:
        raise UsageError("--df needs the names of notebook DataFrames, e.g. --df sales,customers.")
    missing = [n for n in listed if n not in ns]
    if missing:
        raise UsageError(f"--df {', '.join(missing)}: no such variable in the notebook.")
    wrong = [n for n in listed if not is_frame(ns[n])]
    if wrong:
        name = wrong[0]
        raise UsageError(
            f"--df {name}: it holds {a_kind(ns[name])}, not a DataFrame (pandas, polars "
            "or an Arrow table)."
        )
    return {n: ns[n] for n in listed}


def default_label() -> str | None:
    """What the panel calls the model while it runs when none is configured: the local
    model when it is installed (the run's result names the model in any case)."""
    from cadet_magic.llm.local import DEFAULT_LABEL, installed

    return DEFAULT_LABEL if installed() else None


@magics_class
class AskMagic(Magics, OptionTraits):
    """Ask the notebook's database a question in plain language."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        Configurable.__init__(self, config=shell.config if shell is not None else None)
        Magics.__init__(self, shell=shell, **kwargs)
        if shell is not None:
            shell.configurables.append(self)
        from cadet_magic.db.session import DbSession
        from cadet_magic.metrics import SessionMetrics

        #: This session's schema cache and query-deadline watchdog: every runner made while a
        #: question runs uses them (see cadet_magic.db.session).
        self.db = DbSession()
        #: This session's counts of questions, attempts and outcomes (``%cadet stats``).
        self.metrics = SessionMetrics()
        from cadet_magic.conversation import History

        #: This session's answers, numbered from 1 (``--follow N``, ``--rerun``).
        self.history = History()
        #: The last result (``%cadet keep`` keeps it) and the ``-o`` variable it went to
        #: (``%cadet choose N`` puts the chosen reading there).
        self.last: Any = None
        self.last_out: str | None = None

    def options(self) -> AskOptions:
        """The configured options (every trait of :class:`OptionTraits`), checked."""
        values = {name: getattr(self, name) for name in self.trait_names(config=True)}
        if "api_key" in values:
            values["api_key"] = values["api_key"] or None
        if "base_url" in values:
            values["base_url"] = values["base_url"] or None
        if "examples_path" in values:
            values["examples_path"] = values["examples_path"] or None
        return AskOptions(**{k: v for k, v in values.items() if k in AskOptions.names()})

    @magic_arguments()
    @argument(
        "--model",
        "-m",
        default=None,
        help="init_chat_model spec, 'local' (the installed local model) or variable holding a "
        "chat model.",
    )
    @argument(
        "--con",
        "-c",
        default=None,
        help="Variable holding an engine/connection (default: %%sql's).",
    )
    @argument(
        "--df",
        default=None,
        metavar="NAMES",
        help="Ask these notebook DataFrames (pandas, polars, Arrow; comma-separated variable "
        "names) as tables named after their variables, instead of a database.",
    )
    @argument("--out", "-o", default=None, help="Store the answer DataFrame in this variable.")
    @argument("--max-attempts", type=int, default=None, help="SQL attempts at most (default 3).")
    @argument(
        "--candidates",
        type=int,
        default=None,
        metavar="N",
        help="Candidate answers at most that vote on the answer (1: no vote).",
    )
    @argument("--no-fallback", action="store_true", help="Do not fall back to SELECT + pandas.")
    @argument(
        "--follow",
        "-f",
        default=None,
        metavar="N",
        help="Build on answer N of this session (alone: the last answer; a number naming no "
        "answer starts the question; --follow=N always names one): its question, SQL and "
        "column names go with the question.",
    )
    @argument(
        "--rerun",
        action="store_true",
        help="Re-execute the SQL recorded for this question (no model call); also "
        "CADET_RERUN=1 or %%config AskMagic.rerun = True.",
    )
    @argument(
        # argparse expands %-formats in help texts: %%%% shows as %%
        "question",
        nargs="*",
        help="The question (line magic); in %%%%ask it is the cell body.",
    )
    @line_cell_magic
    def ask(self, line: str, cell: str | None = None) -> Any:
        """Answer a plain-language question from the notebook's database.

        The question becomes SQL written by the configured model; the SQL is checked
        for safety, run read-only on the connection, and on failure diagnosed and
        retried with targeted feedback. The last run is stored as ``_ask``.

        Examples::

            %%ask
            Which five customers spent the most last year?

            %ask --con engine How many orders were cancelled?
            %config AskMagic.model = "openai:gpt-4o-mini"
        """
        label = "%%ask" if cell is not None else "%ask"
        try:
            args = parse_argstring(self.ask, follow_arguments(line))
            args = read_follow(line, args, len(self.history.answers))
        except (UsageError, ValueError) as e:  # argparse's message, or unbalanced quotes
            raise UsageError(f"{label}: {e}{option_hint(str(e), self.ask)}") from None
        question = (cell if cell is not None else " ".join(args.question)).strip()
        if cell is not None and args.question:
            question = (" ".join(args.question) + " " + question).strip()
        if not question:
            raise UsageError(
                f"{label} needs a question: write it after %ask or in the %%ask cell body."
            )
        return self._run(question, args, label)

    def _run(self, question: str, args: Any, label: str = "%ask") -> Any:
        from cadet_magic import lite

        try:
            lite.require()  # JupyterLite: the SQL parser and widgets still loading
        except ImportError as e:
            raise UsageError(str(e)) from None
        from cadet_magic.api import ask
        from cadet_magic.db.session import using

        assert self.shell is not None  # a magic runs in a shell
        ns = self.shell.user_ns
        con = None
        if args.con:
            if args.con not in ns:
                raise UsageError(f"--con {args.con}: no such variable in the notebook.")
            con = ns[args.con]
        if args.df is not None or is_frame(con):
            con = notebook_frames(ns, args.df, args.con, con)
        model = args.model or self.model or os.environ.get(ENV_VAR) or None
        rerun = args.rerun or self.rerun or os.environ.get("CADET_RERUN", "") in ("1", "true")
        display = None
        try:
            followed = None if args.follow is None else self.history.follow(follow_number(args))
            recorded = None
            if rerun:
                recorded = self._recorded(question, label)
            if self.live:
                from cadet_magic.display.live import live_display

                shown = "rerun (no model)" if rerun else (model or default_label())
                display = live_display(
                    question,
                    model=shown,
                    con=args.con,
                    namespace=ns,
                    keeper=self._keeper(),
                    context=running_context(followed, recorded),
                    on_choose=lambda chosen: self._publish(chosen, args.out, chosen=True),
                )
            with using(self.db):
                options = self.options().replace(
                    model=model,
                    rerun=False,
                    fallback=self.fallback and not args.no_fallback,
                    **({} if args.max_attempts is None else {"max_attempts": args.max_attempts}),
                    **({} if args.candidates is None else {"candidates": args.candidates}),
                )
                on_event = display.update if display is not None else None
                # the number the session gives the answer when it has SQL (History.add)
                number = len(self.history.answers) + 1
                if recorded is not None:
                    from cadet_magic.api import rerun_recorded

                    result = rerun_recorded(
                        question,
                        recorded[0],
                        con,
                        code=recorded[1].get("code"),
                        recorded=recorded[1],
                        number=number,
                        options=options,
                        on_event=on_event,
                    )
                else:
                    result = ask(
                        question,
                        con=con,
                        options=options,
                        on_event=on_event,
                        namespace=ns,
                        metrics=self.metrics,
                        follow=followed,
                        number=number,
                    )
        except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001 - each becomes one line
            if display is not None:
                display.close()
            raise usage_error(e, label, args.con) from None
        self.history.add(result)
        self._publish(result, args.out)
        if display is not None:
            display.finish(result)
            return None
        return result

    def _publish(self, result: Any, out: str | None, chosen: bool = False) -> None:
        """Makes ``result`` the cell's answer: ``_ask``, the ``-o`` variable, the last answer
        (``%cadet keep``); a reading the user ``chosen`` replaces the answer it was chosen
        from (in the session's history too) and is counted in ``%cadet stats``."""
        assert self.shell is not None
        ns = self.shell.user_ns
        if chosen:
            number = result.provenance.get("number")
            if isinstance(number, int) and 1 <= number <= len(self.history.answers):
                self.history.answers[number - 1] = result
            self.metrics.chose(result)
        self.last, self.last_out = result, out
        ns["_ask"] = result
        if out and result.df is not None:
            ns[out] = result.df
        elif out and result.ok:
            ns[out] = rows_as_dicts(result.columns, result.rows)
            if not chosen:
                print(
                    f"-o {out}: pandas is not available in this kernel, so {out} holds the "
                    f"{len(result.rows)} row(s) as a list of dicts."
                )

    def _recorded(self, question: str, label: str) -> tuple[str, dict]:
        """The SQL recorded for ``question`` (the notebook's record, else this session's), or
        one clear line saying there is none."""
        from cadet_magic.conversation import notebook_path, recorded_sql

        assert self.shell is not None
        raw = self.shell.user_ns.get("_ih") or [""]
        history = getattr(self.shell, "history_manager", None)
        cell = (getattr(history, "input_hist_raw", None) or raw or [""])[-1]
        found = recorded_sql(
            question, history=self.history, namespace=self.shell.user_ns, cell=cell
        )
        if found is None and notebook_path(self.shell.user_ns) is None:
            raise ConfigurationError(
                f"{label} --rerun: no SQL is recorded for this question in this session, and "
                "this kernel cannot tell which notebook it runs (jupyter nbconvert and "
                "JupyterLite do not say); name the notebook (%env JPY_SESSION_NAME="
                "analysis.ipynb, or JPY_SESSION_NAME=analysis.ipynb jupyter nbconvert --execute "
                "...) or run the cell without --rerun to ask the model."
            )
        if found is None:
            raise ConfigurationError(
                f"{label} --rerun: no SQL is recorded for this question in this notebook or "
                "session; run the cell without --rerun (and without CADET_RERUN / "
                "AskMagic.rerun) to ask the model."
            )
        return found

    @line_magic
    def cadet(self, line: str) -> Any:
        """``%cadet stats`` shows this session's metrics; ``%cadet reset`` clears them;
        ``%cadet keep`` keeps the last answer (its question and SQL) as an example for later
        questions on the same database; ``%cadet examples`` lists the kept answers;
        ``%cadet choose N``: when the last answer asked which reading was meant, reading ``N``
        becomes the answer (no model call)."""
        command = line.strip() or "stats"
        if command == "stats":
            from cadet_magic.display.stats_table import StatsView

            return StatsView(self.metrics, self.prices)
        if command == "reset":
            self.metrics.reset()
            return Message("Session metrics cleared.")
        if command == "keep":
            return self._keep()
        if command.split()[0] == "choose":
            return self._choose(command.split()[1:])
        if command == "examples":
            from cadet_magic.display.answer_context import ExamplesView
            from cadet_magic.kept_answers import own_key, read_examples

            if not self.examples_path:
                raise UsageError("%cadet examples: AskMagic.examples_path is not set.")
            return ExamplesView(read_examples(self.examples_path, key=own_key))
        raise UsageError(
            f"%cadet: unknown command {command!r}; use 'stats', 'reset', 'keep', 'examples' or "
            "'choose N'."
        )

    def _choose(self, words: list[str]) -> Any:
        """``%cadet choose N``: reading ``N`` of the last answer becomes the answer (no model
        call), as a click on the panel's button makes it."""
        last = self.last
        readings = getattr(last, "readings", ()) if last is not None else ()
        if not readings:
            raise UsageError(
                "%cadet choose: the last answer has no readings to choose from (it asks only "
                "when the candidate answers disagree without a clear lead)."
            )
        if len(words) != 1 or not words[0].isdigit() or int(words[0]) >= len(readings):
            raise UsageError(
                f"%cadet choose N: N is the reading's number, 0 to {len(readings) - 1}; e.g. "
                "%cadet choose 1."
            )
        asked = last if last.chosen is None else replace(last, asks=True, chosen=None)
        result = asked.choose(int(words[0]))
        self._publish(result, self.last_out, chosen=True)
        return result

    def _keeper(self) -> Any:
        """What the panel's "Keep this answer" button calls (None without an examples file)."""
        if not self.examples_path:
            return None
        from cadet_magic.kept_answers import keep

        path = self.examples_path
        return lambda result: keep(path, result)

    def _keep(self) -> Message:
        """``%cadet keep``: the last question and its final SQL appended to the examples file."""
        from cadet_magic.kept_answers import keep

        if self.last is None:
            raise UsageError("%cadet keep: nothing to keep yet; ask a question with %%ask first.")
        if not self.examples_path:
            raise UsageError(
                "%cadet keep: AskMagic.examples_path is not set; e.g. "
                "%config AskMagic.examples_path = '.cadet/examples.jsonl'."
            )
        try:
            pair = keep(self.examples_path, self.last)
        except CadetError as e:
            raise UsageError(str(e)) from None
        return Message(
            f"Kept: {pair['question']!r} and its SQL in {self.examples_path}; later questions "
            "on this database get the most similar kept answers as examples."
        )
