"""The kernel's warm worker process: started once, reused by every fallback run.

The process side of :mod:`cadet_magic.fallback.worker` (which runs code in it). One warm
worker per kernel is started on first use (``python -I``: no environment variables of the
kernel beyond what Python needs, an empty temporary working folder, one Unix socket as
stdin/stdout); it imports pandas, numpy and pyarrow once. On Linux it is a template that never
receives data: per run the kernel makes two pipes, passes one end of each to the template
(:meth:`Worker.fork`), which forks a child holding only those. Here: starting, talking to,
forking from and ending that process, the pipes' deadlines, killing a child, and the kernel's
one warm worker (:func:`worker`, :func:`prestart`, :func:`shutdown`).

Example:
    >>> cut("first\\nsecond\\nthird\\nfourth", lines=2)
    'first\\nsecond\\n...'
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from cadet_magic.fallback.protocol import FrameError, encode_frame, read_frame_from

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


def type_name(name: Any) -> str:
    name = str(name)[:60]
    return name if name.isidentifier() else "Error"


class Worker:
    """One warm worker process and the temporary folder it runs in."""

    def __init__(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="cadet-fallback-")
        package_parent = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        t0 = time.perf_counter()
        self.sock: socket.socket | None = None
        stream: int = subprocess.PIPE
        if sys.platform != "win32":  # one Unix socket both ways, so descriptors can be passed
            self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            stream = theirs.fileno()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", BOOT, package_parent, str(os.getpid())],
                stdin=stream,
                stdout=stream,
                stderr=subprocess.DEVNULL,
                cwd=self.workdir,
                env=clean_environment(self.workdir),
                close_fds=True,
                start_new_session=sys.platform != "win32",
            )
        finally:
            if self.sock is not None:
                theirs.close()
        if self.sock is not None:
            self.out_fd = self.sock.fileno()
        else:
            assert self.proc.stdout is not None  # piped
            self.out_fd = self.proc.stdout.fileno()
        header, _ = self.read(time.monotonic() + START_TIMEOUT)
        if header.get("event") != "ready":
            self.close()
            raise WorkerError(cut(header.get("message") or f"worker said {header!r}"))
        self.info = header
        self.start_seconds = time.perf_counter() - t0

    @property
    def forks(self) -> bool:
        """Whether this worker is a template forking a child per run (Linux)."""
        return self.info.get("fork") is True and self.sock is not None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, header: dict, payload: bytes = b"") -> None:
        frame = encode_frame(header, payload)
        if self.sock is not None:
            self.sock.sendall(frame)
        else:
            assert self.proc.stdin is not None
            self.proc.stdin.write(frame)
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
        return read_frame_from(deadline_reader(self.out_fd, deadline))

    def event(self, name: str, deadline: float, pid: int | None = None) -> dict:
        """The template's next ``name`` event (for ``pid`` when given), skipping the ``ended``
        events of earlier runs' children."""
        while True:
            header, _ = self.read(deadline)
            if header.get("event") == name and (pid is None or header.get("pid") == pid):
                return header
            if header.get("event") != "ended":
                raise FrameError(f"unexpected event from the worker: {str(header)[:200]}")

    def fork(self) -> tuple[int, int, int, int | None]:
        """Asks the template for a child; returns its pid, the kernel's ends of its request
        and result pipes and a pidfd for it (None where the kernel has none)."""
        assert self.sock is not None
        request_r, request_w = os.pipe()
        result_r, result_w = os.pipe()
        try:
            socket.send_fds(self.sock, [b"F"], [request_r, result_w])
        except OSError:
            close_fds(request_w, result_r)
            raise
        finally:
            close_fds(request_r, result_w)  # the child's ends: the template passed them on
        try:
            started = self.event("started", time.monotonic() + START_TIMEOUT)
            pid = started.get("pid")
            if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
                raise FrameError("the worker sent no child pid")
        except BaseException:
            close_fds(request_w, result_r)
            raise
        # The child cannot end before it has read its request, so this pid is still ours.
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        return pid, request_w, result_r, pidfd

    def close(self) -> None:
        """Ends the worker (closing its stdin, then killing it) and removes its folder."""
        try:
            if self.sock is not None:
                self.sock.close()
            elif self.proc.stdin:
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


def deadline_reader(fd: int, deadline: float) -> Any:
    """``read(n)`` on ``fd`` that raises :class:`TimeoutError` at ``deadline``."""

    def read(n: int) -> bytes:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            raise TimeoutError
        return os.read(fd, n)

    return read


def write_all(fd: int, data: bytes, deadline: float) -> None:
    """Writes ``data`` to the pipe ``fd`` by ``deadline`` (the child reads as it confines)."""
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        _, ready, _ = select.select([], [fd], [], max(0.0, left))
        if not ready:
            raise TimeoutError
        try:
            view = view[os.write(fd, view[: 1 << 16]) :]
        except BlockingIOError:
            continue


def close_fds(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


LOCK = threading.Lock()
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
        with LOCK:
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


def kill_child(pid: int | None, pidfd: int | None = None) -> None:
    """Kills a child: through its pidfd when there is one (never another process that got
    its pid since), else by pid."""
    if pidfd is not None:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            return
        except (AttributeError, OSError):
            pass
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
    except (ProcessLookupError, PermissionError, OSError):
        pass
