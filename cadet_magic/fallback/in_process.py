"""Running the fallback's pandas code in-process: checked, in a fresh namespace, within a time limit.

This in-process runner is the fallback's path only where there are no processes (JupyterLite's
Pyodide kernel, inside the browser's sandbox); everywhere else the agent's default runner,
:func:`run_fallback_code`, sends the code to the confined worker process of
:mod:`cadet_magic.fallback.worker`, which reuses this module's namespace, builtins, error shapes
and result conversion. Nothing here is a security boundary on its own.

The code runs only after :func:`~cadet_magic.fallback.code_check.check_code` accepted it, in a
namespace that holds ``df`` (a copy of the fallback SELECT's rows), ``pd``, ``np`` and a
small set of safe builtins; never the user's namespace. pandas and numpy are imported here,
lazily, when code actually runs, so the rest of the agent never needs them.

Time limit: a ``sys.settrace`` deadline checked on every call and on every line of the
model's code, which needs no threads or signals and so works in Pyodide
(``sys.platform == "emscripten"``). It stops any Python-level loop, also inside callbacks
(``df.apply(f)``), but not a single long C call, which nothing in-process can interrupt. Where
threads exist (CPython kernels) the code therefore runs in a worker thread that the caller stops
waiting for shortly after the deadline: a long numpy/pandas call that releases the GIL (as many
of their kernels do) then no longer holds the cell; the abandoned thread finishes on its own and
its result is discarded. A call that keeps the GIL is only stopped when it returns.

While the code runs (and only then), an audit hook refuses file writes, reads and directory
listings outside the Python installation, processes, sockets and database connections: a second
line of defence behind the syntax check, for what the check cannot see (pandas dispatching a
method name built at run time, ``df.agg("to_" + "csv", ...)``). The hook is installed once per
process (audit hooks cannot be removed) and does nothing outside the fallback's code
(:mod:`cadet_magic.fallback.audit`).

Errors come back as :class:`CodeError` (kind, exception type, message, line of the model's
code), never as a traceback.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"customer": ["ann", "bob", "ann"], "amount": [10.0, 32.5, 7.5]})
    >>> r = run_code("result = df.groupby('customer')['amount'].sum()", df, timeout=5)
    >>> r.ok, r.result.values.tolist()
    (True, [['ann', 17.5], ['bob', 32.5]])
    >>> str(run_code("x = 1\\nresult = 1 / 0", df, timeout=5).error)
    'ZeroDivisionError at line 2: division by zero'
"""

from __future__ import annotations

import builtins
import datetime
import decimal
import re
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

from cadet_magic.fallback.audit import ACTIVE, install_audit_hook
from cadet_magic.fallback.code_check import CodeCheck, check_code
from cadet_magic.text import first_line

#: The file name the model's code is compiled under (how its frames are recognised).
FILENAME = "<fallback>"

#: Whether the code may run in a worker thread. False on Pyodide (no threads); tests flip it.
USE_THREADS = sys.platform != "emscripten"

#: Seconds the caller keeps waiting for the worker thread after the deadline.
GRACE = 1.0

#: Builtins the code may use: values, containers, iteration, arithmetic, common errors.
SAFE_BUILTIN_NAMES = (
    "abs all any ascii bin bool bytes callable chr complex dict divmod enumerate filter float "
    "format frozenset hash hex int isinstance issubclass iter len list map max min next oct ord "
    "pow print range repr reversed round set slice sorted str sum tuple zip "
    "True False None NotImplemented Ellipsis "
    "Exception ArithmeticError AssertionError AttributeError IndexError KeyError LookupError "
    "NameError OverflowError RuntimeError StopIteration TypeError ValueError ZeroDivisionError"
).split()


def safe_builtins() -> dict[str, Any]:
    """A fresh dict of the builtins the fallback code may use.

    Example:
        >>> b = safe_builtins()
        >>> "len" in b, "open" in b, "__import__" in b, "getattr" in b
        (True, False, False, False)
    """
    return {name: getattr(builtins, name) for name in SAFE_BUILTIN_NAMES}


@dataclass(frozen=True)
class CodeError:
    """Why the code gave no answer.

    Attributes:
        kind: ``refused`` (the check), ``error`` (an exception), ``timeout``, ``no_result``
            (``result`` never assigned), ``bad_result`` (not convertible to a table) or
            ``unavailable`` (pandas cannot be imported here).
        type: the exception's type name (``ZeroDivisionError``, ``KeyError``, ...).
        message: its message, one line.
        line: the line of the model's code where it happened, when known.
    """

    kind: str
    type: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f" at line {self.line}" if self.line else ""
        return f"{self.type}{where}: {self.message}"


@dataclass(frozen=True)
class CodeRun:
    """What running the code gave: ``result`` (a DataFrame) when ``ok``, else ``error``;
    ``output`` is what the code printed (capped), when it ran in the isolated worker."""

    ok: bool
    result: Any = None
    value: Any = None
    error: CodeError | None = None
    check: CodeCheck | None = None
    elapsed: float = 0.0
    output: str = ""


class _Deadline(BaseException):
    """Raised by the tracer at the deadline (a BaseException: ``except Exception`` misses it)."""


# --- running ------------------------------------------------------------------------------


def _user_line(tb: Any) -> int | None:
    """The line of the innermost frame of the model's code in a traceback."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _first_line(text: str, width: int = 300) -> str:
    return first_line(text, width, mark="")


class _Execution:
    """One execution of compiled code under a deadline; the outcome lands on the instance."""

    def __init__(self, code: Any, namespace: dict, timeout: float) -> None:
        self.code = code
        self.namespace = namespace
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.line: int | None = None
        self.error: CodeError | None = None
        self.finished = False

    def tracer(self, frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > self.deadline:
            raise _Deadline
        if frame.f_code.co_filename == FILENAME:
            return self.local_tracer
        return None

    def local_tracer(self, frame: Any, event: str, arg: Any) -> Any:
        self.line = frame.f_lineno
        if time.monotonic() > self.deadline:
            raise _Deadline
        return self.local_tracer

    def run(self) -> None:
        """Executes the code in this thread, under the tracer and the audit hook."""
        token = ACTIVE.set(True)
        previous = sys.gettrace()
        sys.settrace(self.tracer)
        try:
            exec(self.code, self.namespace)
        except _Deadline:
            self.error = self.timeout_error()
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - every failure of the code is data
            self.error = CodeError(
                "error",
                type(e).__name__,
                _first_line(str(e)) or "(no message)",
                _user_line(e.__traceback__),
            )
        finally:
            sys.settrace(previous)
            ACTIVE.reset(token)
            self.finished = True

    def timeout_error(self) -> CodeError:
        return CodeError(
            "timeout",
            "TimeoutError",
            f"the code was stopped after {self.timeout:g} s (time limit)",
            self.line,
        )


def execute_checked(code: Any, namespace: dict, timeout: float) -> CodeError | None:
    """Runs compiled, already checked code in ``namespace`` under the deadline.

    The layer below :func:`run_code`, needing neither pandas nor numpy (call
    :func:`install_audit_hook` first for the run-time refusals): compile the code
    under :data:`FILENAME` so its lines are traced and reported. On Pyodide (no threads) it
    runs in the calling thread; elsewhere in a worker thread waited for until the deadline
    plus :data:`GRACE`.

    Example:
        >>> code = compile("n = 0\\nwhile True:\\n    n += 1", FILENAME, "exec")
        >>> execute_checked(code, {"__builtins__": safe_builtins()}, 0.2).kind
        'timeout'
    """
    execution = _Execution(code, namespace, timeout)
    if not USE_THREADS:
        execution.run()
        return execution.error
    import threading

    worker = threading.Thread(target=execution.run, name="cadet-fallback", daemon=True)
    try:
        worker.start()
    except RuntimeError:  # no thread can be started here: the tracer alone keeps the limit
        execution.run()
        return execution.error
    try:
        worker.join(timeout + GRACE)
    except KeyboardInterrupt:
        execution.deadline = float("-inf")  # the worker stops at its next line or call
        raise
    if not execution.finished:
        return CodeError(
            "timeout",
            "TimeoutError",
            f"the code was still running after {timeout:g} s (time limit) inside a long "
            "pandas/numpy call; it was abandoned",
            execution.line,
        )
    return execution.error


def to_frame(value: Any) -> Any:
    """The code's ``result`` as a DataFrame: frames as they are, a Series or index as columns,
    a single value as a one-cell table (column ``result``); a meaningful index becomes columns.

    Raises:
        TypeError: for values that are no table, series or single value (functions, modules).

    Example:
        >>> to_frame(3).values.tolist(), list(to_frame(3).columns)
        ([[3]], ['result'])
    """
    import numpy as np
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        frame = value
    elif isinstance(value, pd.Series):
        frame = value.to_frame(name=value.name if value.name is not None else "result")
    elif isinstance(value, pd.Index):
        frame = value.to_frame(index=False, name=value.name if value.name is not None else "result")
    elif isinstance(value, np.ndarray):
        frame = pd.DataFrame(value) if value.ndim == 2 else pd.DataFrame({"result": value.ravel()})
    elif isinstance(value, dict):
        scalars = all(np.ndim(v) == 0 for v in value.values())
        frame = pd.DataFrame([value]) if scalars else pd.DataFrame(value)
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if items and all(isinstance(i, (dict, tuple)) for i in items):
            frame = pd.DataFrame(items)
        else:
            frame = pd.DataFrame({"result": items})
    elif value is None or pd.api.types.is_scalar(value):
        frame = pd.DataFrame({"result": [value]})
    else:
        raise TypeError(f"got {type(value).__name__}")
    return _tidy(frame, pd)


def _tidy(frame: Any, pd: Any) -> Any:
    index = frame.index
    named = any(n is not None for n in index.names)
    if named or isinstance(index, pd.MultiIndex) or not pd.api.types.is_integer_dtype(index):
        try:
            frame = frame.reset_index()
        except ValueError:  # a column already has the index's name
            frame = frame.reset_index(drop=True)
    elif not isinstance(index, pd.RangeIndex) or index.start != 0 or index.step != 1:
        frame = frame.reset_index(drop=True)
    if isinstance(frame.columns, pd.MultiIndex):
        frame.columns = ["_".join(str(p) for p in c if str(p)) for c in frame.columns]
    else:
        frame.columns = [str(c) for c in frame.columns]
    return frame


#: Text that is a date, or a date and time, as engines write them (ISO 8601).
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?")


def make_frame(columns: list[str], rows: list[tuple]) -> Any:
    """The fallback SELECT's rows as the DataFrame ``df`` (imports pandas here, lazily), each
    column in the dtype pandas computes with, the same on every engine: decimals (DuckDB,
    PostgreSQL) as floats, dates and times (DuckDB's ``date`` objects, SQLite's ISO text) as
    ``datetime64``; any other column as the engine gave it.

    Example:
        >>> import datetime, decimal
        >>> df = make_frame(["d", "t", "x", "s"], [(datetime.date(2024, 1, 2), "2024-01-03",
        ...                                        decimal.Decimal("1.5"), "a")])
        >>> [t.kind for t in df.dtypes]  # datetime, datetime, float, text
        ['M', 'M', 'f', 'O']

    Raises:
        ImportError: when pandas is not installed in this kernel.
    """
    import pandas as pd

    frame = pd.DataFrame.from_records(list(rows), columns=list(columns))
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        if not (pd.api.types.is_object_dtype(column) or pd.api.types.is_string_dtype(column)):
            continue
        values = column.dropna()
        if values.empty:
            continue
        if all(isinstance(v, decimal.Decimal) for v in values):
            frame.isetitem(i, column.astype(float))
        elif all(isinstance(v, datetime.date) for v in values) or all(
            isinstance(v, str) and _ISO_DATE.fullmatch(v) for v in values
        ):
            try:
                frame.isetitem(i, pd.to_datetime(column))
            except (ValueError, TypeError, OverflowError):  # left as the engine gave it
                pass
    return frame


def refused(verdict: CodeCheck, started: float) -> CodeRun:
    """The run of code the check refused: nothing ran; the check's issues are the error."""
    return CodeRun(
        ok=False,
        error=CodeError("refused", "CodeRefused", "; ".join(str(i) for i in verdict.issues)),
        check=verdict,
        elapsed=time.perf_counter() - started,
    )


def run_code(code: str, df: Any, *, timeout: float = 30.0) -> CodeRun:
    """Checks ``code`` and runs it on a copy of ``df``; the answer is what it assigns to ``result``.

    Args:
        code: pandas code that computes the answer from ``df`` and assigns it to ``result``.
        df: the data (a pandas DataFrame).
        timeout: seconds the code may run.

    Returns:
        A :class:`CodeRun`: ``result`` is the answer as a DataFrame (a Series, index or single
        value converted, see :func:`to_frame`), ``value`` what the code assigned; or ``error``.

    Example:
        >>> import pandas as pd
        >>> r = run_code("result = len(df)", pd.DataFrame({"a": [1, 2]}), timeout=5)
        >>> r.ok, r.result.to_dict("records")
        (True, [{'result': 2}])
        >>> run_code("import os", pd.DataFrame(), timeout=5).error.kind
        'refused'
    """
    t0 = time.perf_counter()
    verdict = check_code(code)
    if not verdict.ok:
        return refused(verdict, t0)
    try:
        import numpy as np
        import pandas as pd
    except ImportError as e:
        return CodeRun(
            ok=False,
            error=CodeError(
                "unavailable",
                "ImportError",
                f"pandas/numpy cannot be imported in this kernel ({e}); the fallback cannot "
                "run pandas code here",
            ),
            check=verdict,
            elapsed=time.perf_counter() - t0,
        )
    install_audit_hook()
    compiled = compile(code, FILENAME, "exec", dont_inherit=True)
    data = df.copy() if hasattr(df, "copy") else df
    namespace: dict[str, Any] = {"__builtins__": safe_builtins(), "df": data, "pd": pd, "np": np}
    error = execute_checked(compiled, namespace, timeout)
    if error is not None:
        from cadet_magic.fallback.protocol import code_lines, reported_line

        error = replace(error, line=reported_line(error.line, code_lines(code)))
        return CodeRun(ok=False, error=error, check=verdict, elapsed=time.perf_counter() - t0)
    if "result" not in namespace:
        return CodeRun(
            ok=False,
            error=CodeError(
                "no_result", "NameError", "the code did not assign the answer to `result`"
            ),
            check=verdict,
            elapsed=time.perf_counter() - t0,
        )
    value = namespace["result"]
    try:
        frame = to_frame(value)
    except Exception as e:  # noqa: BLE001 - an unusable result is feedback for the model
        return CodeRun(
            ok=False,
            value=value,
            error=CodeError(
                "bad_result",
                "TypeError",
                f"`result` must be a DataFrame, Series, list or single value ({e})",
            ),
            check=verdict,
            elapsed=time.perf_counter() - t0,
        )
    return CodeRun(
        ok=True, result=frame, value=value, check=verdict, elapsed=time.perf_counter() - t0
    )
