"""Running the fallback's pandas code outside the kernel, in a confined worker process.

The kernel side of :mod:`cadet_magic.fallback.worker_main`; the process itself is started and
kept in :mod:`cadet_magic.fallback.warm`. One warm worker per kernel is started on first use
(``python -I``: no environment variables of the kernel beyond what Python needs, an empty
temporary working folder, one Unix socket as stdin/stdout); it imports pandas, numpy and
pyarrow once. On Linux it is a template that never receives data: per run the kernel makes two
pipes, passes one end of each to the template, which forks a child holding only those; the
kernel writes the request and ``df`` into the child's pipe and reads the result from the other.
The child confines itself with resource limits, Landlock, a capability drop
and seccomp-bpf before it reads ``df`` (:mod:`cadet_magic.fallback.confine`).

Where that confinement is not available (a Linux kernel without Landlock, the bindings
missing, macOS, Windows) the code is not run unless the user opts in
(``AskMagic.fallback_unconfined = True``, ``ask(..., fallback_unconfined=True)``); the attempt
says why in one line.

What crosses the boundary: ``df`` goes out as Arrow IPC bytes; back come a JSON status (read
with :func:`json.loads`) and the result as Arrow IPC bytes, bounded by its decoded size (rows x
columns within ``row_limit`` and ``result_bytes``, read from the stream's headers before
pyarrow decodes anything), then read with pyarrow's IPC reader (pandas metadata dropped,
extension, view, run-end and union types and unknown time zones refused). Nothing the worker
writes is unpickled or evaluated in the kernel. Error text from the worker is cut to a few
short lines.

Limits are enforced from here: at ``timeout`` the child is killed (``SIGKILL``), whatever it
runs; a child that exceeds ``memory`` fails inside the worker (``code_memory``), the kernel's
memory never holds more than the result; Ctrl-C kills the child and the worker and re-raises
at once (the next run starts a new worker).

Example:
    >>> import pandas as pd
    >>> r = run_isolated("result = df['a'].sum()", pd.DataFrame({"a": [1, 2]}), timeout=10)
    >>> r.ok, r.result.to_dict("records")
    (True, [{'result': 3}])
"""

from __future__ import annotations

import sys
import time
from typing import Any

from cadet_magic.fallback.arrow import ResultRefused, from_ipc, to_ipc
from cadet_magic.fallback.code_check import check_code
from cadet_magic.fallback.in_process import CodeError, CodeRun, refused
from cadet_magic.fallback.protocol import (
    FrameError,
    PayloadTooLarge,
    code_lines,
    encode_frame,
    read_header_from,
    read_payload_from,
    reported_line,
)
from cadet_magic.fallback.warm import (
    ERROR_LINES,
    ERROR_WIDTH,
    LOCK,
    START_TIMEOUT,
    Worker,
    WorkerError,
    clean_environment,
    close_fds,
    cut,
    deadline_reader,
    kill_child,
    prestart,
    shutdown,
    type_name,
    worker,
    write_all,
)

__all__ = [  # the warm worker's names stay importable from here
    "DEFAULT_MEMORY",
    "ERROR_LINES",
    "ERROR_WIDTH",
    "RESULT_BYTES",
    "Worker",
    "WorkerError",
    "clean_environment",
    "confinement_refusal",
    "cut",
    "execute_isolated",
    "prestart",
    "run_isolated",
    "shutdown",
    "worker",
]

#: Default memory the code may allocate in the worker (bytes): 2 GiB.
DEFAULT_MEMORY = 2 << 30

#: Default bound of a result's decoded size in the kernel (``AskMagic.result_bytes``).
RESULT_BYTES = 64 << 20

#: Seconds past the time limit before the child is killed (it is killed at the limit; this is
#: how long the kernel then waits for the worker to confirm).
KILL_GRACE = 1.0


#: How the user lets the fallback's code run without the confinement this system lacks.
OPT_IN = "to run it unconfined: %config AskMagic.fallback_unconfined = True"


def confinement_refusal(info: dict | None = None, platform: str = sys.platform) -> str | None:
    """Why the fallback's code may not run here by default (one line saying how to allow it),
    or None where the confinement it needs is in place: on Linux seccomp and Landlock (any
    ABI), elsewhere none is implemented.

    Example:
        >>> print(confinement_refusal({"landlock_abi": 0, "landlock": True, "seccomp": True}, "linux"))
        The fallback's code was not run: this Linux kernel has no Landlock (needed to keep the code from reading your files); to run it unconfined: %config AskMagic.fallback_unconfined = True
        >>> print(confinement_refusal(platform="darwin"))
        The fallback's code was not run: macOS has no confinement for it here (no Seatbelt profile is implemented); to run it unconfined: %config AskMagic.fallback_unconfined = True
    """
    why = None
    if platform == "darwin":
        why = "macOS has no confinement for it here (no Seatbelt profile is implemented)"
    elif platform == "win32":
        why = "Windows has no confinement for it here"
    elif platform.startswith("linux"):
        info = info or {}
        if info.get("landlock") is not True:
            why = f"the landlock package is missing ({info.get('landlock')})"
        elif info.get("seccomp") is not True:
            why = f"seccomp cannot be loaded ({info.get('seccomp')}; pyseccomp, libseccomp.so.2)"
        elif not isinstance(info.get("landlock_abi"), int) or info["landlock_abi"] < 1:
            why = "this Linux kernel has no Landlock (needed to keep the code from reading your files)"
    elif platform != "emscripten":
        why = f"{platform} has no confinement for it here"
    return f"The fallback's code was not run: {why}; {OPT_IN}" if why else None


def _error_run(kind: str, type_: str, message: str, line: Any = None, **kw: Any) -> CodeRun:
    line = line if isinstance(line, int) and not isinstance(line, bool) else None
    return CodeRun(ok=False, error=CodeError(kind, type_name(type_), cut(message), line), **kw)


def run_isolated(
    code: str,
    df: Any,
    *,
    timeout: float = 30.0,
    memory: int | None = None,
    output_limit: int = 10_000,
    unconfined: bool = False,
    row_limit: int | None = None,
    result_bytes: int | None = None,
) -> CodeRun:
    """Checks ``code`` and runs it on ``df`` in the confined worker; the answer is ``result``.

    Args:
        code: pandas code that assigns the answer to ``result``.
        df: the fallback SELECT's rows (a pandas DataFrame).
        timeout: wall-clock seconds; the child is killed at the limit.
        memory: bytes the code may allocate in the worker (default :data:`DEFAULT_MEMORY`).
        output_limit: characters of printed output kept (in ``CodeRun.output``).
        unconfined: run even where the confinement is not available (the user opted in).
        row_limit, result_bytes: the result's bounds (rows, decoded bytes) in the kernel.

    Returns:
        A :class:`~cadet_magic.fallback.in_process.CodeRun` like the in-process runner's; the extra
        error kinds are ``memory`` (the memory limit), ``unavailable`` (the confinement is not
        available and ``unconfined`` is False: nothing ran), ``worker`` (the worker failed or
        the confinement could not be applied: nothing ran) and ``crashed`` (the child ended
        without a result).
    """
    t0 = time.perf_counter()
    verdict = check_code(code)
    if not verdict.ok:
        return refused(verdict, t0)
    return execute_isolated(
        code,
        df,
        timeout=timeout,
        memory=memory,
        output_limit=output_limit,
        check=verdict,
        t0=t0,
        unconfined=unconfined,
        row_limit=row_limit,
        result_bytes=result_bytes,
    )


def execute_isolated(
    code: str,
    df: Any,
    *,
    timeout: float,
    memory: int | None = None,
    output_limit: int = 10_000,
    check: Any = None,
    t0: float | None = None,
    unconfined: bool = False,
    row_limit: int | None = None,
    result_bytes: int | None = None,
) -> CodeRun:
    """Runs ``code`` in the worker without the syntax-tree check (the layer below
    :func:`run_isolated`; tests feed hostile code through it directly)."""
    t0 = time.perf_counter() if t0 is None else t0
    memory = DEFAULT_MEMORY if memory is None else int(memory)
    result_bytes = RESULT_BYTES if result_bytes is None else int(result_bytes)

    def done(**kw: Any) -> CodeRun:
        return CodeRun(check=check, elapsed=time.perf_counter() - t0, **kw)

    if not unconfined and not sys.platform.startswith("linux"):
        refusal = confinement_refusal()
        if refusal:  # nothing to start: no confinement is implemented here
            return _error_run("unavailable", "ConfinementError", refusal, check=check)
    try:
        payload = to_ipc(df)
    except ImportError as e:
        return _error_run("unavailable", "ImportError", f"pyarrow is needed ({e})", check=check)
    with LOCK:
        try:
            w = worker()
        except (WorkerError, OSError, FrameError, TimeoutError) as e:
            shutdown()
            message = f"the isolated worker could not start: {e or type(e).__name__}"
            return _error_run("unavailable", "WorkerError", message, check=check)
        refusal = None if unconfined else confinement_refusal(w.info)
        if refusal:
            return _error_run("unavailable", "ConfinementError", refusal, check=check)
        request = {
            "code": code,
            "timeout": timeout,
            "memory": memory,
            "output_limit": output_limit,
            "require": [] if unconfined else _required(),
            "row_limit": row_limit,
            "result_bytes": result_bytes,
        }
        limit = result_bytes + (1 << 20)  # Arrow's own framing on top of the values
        if w.forks:
            header, data = _run_forked(w, request, payload, timeout, limit)
        else:
            header, data = _run_single(w, request, payload, timeout, limit)
        del payload
    if header.get("event") == "timeout":
        message = f"the code was stopped after {timeout:g} s (time limit)"
        return done(ok=False, error=CodeError("timeout", "TimeoutError", message))
    if header.get("event") == "failed":
        kind = header.get("kind", "worker")
        return _error_run(kind, header.get("type", "WorkerError"), header["message"], check=check)
    return _outcome(header, data, done, row_limit, result_bytes, code_lines(code))


def _required() -> list[str]:
    """The confinement a child must achieve or refuse to run the code (Linux: both layers)."""
    return ["seccomp", "landlock"] if sys.platform.startswith("linux") else []


def _failed(message: str, kind: str = "worker", type_: str = "WorkerError") -> dict:
    return {"event": "failed", "kind": kind, "type": type_, "message": message}


def _run_forked(
    w: Worker, request: dict, payload: bytes, timeout: float, limit: int
) -> tuple[dict, bytes]:
    """One run in a child forked from the template: the request and ``df`` go into the
    child's own pipe, the result comes back from its own pipe; the template sees neither."""
    pid = request_w = result_r = pidfd = None
    try:
        pid, request_w, result_r, pidfd = w.fork()
        deadline = time.monotonic() + timeout
        try:
            write_all(request_w, encode_frame(request, payload), deadline)
        except BrokenPipeError:
            pass  # the child ended early: its exit status says why
        close_fds(request_w)
        request_w = None
        read = deadline_reader(result_r, deadline)
        try:
            status = read_header_from(read)
            data = read_payload_from(read, limit)
        except TimeoutError:
            kill_child(pid, pidfd)
            try:
                w.event("ended", time.monotonic() + KILL_GRACE, pid)
            except (TimeoutError, FrameError, OSError):
                shutdown()
            return {"event": "timeout"}, b""
        except PayloadTooLarge as e:
            kill_child(pid, pidfd)
            return _failed(
                f"the result is too large to bring into the kernel ({e})",
                "bad_result",
                "ValueError",
            ), b""
        except FrameError as e:  # the child ended without a (whole) result
            ended = w.event("ended", time.monotonic() + START_TIMEOUT, pid)
            exit_code = ended.get("exit")
            status = {"ok": False, "kind": "crashed", "type": "WorkerError", "message": str(e)}
            return {"event": "done", "status": status, "ended": {"exit": exit_code}}, b""
        kill_child(pid, pidfd)  # it is done: nothing of it keeps running (the template reaps it)
        return {"event": "done", "status": status, "ended": {"exit": 0}}, data
    except KeyboardInterrupt:
        kill_child(pid, pidfd)
        shutdown()
        raise
    except (FrameError, OSError, TimeoutError) as e:
        kill_child(pid, pidfd)
        shutdown()
        return _failed(f"the worker failed: {e or type(e).__name__}"), b""
    finally:
        close_fds(request_w, result_r, pidfd)


def _run_single(
    w: Worker, request: dict, payload: bytes, timeout: float, limit: int
) -> tuple[dict, bytes]:
    """One run in a worker that runs a single request itself (no ``fork``) and then ends."""
    pid = None
    try:
        w.send(request, payload)
        started, _ = w.read(time.monotonic() + START_TIMEOUT)
        pid = started.get("pid") if isinstance(started.get("pid"), int) else None
        deadline = time.monotonic() + timeout
        try:
            read = deadline_reader(w.out_fd, deadline) if sys.platform != "win32" else None
            if read is None:
                header, data = w.read(deadline)
            else:
                header, data = read_header_from(read), read_payload_from(read, limit)
        except TimeoutError:
            kill_child(pid)
            shutdown()
            return {"event": "timeout"}, b""
        except PayloadTooLarge as e:
            shutdown()
            return _failed(
                f"the result is too large to bring into the kernel ({e})",
                "bad_result",
                "ValueError",
            ), b""
        shutdown()
        return header, data
    except KeyboardInterrupt:
        kill_child(pid)
        shutdown()
        raise
    except (FrameError, OSError, TimeoutError) as e:
        kill_child(pid)
        shutdown()
        return _failed(f"the worker failed: {e or type(e).__name__}"), b""


def _outcome(
    header: dict,
    data: bytes,
    done: Any,
    row_limit: int | None = None,
    result_bytes: int | None = None,
    lines: int = 0,
) -> CodeRun:
    """The worker's ``done`` frame as a CodeRun (every field checked, text cut, the line
    number within the code's ``lines``)."""
    status = header.get("status") if header.get("event") == "done" else None
    if not isinstance(status, dict):
        return done(ok=False, error=CodeError("worker", "WorkerError", "unexpected reply"))
    output = cut(status.get("output", ""), lines=50, width=500)
    if status.get("ok") is True:
        try:
            frame = from_ipc(data, row_limit, result_bytes)
        except ResultRefused as e:
            message = f"the result was refused: {cut(e, 1)}"
            return done(ok=False, error=CodeError("bad_result", "ValueError", message))
        except Exception as e:  # noqa: BLE001 - a malformed result is reported, not raised
            message = f"the result could not be read ({type(e).__name__}: {cut(e, 1)})"
            return done(ok=False, error=CodeError("bad_result", "TypeError", message))
        return done(ok=True, result=frame, value=frame, output=output)
    kind = str(status.get("kind", "crashed"))
    message = status.get("message", "")
    if kind == "crashed":  # (its exit status is the child's choice: never reported)
        message = "the code's process ended without a result"
    known = {"error", "memory", "no_result", "bad_result", "worker", "crashed"}
    error = CodeError(
        kind if kind in known else "crashed",
        type_name(status.get("type", "Error")),
        cut(message) or "(no message)",
        reported_line(status.get("line"), lines),
    )
    return done(ok=False, error=error, output=output)
