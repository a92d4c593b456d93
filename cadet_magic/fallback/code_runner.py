"""The agent's default code runner: where the fallback's pandas code runs.

Everywhere but Pyodide that is the confined worker process (:mod:`cadet_magic.fallback.worker`);
in Pyodide, which has no processes, :func:`cadet_magic.fallback.in_process.run_code` in the kernel.
This module sits above both (they never import it), so the package has no import cycle.

Example:
    >>> callable(run_fallback_code.prepare), ISOLATED == (sys.platform != "emscripten")
    (True, True)
"""

from __future__ import annotations

import sys
from typing import Any

from cadet_magic.fallback.in_process import CodeRun, run_code

#: Whether the fallback's code runs in an isolated worker process (everywhere but Pyodide,
#: which has no processes).
ISOLATED = sys.platform != "emscripten"


def run_fallback_code(
    code: str,
    df: Any,
    *,
    timeout: float = 30.0,
    memory: int | None = None,
    unconfined: bool = False,
    row_limit: int | None = None,
    result_bytes: int | None = None,
) -> CodeRun:
    """The agent's default code runner: the confined worker process
    (:func:`cadet_magic.fallback.worker.run_isolated`; where it cannot be confined, only with
    ``unconfined``) where processes exist, else (Pyodide) :func:`run_code` in the kernel, in
    the browser's sandbox, where ``memory`` is not enforced.
    """
    if not ISOLATED:
        return run_code(code, df, timeout=timeout)
    from cadet_magic.fallback.worker import run_isolated

    return run_isolated(
        code,
        df,
        timeout=timeout,
        memory=memory,
        unconfined=unconfined,
        row_limit=row_limit,
        result_bytes=result_bytes,
    )


def _prepare() -> None:
    """Starts the isolated worker in the background (the agent calls this when an SQL attempt
    failed with the fallback allowed, and when it enters the fallback, so the worker's start
    overlaps the model's replies); not without pandas and pyarrow here, where the fallback
    cannot run anyway."""
    if not ISOLATED:
        return
    import importlib.util

    try:
        if not all(importlib.util.find_spec(name) for name in ("pandas", "pyarrow")):
            return
    except (ImportError, ValueError):
        return
    from cadet_magic.fallback.worker import prestart

    prestart()


run_fallback_code.prepare = _prepare  # type: ignore[attr-defined]
