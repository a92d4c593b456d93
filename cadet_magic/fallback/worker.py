"""Running the fallback's pandas code outside the kernel, in a confined worker process.

The kernel side of :mod:`cadet_magic.fallback.worker_main`. One warm worker per kernel is
started on first use (``python -I``: no environment variables of the kernel beyond what Python
needs, an empty temporary working folder, pipes for stdin/stdout); it imports pandas, numpy and
pyarrow once and, on Linux, forks a child per run that confines itself with resource limits,
Landlock and seccomp-bpf before the code runs (:mod:`cadet_magic.fallback.confine`).

What crosses the boundary: ``df`` goes out as Arrow IPC bytes; back come a JSON status (read
with :func:`json.loads`) and the result as Arrow IPC bytes (read with pyarrow's IPC reader,
pandas metadata dropped, extension types refused). Nothing the worker writes is unpickled or
evaluated in the kernel. Error text from the worker is cut to a few short lines.

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

import atexit
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from cadet_magic.fallback.check import check_code
from cadet_magic.fallback.protocol import FrameError, encode_frame, read_frame_from
from cadet_magic.fallback.run import CodeError, CodeRun, refused

#: Default memory the code may allocate in the worker (bytes): 2 GiB.
DEFAULT_MEMORY = 2 << 30

#: Seconds past the time limit before the child is killed (it is killed at the limit; this is
#: how long the kernel then waits for the worker to confirm).
KILL_GRACE = 1.0

#: Seconds the worker may take to start and import pandas, numpy and pyarrow.
START_TIMEOUT = 60.0

#: Lines and characters of worker error text passed on to the model and the display.
ERROR_LINES = 3
ERROR_WIDTH = 300

#: Variables the worker's environment holds: only what Python and the numeric libraries need
#: to start, with every thread pool at one thread.
THREAD_VARS = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "ARROW_NUM_THREADS",
)

BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from cadet_magic.fallback.worker_main import main; main()"
)


class WorkerError(Exception):
    """The worker could not be started or broke the protocol."""


def clean_environment(workdir: str) -> dict[str, str]:
    """The worker's whole environment (nothing copied from the kernel's, except the two
    variables Windows needs to start a process at all).

    Example:
        >>> env = clean_environment("/tmp/w")
        >>> env["HOME"], env["OPENBLAS_NUM_THREADS"], "PATH" in env
        ('/tmp/w', '1', True)
    """
    env = {
        "PATH": os.defpath,
        "HOME": workdir,
        "TMPDIR": workdir,
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        **{name: "1" for name in THREAD_VARS},
    }
    if sys.platform == "win32":
        for name in ("SYSTEMROOT", "SYSTEMDRIVE"):
            if name in os.environ:
                env[name] = os.environ[name]
    return env


def cut(text: Any, lines: int = ERROR_LINES, width: int = ERROR_WIDTH) -> str:
    """Text from the worker as at most ``lines`` lines of ``width`` characters.

    Example:
        >>> cut("a\\n" * 10, lines=2)
        'a\\na\\n...'
    """
    all_lines = [x[:width] for x in str(text).splitlines() if x.strip()]
    kept = all_lines[:lines]
    return "\n".join(kept + (["..."] if len(all_lines) > lines else []))


def _type_name(name: Any) -> str:
    name = str(name)[:60]
    return name if name.isidentifier() else "Error"


def to_ipc(df: Any) -> bytes:
    """``df`` as Arrow IPC stream bytes (columns Arrow cannot type are sent as text)."""
    import pyarrow as pa

    from cadet_magic.fallback.worker_main import _ipc, _table

    return _ipc(_table(df, pa), pa)


def from_ipc(payload: bytes) -> Any:
    """A DataFrame from Arrow IPC bytes written by the worker: only plain Arrow types, no
    pandas metadata (which names dtypes and index rebuilding), no extension types."""
    import pyarrow as pa

    table = pa.ipc.open_stream(pa.py_buffer(payload)).read_all()
    table.validate(full=True)
    for field in table.schema:
        if isinstance(field.type, pa.ExtensionType):
            raise WorkerError(f"the result's column {field.name!r} has an extension type")
    return table.replace_schema_metadata(None).to_pandas()


class Worker:
    """One warm worker process and the temporary folder it runs in."""

    def __init__(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="cadet-fallback-")
        package_parent = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOT, package_parent, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.workdir,
            env=clean_environment(self.workdir),
            close_fds=True,
            start_new_session=sys.platform != "win32",
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both piped
        self.out_fd = self.proc.stdout.fileno()
        header, _ = self.read(time.monotonic() + START_TIMEOUT)
        if header.get("event") != "ready":
            self.close()
            raise WorkerError(cut(header.get("message") or f"worker said {header!r}"))
        self.info = header
        self.start_seconds = time.perf_counter() - t0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, header: dict, payload: bytes = b"") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode_frame(header, payload))
        self.proc.stdin.flush()

    def read(self, deadline: float) -> tuple[dict, bytes]:
        """One frame from the worker, waiting until ``deadline`` (monotonic) at most."""

        if sys.platform == "win32":  # no select() on pipes: a timer kills the worker instead
            timer = threading.Timer(max(0.0, deadline - time.monotonic()), self.proc.kill)
            timer.start()
            try:
                return read_frame_from(lambda n: os.read(self.out_fd, n))
            except FrameError:
                if time.monotonic() >= deadline:
                    raise TimeoutError from None
                raise
            finally:
                timer.cancel()

        def read(n: int) -> bytes:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.out_fd], [], [], max(0.0, left))
            if not ready:
                raise TimeoutError
            return os.read(self.out_fd, n)

        return read_frame_from(read)

    def close(self) -> None:
        """Ends the worker (closing its stdin, then killing it) and removes its folder."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
            pass
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


_LOCK = threading.Lock()
_WORKER: Worker | None = None
_STARTING = False


def worker() -> Worker:
    """The kernel's warm worker, started on first use (and again after it ended)."""
    global _WORKER
    if _WORKER is None or not _WORKER.alive():
        if _WORKER is not None:
            _WORKER.close()
        _WORKER = Worker()
    return _WORKER


def prestart() -> None:
    """Starts the warm worker in a background thread (no-op when it runs already)."""

    global _STARTING

    def start() -> None:
        global _STARTING
        with _LOCK:
            try:
                worker()
            except (WorkerError, OSError, FrameError, TimeoutError):
                shutdown()  # the run that needs it reports the failure
            finally:
                _STARTING = False

    if not _STARTING and (_WORKER is None or not _WORKER.alive()):
        _STARTING = True
        threading.Thread(target=start, name="cadet-fallback-start", daemon=True).start()


def shutdown() -> None:
    """Ends the warm worker (at the kernel's exit, and in tests)."""
    global _WORKER
    if _WORKER is not None:
        _WORKER.close()
        _WORKER = None


atexit.register(shutdown)


def _kill(pid: int | None) -> None:
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _required(info: dict) -> list[str]:
    """The confinement a Linux child must achieve or refuse to run the code.

    Example:
        >>> linux = sys.platform.startswith("linux")
        >>> _required({"sandlock": "ImportError"}) if linux else ["seccomp", "landlock"]
        ['seccomp', 'landlock']
    """
    if not sys.platform.startswith("linux"):
        return []
    required = ["seccomp"]
    # Landlock is required unless the running kernel lacks it (sandlock says so); sandlock
    # itself missing is no reason to run unconfined.
    if info.get("sandlock") is not True or info.get("landlock_abi_ok"):
        required.append("landlock")
    return required


def _error_run(kind: str, type_: str, message: str, line: Any = None, **kw: Any) -> CodeRun:
    line = line if isinstance(line, int) and not isinstance(line, bool) else None
    return CodeRun(ok=False, error=CodeError(kind, _type_name(type_), cut(message), line), **kw)


def run_isolated(
    code: str,
    df: Any,
    *,
    timeout: float = 30.0,
    memory: int | None = None,
    output_limit: int = 10_000,
) -> CodeRun:
    """Checks ``code`` and runs it on ``df`` in the confined worker; the answer is ``result``.

    Args:
        code: pandas code that assigns the answer to ``result``.
        df: the fallback SELECT's rows (a pandas DataFrame).
        timeout: wall-clock seconds; the child is killed at the limit.
        memory: bytes the code may allocate in the worker (default :data:`DEFAULT_MEMORY`).
        output_limit: characters of printed output kept (in ``CodeRun.output``).

    Returns:
        A :class:`~cadet_magic.fallback.run.CodeRun` like the in-process runner's; the extra
        error kinds are ``memory`` (the memory limit), ``worker`` (the worker failed or the
        confinement could not be applied: nothing ran) and ``crashed`` (the child ended without
        a result).
    """
    t0 = time.perf_counter()
    verdict = check_code(code)
    if not verdict.ok:
        return refused(verdict, t0)
    return execute_isolated(
        code, df, timeout=timeout, memory=memory, output_limit=output_limit, check=verdict, t0=t0
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
) -> CodeRun:
    """Runs ``code`` in the worker without the syntax-tree check (the layer below
    :func:`run_isolated`; tests feed hostile code through it directly)."""
    t0 = time.perf_counter() if t0 is None else t0
    memory = DEFAULT_MEMORY if memory is None else int(memory)

    def done(**kw: Any) -> CodeRun:
        return CodeRun(check=check, elapsed=time.perf_counter() - t0, **kw)

    try:
        payload = to_ipc(df)
    except ImportError as e:
        return _error_run("unavailable", "ImportError", f"pyarrow is needed ({e})", check=check)
    with _LOCK:
        try:
            w = worker()
        except (WorkerError, OSError, FrameError, TimeoutError) as e:
            shutdown()
            message = f"the isolated worker could not start: {e or type(e).__name__}"
            return _error_run("unavailable", "WorkerError", message, check=check)
        request = {
            "code": code,
            "timeout": timeout,
            "memory": memory,
            "output_limit": output_limit,
            "require": _required(w.info),
        }
        pid = None
        try:
            w.send(request, payload)
            del payload
            started, _ = w.read(time.monotonic() + START_TIMEOUT)
            pid = started.get("pid") if isinstance(started.get("pid"), int) else None
            single_use = bool(started.get("single_use"))
            deadline = time.monotonic() + timeout
            try:
                header, data = w.read(deadline)
            except TimeoutError:
                _kill(pid)
                try:
                    header, data = w.read(time.monotonic() + KILL_GRACE)
                except (TimeoutError, FrameError, OSError):
                    shutdown()
                if single_use:
                    shutdown()
                return done(
                    ok=False,
                    error=CodeError(
                        "timeout",
                        "TimeoutError",
                        f"the code was stopped after {timeout:g} s (time limit)",
                    ),
                )
            if single_use:
                shutdown()
        except KeyboardInterrupt:
            _kill(pid)
            shutdown()
            raise
        except (FrameError, OSError, TimeoutError) as e:
            _kill(pid)
            shutdown()
            return _error_run("worker", "WorkerError", f"the worker failed: {e}", check=check)
    return _outcome(header, data, done)


def _outcome(header: dict, data: bytes, done: Any) -> CodeRun:
    """The worker's ``done`` frame as a CodeRun (every field checked, text cut)."""
    status = header.get("status") if header.get("event") == "done" else None
    if not isinstance(status, dict):
        return done(ok=False, error=CodeError("worker", "WorkerError", "unexpected reply"))
    output = cut(status.get("output", ""), lines=50, width=500)
    if status.get("ok") is True:
        try:
            frame = from_ipc(data)
        except Exception as e:  # noqa: BLE001 - a malformed result is reported, not raised
            message = f"the result could not be read ({type(e).__name__}: {cut(e, 1)})"
            return done(ok=False, error=CodeError("bad_result", "TypeError", message))
        return done(ok=True, result=frame, value=frame, output=output)
    kind = str(status.get("kind", "crashed"))
    ended = header.get("ended") or {}
    exit_code = ended.get("exit") if isinstance(ended, dict) else None
    message = status.get("message", "")
    if kind == "crashed":
        message = f"the code's process ended without a result (exit {exit_code})"
    known = {"error", "memory", "no_result", "bad_result", "worker", "crashed"}
    error = CodeError(
        kind if kind in known else "crashed",
        _type_name(status.get("type", "Error")),
        cut(message) or "(no message)",
        status.get("line") if isinstance(status.get("line"), int) else None,
    )
    return done(ok=False, error=error, output=output)
