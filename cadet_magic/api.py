"""The Python API: ``ask(question, con=..., model=...)`` (no IPython needed)."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable
from typing import Any

from cadet_magic.agent.inputs import Recorded, RunInputs
from cadet_magic.agent.run import Event, run_agent
from cadet_magic.conversation import FollowUp, follow_up_of, follow_up_text
from cadet_magic.db.connect import resolve_runner
from cadet_magic.errors import ConfigurationError
from cadet_magic.llm import is_scripted, load_model, model_label
from cadet_magic.llm.sampling import sampler_for
from cadet_magic.metrics import SESSION, SessionMetrics
from cadet_magic.options import MAX_ATTEMPTS_RANGE, UNSET, AskOptions, check_options, merged
from cadet_magic.result import AskResult

__all__ = [
    "MAX_ATTEMPTS_RANGE",
    "UNSET",
    "AskOptions",
    "ask",
    "check_options",
    "rerun",
    "to_dataframe",
]


def ask(
    question: str,
    con: Any = None,
    model: Any = UNSET,
    max_attempts: int = UNSET,
    *,
    options: AskOptions | None = None,
    on_event: Callable[[Event], None] | None = None,
    namespace: dict | None = None,
    code_runner: Callable[..., Any] | None = None,
    metrics: SessionMetrics | None = None,
    follow: Any = None,
    number: int | None = None,
    **option_values: Any,
) -> AskResult:
    """Answers ``question`` from the database behind ``con`` with SQL the model writes.

    Every option of :class:`~cadet_magic.options.AskOptions` (documented and defaulted
    there, once) is also a keyword here: pass an ``AskOptions`` as ``options=``, or the options
    themselves as keywords (``row_limit=10``, ``timeout=5``, ``fallback=False`` ...), which
    override ``options``; an unknown one is a ``TypeError``.

    Args:
        question: the question in plain language.
        con: a SQLAlchemy engine/connection, a duckdb or sqlite3 connection, or None for
            jupysql's current connection.
        model, max_attempts: the two options also taken by position.
        options: an :class:`~cadet_magic.options.AskOptions` (default: its defaults).
        on_event: called after every step, for live displays.
        namespace: the notebook's variables, for a model given by variable name.
        code_runner: runs the fallback's pandas code as ``code_runner(code, df, timeout=...,
            memory=..., unconfined=..., row_limit=..., result_bytes=...)`` (default
            :func:`cadet_magic.fallback.code_runner.run_fallback_code`: checked, then run in a
            confined worker process; in-process on Pyodide).
        metrics: where the run is counted (default :data:`cadet_magic.metrics.SESSION`, the
            process's; the ``%%ask`` magic passes the one it holds).
        follow: an earlier :class:`AskResult` (or a
            :class:`~cadet_magic.conversation.FollowUp`) this question builds on: its question,
            final SQL and column names (never its rows) go into the prompt.
        number: the number the session gives the answer when it has SQL (the magic's
            ``--follow N``; recorded in its provenance); None: not numbered.

    Returns:
        An :class:`AskResult`; ``.df`` holds the answer as a DataFrame when pandas exists.

    Example:
        >>> import sqlite3, cadet_magic
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.execute("CREATE TABLE t (x INT)")
        >>> m = cadet_magic.llm.ScriptedModel({"How many rows?": ["SELECT count(*) AS n FROM t"]})
        >>> r = cadet_magic.ask("How many rows?", con=con, model=m)
        >>> r.ok, r.rows, r.scripted
        (True, [(0,)], True)
    """
    opts = merged(options, model=model, max_attempts=max_attempts, **option_values)
    if opts.rerun:
        raise ConfigurationError(
            "rerun=True needs the SQL recorded for the question: call "
            "cadet_magic.rerun(result, con) on the earlier result, or use %%ask --rerun in "
            "the notebook that recorded it."
        )
    chat_model = load_model(
        opts.model,
        namespace,
        api_key=opts.api_key,
        base_url=opts.base_url,
        timeout=opts.model_timeout,
        temperature=opts.temperature,
    )
    runner = resolve_runner(con)
    followed = as_follow_up(follow)
    context = prompt_context(question, runner, opts, followed)
    result = run_agent(
        question,
        model=chat_model,
        runner=runner,
        options=opts,
        code_runner=code_runner,
        on_event=on_event,
        inputs=context.inputs(opts, chat_model, number),
        schema=context.schema,
        sampler=sampler_for(chat_model) if (opts.candidates or 2) > 1 else None,
    )
    result = confirm(result, context)
    return _finish(result, opts, metrics)


def confirm(result: AskResult, context: PromptContext) -> AskResult:
    """``result`` marked (with its provenance) when it reproduces the result of an example the
    user confirmed, given to the prompt; else ``result`` itself."""
    found = context.confirmed(result)
    if found is None:
        return result
    provenance = {
        **result.provenance,
        "confirmed": {"date": found.date, "question": found.question},
    }
    return dataclasses.replace(result, confirmed=found, provenance=provenance)


def _finish(
    result: AskResult, opts: AskOptions, metrics: SessionMetrics | None, count: bool = True
) -> AskResult:
    """The result with what only the edge has, its cost and DataFrame, and (unless ``count``
    is off) its count in the session's metrics; in an IPython shell, shown as the extension
    shows it (:func:`shown_in_shell`)."""
    shown_in_shell()
    cost = result.cost
    if opts.prices:
        from cadet_magic.metrics import cost_of, price_for

        cost = cost_of(result.tokens, price_for(result.model, opts.prices))
    result = dataclasses.replace(result, cost=cost, df=to_dataframe(result))
    if count:
        (metrics if metrics is not None else SESSION).record(result)
    return result


def shown_in_shell() -> None:
    """When IPython runs a shell (``ask()`` or ``rerun()`` called in a notebook without the
    extension loaded), lets it display a result with the display package's text and HTML
    (:func:`cadet_magic.display.register_formatters`); outside IPython, nothing (IPython is not
    imported for it)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)()
    if shell is None:
        return
    from cadet_magic.display import register_formatters

    register_formatters(shell, with_provenance=False)


def as_follow_up(follow: Any) -> FollowUp | None:
    """``follow`` (an earlier result, a :class:`FollowUp` or None) as a :class:`FollowUp`."""
    if follow is None or isinstance(follow, FollowUp):
        return follow
    if not getattr(follow, "final_sql", None):
        raise ConfigurationError(
            "follow: the earlier result has no SQL to build on (it found no answer); ask "
            "the question again without follow."
        )
    return follow_up_of(follow)


class PromptContext:
    """What goes into the prompt besides the question and the schema: a follow-up's previous
    answer and the kept examples (read with the schema, whose cache the run then uses)."""

    def __init__(
        self,
        schema: Any,
        followed: FollowUp | None,
        examples: Any = None,
        share: str = "samples",
    ) -> None:
        self.schema = schema
        self.followed = followed
        self.examples = examples
        self.share = share

    @property
    def preamble(self) -> str:
        parts = [] if self.examples is None else [self.examples.text]
        if self.followed is not None:
            parts.append(follow_up_text(self.followed, self.share, self.schema))
        return "\n\n".join(p for p in parts if p)

    def inputs(self, opts: AskOptions, chat_model: Any, number: int | None = None) -> RunInputs:
        """The run's inputs: the model's label, the preamble and what the provenance records
        of them (the model spec, what was followed, the examples used), the answer's
        ``number``."""
        spec = opts.model if isinstance(opts.model, str) else None
        return RunInputs(
            model_label=model_label(chat_model, spec),
            scripted=is_scripted(chat_model),
            preamble=self.preamble,
            model_spec=spec,
            followed=self.followed,
            examples=None if self.examples is None else self.examples.provenance(),
            number=number,
        )

    def confirmed(self, result: AskResult) -> Any:
        """The example given to the prompt that the user confirmed and whose result
        ``result`` reproduces (:func:`cadet_magic.kept_answers.confirmed_by`), or None."""
        if self.examples is None or not self.examples.used:
            return None
        from cadet_magic.kept_answers import confirmed_by

        return confirmed_by(result, self.examples.used)


def prompt_context(
    question: str, runner: Any, opts: AskOptions, followed: FollowUp | None
) -> PromptContext:
    """The schema (None when it cannot be read: the run meets and diagnoses the same error),
    the kept examples similar to ``question`` and the follow-up."""
    try:
        schema = runner.schema()
    except Exception:  # noqa: BLE001 - the run reads it again and says what failed
        return PromptContext(None, followed, share=opts.share)
    examples = None
    if opts.examples_path:
        from cadet_magic.kept_answers import select_examples

        examples = select_examples(question, opts.examples_path, runner, schema)
    return PromptContext(schema, followed, examples, opts.share)


def rerun(
    result: AskResult,
    con: Any = None,
    *,
    on_event: Callable[[Event], None] | None = None,
    code_runner: Callable[..., Any] | None = None,
    options: AskOptions | None = None,
    **option_values: Any,
) -> AskResult:
    """Re-executes ``result``'s answer on ``con`` (default: jupysql's current connection)
    through the same safety check and read-only runner (a fallback answer: its SELECT and
    pandas code, through the fallback's checks and confined runner), without calling a model:
    a new result, whose ``message`` says in one line when the SQL no longer runs (the schema
    changed) and that ``%%ask`` asks the model again. ``options`` (or keywords such as
    ``row_limit=10``) are :class:`~cadet_magic.options.AskOptions`.

    Example:
        >>> import sqlite3, cadet_magic
        >>> con = sqlite3.connect(":memory:")
        >>> _ = con.execute("CREATE TABLE t (x INT)")
        >>> m = cadet_magic.llm.ScriptedModel({"How many rows?": ["SELECT count(*) AS n FROM t"]})
        >>> first = cadet_magic.ask("How many rows?", con=con, model=m)
        >>> _ = con.execute("INSERT INTO t VALUES (1)")
        >>> again = rerun(first, con)
        >>> again.rows, again.model_calls
        ([(1,)], 0)
    """
    fallback = result.fallback
    code = fallback.code if result.answered_by == "fallback" and fallback is not None else None
    return rerun_recorded(
        result.question,
        result.final_sql,
        con,
        code=code,
        recorded=dict(result.provenance),
        on_event=on_event,
        code_runner=code_runner,
        options=options,
        **option_values,
    )


def rerun_recorded(
    question: str,
    sql: str | None,
    con: Any = None,
    *,
    code: str | None = None,
    recorded: dict | None = None,
    number: int | None = None,
    on_event: Callable[[Event], None] | None = None,
    code_runner: Callable[..., Any] | None = None,
    options: AskOptions | None = None,
    **option_values: Any,
) -> AskResult:
    """Re-executes ``sql``, recorded for ``question``, through the same check, read-only
    runner and result check as a model's SQL, with no model call (see :func:`rerun`; the
    magic's ``--rerun`` finds ``sql`` in the notebook); with ``code`` (a fallback answer's pandas code), the SELECT and
    the code through the fallback's checks and code runner. When it no longer runs, ``message``
    is one line saying so. A rerun is not counted in the session's metrics (``%cadet stats``
    measures the model's answers)."""
    opts = merged(options, **option_values).replace(rerun=False)
    if not sql:
        raise ConfigurationError(
            f"No SQL is recorded for {question!r}: run %%ask without --rerun to ask the model."
        )
    runner = resolve_runner(con)
    result = run_agent(
        question,
        model=None,
        runner=runner,
        options=opts,
        on_event=on_event,
        inputs=RunInputs(
            model_label="rerun (no model)",
            number=number,
            rerun=Recorded(sql, code, dict(recorded or {})),
        ),
        code_runner=code_runner,
    )
    return _finish(result, opts, None, count=False)


def _signature() -> inspect.Signature:
    """``ask``'s signature with every option as a keyword (what ``help(ask)`` shows)."""
    params = list(inspect.signature(ask).parameters.values())
    options = [p for p in params if p.kind is p.VAR_KEYWORD]
    named = {p.name for p in params}
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=UNSET)
        for name in AskOptions.names()
        if name not in named
    ]
    fixed = [p for p in params if p not in options]
    return inspect.Signature([*fixed, *extra], return_annotation=AskResult)


ask.__signature__ = _signature()  # type: ignore[attr-defined]


def to_dataframe(result: AskResult) -> Any:
    """The answer as a pandas DataFrame (None without pandas or without an answer); a fallback
    answer is a DataFrame already."""
    if not result.ok:
        return None
    if result.df is not None:
        return result.df
    from cadet_magic.lite import installed

    if not installed("pandas"):  # e.g. a Pyodide kernel without pandas
        return None
    try:
        import pandas as pd
    except ImportError:
        return None

    return pd.DataFrame.from_records(result.rows, columns=result.columns)
