"""The Python API: ``ask(question, con=..., model=...)`` (no IPython needed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cadet_magic.agent.run import Event, run_agent
from cadet_magic.db.base import RESULT_BYTES
from cadet_magic.db.connect import resolve_runner
from cadet_magic.errors import ConfigurationError
from cadet_magic.llm import is_scripted, load_model, model_label
from cadet_magic.metrics import SESSION
from cadet_magic.result import AskResult


def ask(
    question: str,
    con: Any = None,
    model: Any = None,
    max_attempts: int = 3,
    *,
    row_limit: int = 1000,
    result_bytes: int = RESULT_BYTES,
    timeout: float = 30.0,
    fallback: bool = True,
    schema_budget: int | None = 6000,
    on_event: Callable[[Event], None] | None = None,
    namespace: dict | None = None,
    code_runner: Callable[..., Any] | None = None,
    model_timeout: float | None = 120.0,
    fallback_memory: int = 2 << 30,
    api_key: str | None = None,
    base_url: str | None = None,
) -> AskResult:
    """Answers ``question`` from the database behind ``con`` with SQL the model writes.

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
        on_event: called after every step, for live displays.
        namespace: the notebook's variables, for a model given by variable name.
        code_runner: runs the fallback's pandas code as ``code_runner(code, df, timeout=...)``
            (default :func:`cadet_magic.fallback.run.run_fallback_code`: checked, then run in a
            confined worker process; in-process on Pyodide).
        fallback_memory: bytes the fallback's pandas code may allocate in its worker (default
            2 GiB); more is a ``code_memory`` failure, the kernel's memory does not grow.
        model_timeout: seconds each model call may take: given to the provider client as its
            own timeout where a spec is loaded here, and enforced by waiting at most that long
            (None: no limit of ours).
        api_key, base_url: for a model given by spec (default: the provider's environment
            variables); ``base_url`` names any OpenAI-compatible server.

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
    check_options(
        max_attempts=max_attempts,
        row_limit=row_limit,
        timeout=timeout,
        model_timeout=model_timeout,
        schema_budget=schema_budget,
    )
    chat_model = load_model(
        model, namespace, api_key=api_key, base_url=base_url, timeout=model_timeout
    )
    runner = resolve_runner(con)
    result = run_agent(
        question,
        model=chat_model,
        runner=runner,
        max_attempts=max_attempts,
        row_limit=row_limit,
        result_bytes=result_bytes,
        timeout=timeout,
        fallback=fallback,
        code_runner=code_runner,
        fallback_memory=fallback_memory,
        schema_budget=schema_budget,
        on_event=on_event,
        model_label=model_label(chat_model, model if isinstance(model, str) else None),
        scripted=is_scripted(chat_model),
        model_timeout=model_timeout,
    )
    result.df = to_dataframe(result)
    SESSION.record(result)
    return result


#: The range ``max_attempts`` must lie in.
MAX_ATTEMPTS_RANGE = (1, 10)


def check_options(**options: Any) -> None:
    """Raises :class:`ConfigurationError` (one line saying what to do) for an option out of range:
    ``max_attempts`` outside 1..10; ``row_limit``, ``timeout``, ``model_timeout`` or
    ``schema_budget`` zero or negative (None is allowed for the last two).

    Example:
        >>> check_options(max_attempts=3, row_limit=10, timeout=1.5)
        >>> check_options(row_limit=0)
        Traceback (most recent call last):
        ...
        cadet_magic.errors.ConfigurationError: row_limit must be above 0 (got 0), e.g. %config AskMagic.row_limit = 1000.
    """
    low, high = MAX_ATTEMPTS_RANGE
    examples = {"row_limit": 1000, "timeout": 30, "model_timeout": 120, "schema_budget": 6000}
    for name, value in options.items():
        if value is None and name in ("model_timeout", "schema_budget"):
            continue
        if name == "max_attempts":
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigurationError(
                    f"max_attempts must be a whole number from {low} to {high} (got {value!r}), "
                    "e.g. --max-attempts 3."
                )
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or value != value or value <= 0:
            raise ConfigurationError(
                f"{name} must be above 0 (got {value!r}), e.g. %config AskMagic.{name} = "
                f"{examples.get(name, 1)}."
            )


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
