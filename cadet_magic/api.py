"""The Python API: ``ask(question, con=..., model=...)`` (no IPython needed)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import cadet_magic.display  # noqa: F401 - registers the result's text and HTML renderers
from cadet_magic.agent.run import Event, run_agent
from cadet_magic.db.connect import resolve_runner
from cadet_magic.llm import is_scripted, load_model, model_label
from cadet_magic.metrics import SESSION, SessionMetrics
from cadet_magic.options import MAX_ATTEMPTS_RANGE, UNSET, AskOptions, check_options, merged
from cadet_magic.result import AskResult

__all__ = ["MAX_ATTEMPTS_RANGE", "UNSET", "AskOptions", "ask", "check_options", "to_dataframe"]


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
            :func:`cadet_magic.fallback.default.run_fallback_code`: checked, then run in a
            confined worker process; in-process on Pyodide).
        metrics: where the run is counted (default :data:`cadet_magic.metrics.SESSION`, the
            process's; the ``%%ask`` magic passes the one it holds).

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
    chat_model = load_model(
        opts.model,
        namespace,
        api_key=opts.api_key,
        base_url=opts.base_url,
        timeout=opts.model_timeout,
        temperature=opts.temperature,
    )
    runner = resolve_runner(con)
    result = run_agent(
        question,
        model=chat_model,
        runner=runner,
        options=opts,
        code_runner=code_runner,
        on_event=on_event,
        model_label=model_label(chat_model, opts.model if isinstance(opts.model, str) else None),
        scripted=is_scripted(chat_model),
    )
    if opts.prices:
        from cadet_magic.metrics import cost_of, price_for

        result.cost = cost_of(result.tokens, price_for(result.model, opts.prices))
    result.df = to_dataframe(result)
    (metrics if metrics is not None else SESSION).record(result)
    return result


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
    try:
        import pandas as pd
    except ImportError:  # e.g. a Pyodide kernel without pandas
        return None

    return pd.DataFrame.from_records(result.rows, columns=result.columns)
