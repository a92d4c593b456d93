"""The Python API: ``ask(question, con=..., model=...)`` (no IPython needed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cadet_magic.display  # noqa: F401 - registers the result's text and HTML renderers
from cadet_magic.agent.run import Event, run_agent
from cadet_magic.db.connect import resolve_runner
from cadet_magic.llm import is_scripted, load_model, model_label
from cadet_magic.metrics import SESSION, SessionMetrics
from cadet_magic.options import MAX_ATTEMPTS_RANGE, AskOptions, check_options

__all__ = ["MAX_ATTEMPTS_RANGE", "UNSET", "AskOptions", "ask", "check_options", "to_dataframe"]
from cadet_magic.result import AskResult


class _Unset:
    """The default of :func:`ask`'s option keywords: "take it from ``options``"."""

    def __repr__(self) -> str:
        return "<from options>"


#: Marks an option keyword that was not given.
UNSET: Any = _Unset()


def ask(
    question: str,
    con: Any = None,
    model: Any = UNSET,
    max_attempts: int = UNSET,
    *,
    options: AskOptions | None = None,
    row_limit: int = UNSET,
    result_bytes: int = UNSET,
    timeout: float = UNSET,
    fallback: bool = UNSET,
    schema_budget: int | None = UNSET,
    on_event: Callable[[Event], None] | None = None,
    namespace: dict | None = None,
    code_runner: Callable[..., Any] | None = None,
    model_timeout: float | None = UNSET,
    fallback_memory: int = UNSET,
    fallback_unconfined: bool = UNSET,
    api_key: str | None = UNSET,
    base_url: str | None = UNSET,
    metrics: SessionMetrics | None = None,
    temperature: float | None = UNSET,
    feedback: str = UNSET,
) -> AskResult:
    """Answers ``question`` from the database behind ``con`` with SQL the model writes.

    Every option lives in :class:`~cadet_magic.options.AskOptions` (defaults there): pass one
    as ``options=``, or the options themselves as keywords (they override ``options``).

    Args:
        question: the question in plain language.
        con: a SQLAlchemy engine/connection, a duckdb or sqlite3 connection, or None for
            jupysql's current connection.
        model: a chat model, an ``init_chat_model`` spec such as ``"openai:gpt-4o-mini"``,
            or None for the ``CADET_MODEL`` environment variable.
        max_attempts: SQL attempts at most (each retry gets targeted feedback).
        row_limit: rows fetched at most; ``result.truncated`` says whether more existed.
        result_bytes: bytes of values fetched at most (default 64 MiB); past it the answer
            is truncated and ``result.truncation_note`` says so.
        timeout: seconds a query may run before the engine is stopped.
        fallback: whether to fall back to a simple SELECT plus pandas when SQL keeps failing
            (every SQL attempt failed on an error a rewrite could fix); ``result.answered_by``
            says ``"fallback"`` when it answered, ``result.fallback`` holds its SQL, code,
            result and attempts.
        schema_budget: characters of schema in the prompt; large schemas are linked to the
            question's tables within it (None: the whole schema).
        options: an :class:`~cadet_magic.options.AskOptions` (default: its defaults).
        on_event: called after every step, for live displays.
        namespace: the notebook's variables, for a model given by variable name.
        code_runner: runs the fallback's pandas code as ``code_runner(code, df, timeout=...)``
            (default :func:`cadet_magic.fallback.default.run_fallback_code`: checked, then run in a
            confined worker process; in-process on Pyodide).
        fallback_memory: bytes the fallback's pandas code may allocate in its worker (default
            2 GiB); more is a ``code_memory`` failure, the kernel's memory does not grow.
        fallback_unconfined: run the fallback's code even where it cannot be confined (a Linux
            kernel without Landlock, macOS, Windows; default False: there it does not run).
        model_timeout: seconds each model call may take: given to the provider client as its
            own timeout where a spec is loaded here, and enforced by waiting at most that long
            (None: no limit of ours).
        api_key, base_url: for a model given by spec (default: the provider's environment
            variables); ``base_url`` names any OpenAI-compatible server.
        temperature: the sampling temperature a model given by spec is loaded with (None: the
            provider's default; 0 for repeatable replies).
        feedback: what a retry tells the model: ``"targeted"`` (default, the diagnosis) or
            ``"raw"`` (only the error text, a baseline for evaluations).
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
    given = {
        "model": model,
        "max_attempts": max_attempts,
        "row_limit": row_limit,
        "result_bytes": result_bytes,
        "timeout": timeout,
        "fallback": fallback,
        "schema_budget": schema_budget,
        "model_timeout": model_timeout,
        "fallback_memory": fallback_memory,
        "fallback_unconfined": fallback_unconfined,
        "api_key": api_key,
        "base_url": base_url,
        "temperature": temperature,
        "feedback": feedback,
    }
    opts = (options or AskOptions()).replace(**{k: v for k, v in given.items() if v is not UNSET})
    opts.check()
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
    result.df = to_dataframe(result)
    (metrics if metrics is not None else SESSION).record(result)
    return result


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
