"""The ``%%ask`` / ``%ask`` and ``%cadet`` magics: parse, delegate, return a display object.

Usage and configuration errors (a bad option, no model, no connection, an interrupt) raise
IPython's :class:`~IPython.core.error.UsageError`: IPython shows its one line without a
traceback, the cell fails and "Run All" stops there. The outcome of a question, even one with no
answer after every attempt, is a result, not an error.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Dict, Float, Int, TraitError, TraitType, Unicode, validate
from traitlets.config import Configurable

from cadet_magic.errors import (
    CadetError,
    ConfigurationError,
    ModelCallInterrupted,
    UnsupportedConnectionError,
)
from cadet_magic.llm import ENV_VAR
from cadet_magic.options import AskOptions, check_option

log = logging.getLogger("cadet_magic")


class Message:
    """One line of information for the user (``%cadet reset``); errors raise ``UsageError``."""

    def __init__(self, text: str, kind: str = "info") -> None:
        self.text = text
        self.kind = kind

    def __repr__(self) -> str:
        return self.text

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        from html import escape

        color = "var(--jp-error-color1,#c62828)" if self.kind == "error" else "inherit"
        return {
            "text/plain": self.text,
            "text/html": f"<div class='cadet-message' style='color:{color}'>{escape(self.text)}</div>",
        }


def option_hint(error: str, magic: Any) -> str:
    """The " (did you mean --x?)" for an unknown option in argparse's ``error``, from the options
    of ``magic`` (a function decorated with ``magic_arguments``); "" when none is close.

    >>> def ask(): pass
    >>> ask.parser = type("P", (), {"_option_string_actions": {"--max-attempts": 0, "-m": 0}})
    >>> option_hint("unrecognized arguments: --max-attemps", ask)
    ' (did you mean --max-attempts?)'
    """
    import difflib

    found = re.search(r"unrecognized arguments: (.*)", error)
    options = [o for o in getattr(getattr(magic, "parser", None), "_option_string_actions", {})]
    hints = []
    for word in found.group(1).split() if found else []:
        name = word.split("=", 1)[0]
        if name.startswith("--"):
            hints += difflib.get_close_matches(name, [o for o in options if o.startswith("--")], 1)
    return f" (did you mean {', '.join(dict.fromkeys(hints))}?)" if hints else ""


def follow_arguments(line: str) -> str:
    """The magic's line with ``-f``/``--follow`` given its value, for argparse: ``--follow=N``
    when a number follows (see :func:`read_follow` for when that number is a question word),
    else ``--follow=last`` (so that ``%ask --follow only for 2025`` keeps its words).

    >>> follow_arguments("--follow only 2025"), follow_arguments("-f 2 only 2025")
    ('--follow=last only 2025', '--follow=2 only 2025')
    """
    pattern = r"(?<!\S)(?:-f|--follow)(?:=(\S+)|\s+(\d+)(?=\s|$))?(?=\s|$)"

    def value(m: re.Match[str]) -> str:
        given, spaced = m.group(1), m.group(2)
        return f"--follow={given or spaced or 'last'}"

    return re.sub(pattern, value, line)


def read_follow(line: str, args: Any, answers: int) -> Any:
    """``args`` with ``-f N`` / ``--follow N`` read as the user means it: N is answer N when the
    session has that answer (1 to ``answers``) or when no other word is left on the line for the
    question; otherwise N is the question's first word and the last answer is followed
    (``%ask --follow 2025 only``). ``--follow=N`` always names answer N.

    >>> from types import SimpleNamespace as A
    >>> read_follow("--follow 2025 only", A(follow="2025", question=["only"]), 3)
    namespace(follow='last', question=['2025', 'only'])
    >>> read_follow("-f 2 only", A(follow="2", question=["only"]), 3).follow
    '2'
    >>> read_follow("--follow=2025 only", A(follow="2025", question=["only"]), 3).follow
    '2025'
    >>> read_follow("--follow 2025", A(follow="2025", question=[]), 3).follow
    '2025'
    """
    number = args.follow or ""
    spaced = re.search(rf"(?<!\S)(?:-f|--follow)\s+{re.escape(number)}(?=\s|$)", line)
    if not (number.isdigit() and spaced and args.question) or 1 <= int(number) <= answers:
        return args
    args.follow, args.question = "last", [number, *args.question]
    return args


def follow_number(args: Any) -> int | None:
    """``--follow``'s answer number (None: the last), or one clear line."""
    if args.follow in (None, "last"):
        return None
    try:
        return int(args.follow)
    except ValueError:
        raise ConfigurationError(
            f"--follow {args.follow}: give the number of an earlier answer (e.g. --follow 2), "
            "or --follow alone for the last one."
        ) from None


def running_context(followed: Any, recorded: Any) -> str:
    """What the panel says the question builds on while it runs."""
    if recorded is not None:
        return "Rerun of the recorded SQL: no model call"
    if followed is not None:
        return f"Following answer {followed.number}: {followed.question!r}"
    return ""


def rows_as_dicts(columns: list[str], rows: list[tuple]) -> list[dict[str, Any]]:
    """The answer's rows as dicts keyed by column name (what ``-o`` stores without pandas).

    >>> rows_as_dicts(["a", "b"], [(1, 2), (3, 4)])
    [{'a': 1, 'b': 2}, {'a': 3, 'b': 4}]
    """
    return [dict(zip(columns, row, strict=False)) for row in rows]


class Secret(str):
    """A string that does not show itself: ``%config AskMagic`` and reprs print a mask.

    Example:
        >>> key = Secret("sk-123")
        >>> repr(key), key == "sk-123"
        ("'***' (set)", True)
    """

    def __repr__(self) -> str:
        return "'***' (set)"


class SecretUnicode(Unicode):
    """A string trait whose value is kept as a :class:`Secret`."""

    def validate(self, obj: Any, value: Any) -> Any:
        value = super().validate(obj, value)
        return None if value is None else Secret(value)


def _trait(f: Any) -> TraitType:
    """The configurable trait of one :class:`AskOptions` field: its kind, default and help."""
    meta = f.metadata
    if meta["kind"] is dict:
        trait = Dict(
            default_value=f.default, allow_none=meta["nullable"], config=True, help=meta["help"]
        )
        trait.default_value = f.default  # None stays None (not an empty table)
        return trait
    kinds = {int: Int, float: Float, bool: Bool, str: SecretUnicode if meta["secret"] else Unicode}
    return kinds[meta["kind"]](
        f.default, allow_none=meta["nullable"], config=True, help=meta["help"]
    )


def _check_trait(self: Any, proposal: Any) -> Any:
    """A trait's new value passes the option's own check (:func:`check_option`) or is refused
    with its one line; the trait keeps its value."""
    value, name = proposal["value"], proposal["trait"].name
    try:
        check_option(name, value)
    except ConfigurationError as e:
        message = str(e)
        raise TraitError(
            message if message.startswith("AskMagic.") else f"AskMagic.{message}"
        ) from None
    return value


#: One configurable trait per option, generated from :class:`AskOptions` (its defaults, help
#: and checks are written there once); ``%config AskMagic.<option> = ...`` sets them.
OptionTraits = type(
    "OptionTraits",
    (Configurable,),
    {
        **{f.name: _trait(f) for f in AskOptions.fields() if f.metadata["kind"] is not object},
        "_check_trait": validate(*AskOptions.names())(_check_trait),
        "__doc__": "The options of :class:`AskOptions` as configurable traits.",
    },
)


def usage_error(error: BaseException, label: str, con_name: str | None) -> UsageError:
    """The one line a failed ``%%ask`` shows for ``error`` (the kernel and the connection are
    as they were)."""
    if isinstance(error, UnsupportedConnectionError):
        return UsageError(str(UnsupportedConnectionError(error.value, name=con_name)))
    if isinstance(error, CadetError):
        return UsageError(str(error))
    if isinstance(error, ModelCallInterrupted):
        return UsageError(
            "Interrupted: the model call was stopped (no query was running); your "
            "connection is unchanged."
        )
    if isinstance(error, KeyboardInterrupt):
        return UsageError(
            "Interrupted: the running query was cancelled; your connection is unchanged."
        )
    log.debug("%%ask failed", exc_info=error)
    first = (str(error).strip().splitlines() or [""])[0][:300]
    return UsageError(
        f"{label} failed ({type(error).__name__}): {first}. Your connection is unchanged; "
        "check the options and the connection, then run the cell again."
    )


@magics_class
class AskMagic(Magics, OptionTraits):  # type: ignore[misc, valid-type]
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
        #: The last result (``%cadet keep`` keeps it).
        self.last: Any = None

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
        "--model", "-m", default=None, help="init_chat_model spec or variable holding a chat model."
    )
    @argument(
        "--con",
        "-c",
        default=None,
        help="Variable holding an engine/connection (default: %%sql's).",
    )
    @argument("--out", "-o", default=None, help="Store the answer DataFrame in this variable.")
    @argument("--max-attempts", type=int, default=None, help="SQL attempts at most (default 3).")
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
        "CADET_RERUN=1 or %%%%config AskMagic.rerun = True.",
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

                shown = "rerun (no model)" if rerun else model
                display = live_display(
                    question,
                    model=shown,
                    con=args.con,
                    namespace=ns,
                    keeper=self._keeper(),
                    context=running_context(followed, recorded),
                )
            with using(self.db):
                options = self.options().replace(
                    model=model,
                    rerun=False,
                    fallback=self.fallback and not args.no_fallback,
                    **({} if args.max_attempts is None else {"max_attempts": args.max_attempts}),
                )
                on_event = display.update if display is not None else None
                if recorded is not None:
                    from cadet_magic.api import rerun as rerun_answer

                    result = rerun_answer(
                        question,
                        recorded[0],
                        con,
                        code=recorded[1].get("code"),
                        recorded=recorded[1],
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
                    )
        except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001 - each becomes one line
            if display is not None:
                display.close()
            raise usage_error(e, label, args.con) from None
        number = self.history.add(result)
        if number is not None:
            result.provenance["number"] = number
            if followed is not None:
                result.provenance["followed"] = followed.as_dict()
        self.last = result
        ns["_ask"] = result
        if args.out and result.df is not None:
            ns[args.out] = result.df
        elif args.out and result.ok:
            ns[args.out] = rows_as_dicts(result.columns, result.rows)
            print(
                f"-o {args.out}: pandas is not available in this kernel, so {args.out} holds the "
                f"{len(result.rows)} row(s) as a list of dicts."
            )
        if display is not None:
            display.finish(result)
            return None
        return result

    def _recorded(self, question: str, label: str) -> tuple[str, dict]:
        """The SQL recorded for ``question`` (the notebook's record, else this session's), or
        one clear line saying there is none."""
        from cadet_magic.conversation import recorded_sql

        assert self.shell is not None
        raw = self.shell.user_ns.get("_ih") or [""]
        history = getattr(self.shell, "history_manager", None)
        cell = (getattr(history, "input_hist_raw", None) or raw or [""])[-1]
        found = recorded_sql(
            question, history=self.history, namespace=self.shell.user_ns, cell=cell
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
        questions on the same database; ``%cadet examples`` lists the kept answers."""
        command = line.strip() or "stats"
        if command == "stats":
            from cadet_magic.display.stats import StatsView

            return StatsView(self.metrics, self.prices)
        if command == "reset":
            self.metrics.reset()
            return Message("Session metrics cleared.")
        if command == "keep":
            return self._keep()
        if command == "examples":
            from cadet_magic.display.context import ExamplesView
            from cadet_magic.kept import read_examples

            if not self.examples_path:
                raise UsageError("%cadet examples: AskMagic.examples_path is not set.")
            return ExamplesView(read_examples(self.examples_path))
        raise UsageError(
            f"%cadet: unknown command {command!r}; use 'stats', 'reset', 'keep' or 'examples'."
        )

    def _keeper(self) -> Any:
        """What the panel's "Keep this answer" button calls (None without an examples file)."""
        if not self.examples_path:
            return None
        from cadet_magic.kept import keep

        path = self.examples_path
        return lambda result: keep(path, result)

    def _keep(self) -> Message:
        """``%cadet keep``: the last question and its final SQL appended to the examples file."""
        from cadet_magic.kept import keep

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
