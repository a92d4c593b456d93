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
from traitlets import Bool, Dict, Float, Int, TraitError, Unicode, validate
from traitlets.config import Configurable

from cadet_magic.errors import CadetError, ModelCallInterrupted, UnsupportedConnectionError
from cadet_magic.llm import ENV_VAR
from cadet_magic.options import DEFAULTS, AskOptions

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


@magics_class
class AskMagic(Magics, Configurable):
    """Ask the notebook's database a question in plain language."""

    model = Unicode(
        None,
        allow_none=True,
        config=True,
        help="Default model: an init_chat_model spec ('openai:gpt-4o-mini'), 'scripted:PATH', "
        f"or a notebook variable name. Falls back to the {ENV_VAR} environment variable.",
    )
    max_attempts = Int(
        DEFAULTS.max_attempts, config=True, help="SQL attempts at most per question."
    )
    row_limit = Int(DEFAULTS.row_limit, config=True, help="Rows fetched at most per answer.")
    result_bytes = Int(
        DEFAULTS.result_bytes,
        config=True,
        help="Bytes of values fetched at most per answer (64 MiB).",
    )
    timeout = Float(
        DEFAULTS.timeout, config=True, help="Seconds a query may run before it is cancelled."
    )
    model_timeout = Float(
        DEFAULTS.model_timeout,
        config=True,
        help="Seconds each model call may take before it is abandoned.",
    )
    fallback = Bool(
        DEFAULTS.fallback, config=True, help="Fall back to a simple SELECT plus pandas."
    )
    fallback_memory = Int(
        DEFAULTS.fallback_memory,
        config=True,
        help="Bytes the fallback's pandas code may allocate in its isolated worker (2 GiB).",
    )
    fallback_unconfined = Bool(
        DEFAULTS.fallback_unconfined,
        config=True,
        help="Run the fallback's pandas code even where it cannot be confined (no Landlock, "
        "macOS, Windows): off by default.",
    )
    schema_budget = Int(
        DEFAULTS.schema_budget, config=True, help="Characters of schema context in the prompt."
    )
    live = Bool(DEFAULTS.live, config=True, help="Show the live attempts panel where widgets work.")
    api_key = SecretUnicode(
        None,
        allow_none=True,
        config=True,
        help="API key for a model given by spec (default: the provider's environment variable, "
        "e.g. OPENAI_API_KEY). Set it in the session; never store it in the notebook.",
    )
    base_url = Unicode(
        None,
        allow_none=True,
        config=True,
        help="Base URL of an OpenAI-compatible server (…/v1) for a model given by spec "
        "(default: the provider's own, or OPENAI_BASE_URL / OLLAMA_HOST).",
    )

    temperature = Float(
        None,
        allow_none=True,
        config=True,
        help="Sampling temperature for a model given by spec (None: the provider's default; "
        "0 for repeatable replies).",
    )

    prices = Dict(
        {},
        config=True,
        help="Price per million tokens by model, (input, output), e.g. "
        '{"openai:gpt-4o-mini": (0.15, 0.60)}: the panel and %cadet stats show the cost of '
        "the tokens the provider reported.",
    )

    @validate("prices")
    def _check_prices(self, proposal: Any) -> dict:
        from cadet_magic.metrics import check_prices

        try:
            check_prices(proposal["value"])
        except CadetError as e:
            raise TraitError(str(e)) from None
        return proposal["value"]

    @validate("max_attempts")
    def _check_max_attempts(self, proposal: Any) -> int:
        value = proposal["value"]
        if not 1 <= value <= 10:
            raise TraitError(
                f"AskMagic.max_attempts must be from 1 to 10 (got {value!r}), e.g. "
                "%config AskMagic.max_attempts = 3"
            )
        return value

    @validate("row_limit", "timeout", "model_timeout", "schema_budget")
    def _check_positive(self, proposal: Any) -> Any:
        value, name = proposal["value"], proposal["trait"].name
        if not value > 0:
            raise TraitError(
                f"AskMagic.{name} must be above 0 (got {value!r}), e.g. %config "
                f"AskMagic.{name} = {self.traits()[name].default_value!r}"
            )
        return value

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
            args = parse_argstring(self.ask, line)
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
        display = None
        try:
            if self.live:
                from cadet_magic.display.live import live_display

                display = live_display(question, model=model, con=args.con, namespace=ns)
            with using(self.db):
                options = AskOptions(
                    model=model,
                    max_attempts=(
                        args.max_attempts if args.max_attempts is not None else self.max_attempts
                    ),
                    row_limit=self.row_limit,
                    result_bytes=self.result_bytes,
                    timeout=self.timeout,
                    model_timeout=self.model_timeout,
                    fallback=self.fallback and not args.no_fallback,
                    fallback_memory=self.fallback_memory,
                    fallback_unconfined=self.fallback_unconfined,
                    schema_budget=self.schema_budget,
                    live=self.live,
                    api_key=self.api_key or None,
                    base_url=self.base_url or None,
                    temperature=self.temperature,
                )
                result = ask(
                    question,
                    con=con,
                    options=options,
                    on_event=display.update if display is not None else None,
                    namespace=ns,
                    metrics=self.metrics,
                )
        except UnsupportedConnectionError as e:
            if display is not None:
                display.close()
            raise UsageError(str(UnsupportedConnectionError(e.value, name=args.con))) from None
        except CadetError as e:
            if display is not None:
                display.close()
            raise UsageError(str(e)) from None
        except Exception as e:
            if display is not None:
                display.close()
            log.debug("%%ask failed", exc_info=True)
            first = (str(e).strip().splitlines() or [""])[0][:300]
            raise UsageError(
                f"{label} failed ({type(e).__name__}): {first}. Your connection is unchanged; "
                "check the options and the connection, then run the cell again."
            ) from None
        except KeyboardInterrupt as e:
            if display is not None:
                display.close()
            if isinstance(e, ModelCallInterrupted):
                raise UsageError(
                    "Interrupted: the model call was stopped (no query was running); your "
                    "connection is unchanged."
                ) from None
            raise UsageError(
                "Interrupted: the running query was cancelled; your connection is unchanged."
            ) from None
        if self.prices:
            from cadet_magic.metrics import cost_of, price_for

            result.cost = cost_of(result.tokens, price_for(result.model, self.prices))
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

    @line_magic
    def cadet(self, line: str) -> Any:
        """``%cadet stats`` shows this session's metrics; ``%cadet reset`` clears them."""
        command = line.strip() or "stats"
        if command == "stats":
            from cadet_magic.display.stats import StatsView

            return StatsView(self.metrics, self.prices)
        if command == "reset":
            self.metrics.reset()
            return Message("Session metrics cleared.")
        raise UsageError(f"%cadet: unknown command {command!r}; use 'stats' or 'reset'.")
