"""One run of the model's pandas code inside the worker's confined child.

What :mod:`cadet_magic.fallback.worker_main` calls once the child is confined: ``df`` read from
Arrow IPC, the code run in a fresh namespace with the safe builtins (``df``, ``pd``, ``np``;
imports only for the libraries' own lazy imports), printed output captured up to a cap, and the
answer written back as Arrow IPC (without pandas metadata) with a JSON status. The kernel's
side of the same Arrow conversion (:func:`cadet_magic.fallback.arrow.to_ipc`) uses
:func:`arrow_table` and :func:`ipc_bytes` from here.

Example:
    >>> out = CappedOutput(limit=5)
    >>> out.write("hello world")
    11
    >>> out.text()
    'hello\\n... (6 more characters not kept)'
"""

from __future__ import annotations

import sys
import time
from typing import Any

#: Packages whose lazy imports the code's builtins allow.
LIBRARIES = frozenset({"numpy", "pandas", "pyarrow", "dateutil", "pytz", "tzdata"})

#: Characters of printed output kept (the rest is counted, not kept).
OUTPUT_LIMIT = 10_000


class CappedOutput:
    """A text stream keeping the first ``limit`` characters written and counting the rest."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def write(self, text: Any) -> int:
        text = str(text)
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        out = "".join(self.parts)
        return out + (f"\n... ({self.dropped} more characters not kept)" if self.dropped else "")


def arrow_table(frame: Any, pa: Any) -> Any:
    """A DataFrame as an Arrow table without pandas metadata; columns Arrow cannot type
    (mixed objects) become text."""
    columns = {}
    for i, name in enumerate(frame.columns):
        col = frame.iloc[:, i]
        try:
            columns[str(name)] = pa.Array.from_pandas(col)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            columns[str(name)] = pa.array(col.astype(str).tolist(), type=pa.string())
    return pa.table(columns) if columns else pa.table({"result": pa.array([], pa.null())})


def ipc_bytes(table: Any, pa: Any) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def frame_from_ipc(payload: bytes, pa: Any) -> Any:
    # No Arrow thread pool: the worker forks, and a fork copies only the calling thread.
    options = pa.ipc.IpcReadOptions(use_threads=False)
    table = pa.ipc.open_stream(payload, options=options).read_all()
    return table.to_pandas(use_threads=False)


def error_status(kind: str, type_: str, message: str, line: int | None = None) -> dict:
    return {"ok": False, "kind": kind, "type": type_, "message": message, "line": line}


def run_child(request: dict, payload: bytes, confined: dict) -> tuple[dict, bytes]:
    """Runs the request's code (already confined); returns the status and the result bytes."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    output = CappedOutput(int(request.get("output_limit", OUTPUT_LIMIT)))
    sys.stdout = sys.stderr = output
    try:
        status, data = execute(request, payload, pd, np, pa)
    except MemoryError:
        status, data = error_status("memory", "MemoryError", "out of memory"), b""
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    status["output"] = output.text()
    status["confinement"] = confined
    return status, data


def library_import(filename: str) -> Any:
    """``__import__`` for the libraries' own lazy imports (numpy's C code imports submodules
    through the running code's builtins); other imports from the model's code stay refused,
    so its feedback matches the syntax-tree check (the boundary is the confinement)."""
    import builtins

    real = builtins.__import__

    def library_import(name: str, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1)
        top = name.partition(".")[0]
        if caller.f_code.co_filename == filename and top not in LIBRARIES:
            raise ImportError(f"imports are not allowed ({name}); pd and np are given")
        return real(name, *args, **kwargs)

    return library_import


def execute(request: dict, payload: bytes, pd: Any, np: Any, pa: Any) -> tuple[dict, bytes]:
    from cadet_magic.fallback.in_process import (
        FILENAME,
        _first_line,
        _user_line,
        safe_builtins,
        to_frame,
    )

    df = frame_from_ipc(payload, pa)
    del payload
    compiled = compile(request["code"], FILENAME, "exec", dont_inherit=True)
    builtins = safe_builtins()
    builtins["__import__"] = library_import(FILENAME)
    namespace: dict[str, Any] = {"__builtins__": builtins, "df": df, "pd": pd, "np": np}
    t0 = time.perf_counter()
    try:
        exec(compiled, namespace)
    except MemoryError as e:
        line = _user_line(e.__traceback__)
        return error_status("memory", "MemoryError", _first_line(str(e)), line), b""
    except BaseException as e:  # noqa: BLE001 - every failure of the code is data
        message = _first_line(str(e)) or "(no message)"
        return error_status("error", type(e).__name__, message, _user_line(e.__traceback__)), b""
    ran = time.perf_counter() - t0
    if "result" not in namespace:
        return error_status(
            "no_result", "NameError", "the code did not assign the answer to `result`"
        ), b""
    value = namespace.pop("result")
    namespace.clear()
    if not (isinstance(value, pd.DataFrame | pd.Series) or pd.api.types.is_scalar(value)):
        message = (
            f"`result` must be a DataFrame, Series or single value (got {type(value).__name__})"
        )
        return error_status("bad_result", "TypeError", message), b""
    try:
        frame = to_frame(value)
    except Exception as e:  # noqa: BLE001 - an unusable result is feedback for the model
        message = f"`result` must be a DataFrame, Series or single value ({e})"
        return error_status("bad_result", "TypeError", message), b""
    row_limit = request.get("row_limit")
    if isinstance(row_limit, int) and len(frame) > row_limit + 1:
        frame = frame.head(row_limit + 1)  # one more than shown: the kernel marks truncation
    data = ipc_bytes(arrow_table(frame, pa), pa)
    from cadet_magic.fallback.protocol import result_refusal, stream_shape

    refusal = result_refusal(stream_shape(data), row_limit, request.get("result_bytes"))
    if refusal:
        return error_status("bad_result", "ValueError", refusal), b""
    return {"ok": True, "seconds": ran}, data
