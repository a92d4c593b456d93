"""The fallback's worker process: a template that imports pandas once and never sees data.

Started by :mod:`cadet_magic.fallback.warm` in the kernel as ``python -I`` with a clean
environment and an empty temporary working folder. On Linux it is a **template**: it never
runs the model's code and never receives a request, rows or a result. Its stdin and stdout are
one Unix socket to the kernel:

1. at start it imports pandas, numpy, pyarrow and the confinement bindings and sends ``ready``
   (with what confinement this system offers); it ends when the socket closes (the kernel
   ended), killing any child;
2. per run the kernel sends one byte with two descriptors attached (``SCM_RIGHTS``): the read
   end of a request pipe and the write end of a result pipe, both the kernel's. The template
   forks a child that keeps only those two, sends ``started`` with the child's pid and, when
   the child has ended, ``ended`` with its exit status;
3. after the first child ended it runs a small pandas workload on made-up data once, so later
   children start warm.

The child reads the request's header (the code and the limits) from its pipe, applies the
resource limits, Landlock, the capability drop and the seccomp filter
(:mod:`cadet_magic.fallback.confine`), and only then reads ``df`` (Arrow IPC) from the same
pipe; it runs the code (:mod:`cadet_magic.fallback.worker_child`) in a fresh namespace with the safe builtins (``df``, ``pd``, ``np``),
captures printed output up to a cap and writes the result as Arrow IPC with a JSON status to
its result pipe, straight to the kernel. So the process a run's code executes in was forked
from one that never held another run's data, and each run's rows reach only its own child.

Where there is no ``fork`` (Windows) or forking is unsafe (macOS), the worker instead reads
one request itself, runs it as the child would and ends: a fresh process per run. Each child
dies with the template (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import functools
import os
import select
import signal
import sys
import time
from typing import Any

from cadet_magic.fallback.worker_child import (
    arrow_table,
    error_status,
    execute,
    ipc_bytes,
    run_child,
)

#: Whether each run gets a child forked from this worker. Windows has no ``fork``; on macOS a
#: fork of a process that loaded Apple's frameworks (numpy's Accelerate) is not safe: there
#: the worker runs one request itself and ends, and the kernel starts the next worker.
FORK = hasattr(os, "fork") and sys.platform.startswith("linux")


def _die_with_parent(parent: int) -> None:
    """Asks Linux to kill this process when ``parent`` ends (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


#: Code run once in the worker before it forks any child: pandas initialises much of itself
#: lazily (groupby, reshaping, Arrow conversion), and every child would pay for it again.
WARM_UP = """
g = df.groupby(['k', 's'], as_index=False)['v'].sum()
t = g['v'] == g.groupby('k')['v'].transform('max')
m = g[t].rename(columns={'v': 'w'}).sort_values(['w', 's'], ascending=[False, True])
p = df.pivot_table(index='k', columns='s', values='v', aggfunc='mean')
j = df.merge(g, on=['k', 's'], how='left').drop_duplicates().nlargest(2, 'v')
d = df.assign(day=pd.to_datetime(df['d']).dt.month, u=df['s'].str.upper())
result = pd.concat([m, j]).reset_index(drop=True)
q = df.query('v > 1').describe()
"""


def _warm_up() -> None:
    """Runs :data:`WARM_UP` once through the whole child path (Arrow in, run, Arrow out)."""
    import pandas as pd
    import pyarrow as pa

    df = pd.DataFrame(
        {
            "k": ["a", "b", "a", "c"],
            "s": ["x", "y", "y", "x"],
            "v": [1.0, 2.5, 3.0, 4.0],
            "d": ["2025-01-01", "2025-02-01", "2025-03-01", "2025-04-01"],
        }
    )
    with open(os.devnull, "w") as sink:
        saved = sys.stdout, sys.stderr
        try:
            execute(
                {"code": WARM_UP}, ipc_bytes(arrow_table(df, pa), pa), pd, __import__("numpy"), pa
            )
        except Exception:  # noqa: BLE001 - a warm-up that fails only costs speed
            pass
        finally:
            sys.stdout, sys.stderr = saved
            sink.flush()
    import gc

    gc.collect()
    gc.freeze()  # children's collections skip what exists now: fewer copied pages per fork


def _detach(keep: tuple[int, ...]) -> None:
    """Standard streams to /dev/null, every other inherited descriptor closed but ``keep``."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    kept = sorted({0, 1, 2, *keep})
    for lo, hi in zip(kept, [*kept[1:], 65536], strict=True):
        os.closerange(lo + 1, hi)


def _confine(request: dict) -> dict[str, Any]:
    """Applies the limits, then (Linux) Landlock, the capability drop and seccomp; raises
    when a confinement the request requires could not be applied."""
    from cadet_magic.fallback import confine

    confined: dict[str, Any] = {"limits": [], "landlock": False, "seccomp": False}
    baseline = confine.address_space_now()
    memory = int(request["memory"])
    cpu = int(float(request["timeout"])) + 2
    readable = confine.readable_dirs()
    t_start = time.perf_counter()
    # Limits first: the seccomp filter then forbids changing them.
    confined["limits"] = confine.apply_limits(memory, cpu, baseline)
    if sys.platform.startswith("linux"):
        confined["landlock"] = _try(confine.landlock, readable)
        confined["capabilities"] = _try(confine.drop_capabilities)
        confined["seccomp"] = _try(confine.seccomp, os.getpid())
    missing = [k for k in request.get("require", []) if confined.get(k) is not True]
    if missing:
        raise RuntimeError(f"confinement failed: {', '.join(missing)}")
    confined["seconds"] = round(time.perf_counter() - t_start, 4)
    return confined


def _child(read: Any, result_fd: int, parent: int, keep: tuple[int, ...], wrap: bool) -> None:
    """One run (a forked child, or without ``fork`` the worker itself, used once): detach,
    read the request's header from ``read``, confine, only then read ``df``, run, write one
    frame to ``result_fd`` (as a ``done`` event when ``wrap``), exit. Never returns."""
    from cadet_magic.fallback.protocol import encode_frame, read_header_from, read_payload_from

    code = 0
    try:
        _die_with_parent(parent)
        _detach(keep)
        request = read_header_from(read)
        t_start = time.perf_counter()
        confined = _confine(request)
        payload = read_payload_from(read)
        status, data = run_child(request, payload, confined)
        status["child_seconds"] = round(time.perf_counter() - t_start, 4)
    except MemoryError:
        status, data = error_status("memory", "MemoryError", "out of memory"), b""
    except BaseException as e:  # noqa: BLE001 - reported to the kernel as a worker error
        status = error_status("worker", type(e).__name__, str(e)[:300])
        data = b""
        code = 1
    try:
        if wrap:
            status = {"event": "done", "status": status, "ended": {"exit": code}}
        frame = encode_frame(status, data)
        view = memoryview(frame)
        while view:
            n = os.write(result_fd, view)
            view = view[n:]
    except BaseException:  # noqa: BLE001 - nothing left to tell anyone
        code = 2
    os._exit(code)


def _try(func: Any, *args: Any) -> bool | str:
    try:
        func(*args)
        return True
    except Exception as e:  # noqa: BLE001 - what failed is reported with the result
        return f"{type(e).__name__}: {e}"[:200]


def _serve_once(inp: Any, out: Any) -> None:
    """Without ``fork``: this fresh worker reads one request and runs it itself, then ends."""
    from cadet_magic.fallback.protocol import write_frame

    result_fd = os.dup(out.fileno())
    inp_fd = os.dup(inp.fileno())
    write_frame(out, {"event": "started", "pid": os.getpid(), "single_use": True})
    _child(functools.partial(os.read, inp_fd), result_fd, os.getppid(), (inp_fd, result_fd), True)


def _serve_forks(out: Any) -> None:
    """The template's loop: a child per ``F`` message (two descriptors attached), an
    ``ended`` event per child that ended, until the kernel's socket closes."""
    import socket

    from cadet_magic.fallback.protocol import write_frame

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=0)
    children: dict[int, int | None] = {}  # pid -> pidfd (None: polled)
    warm = False

    def reap(pid: int, status: int) -> None:
        nonlocal warm
        pidfd = children.pop(pid, None)
        if pidfd is not None:
            os.close(pidfd)
        write_frame(out, {"event": "ended", "pid": pid, "exit": os.waitstatus_to_exitcode(status)})
        if not warm:  # after the first run, so that run does not wait for it
            warm = True
            _warm_up()

    while True:
        watched = [0, *(fd for fd in children.values() if fd is not None)]
        polled = any(fd is None for fd in children.values())
        ready, _, _ = select.select(watched, [], [], 0.05 if polled else None)
        for pid, status in _ended(children, ready):
            reap(pid, status)
        if 0 not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1, 2)
        except OSError:
            message, fds = b"", []
        if not message:  # the kernel is gone: so are the children and this template
            for pid in children:
                os.kill(pid, signal.SIGKILL)
            os._exit(0)
        if message != b"F" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        pid = _fork_child(fds[0], fds[1])
        children[pid] = _pidfd(pid)
        write_frame(out, {"event": "started", "pid": pid})


def _ended(children: dict[int, int | None], ready: list[int]) -> list[tuple[int, int]]:
    """The children that ended (pid, wait status): those whose pidfd is ready, and the
    polled ones."""
    ended = []
    for pid, pidfd in list(children.items()):
        if pidfd is None or pidfd in ready:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                ended.append((pid, status))
    return ended


def _fork_child(request_fd: int, result_fd: int) -> int:
    """Forks the child that runs one request (only its own two pipes, never the template's
    socket); the template closes its copies of them."""
    pid = os.fork()
    if pid == 0:
        _child(
            functools.partial(os.read, request_fd),
            result_fd,
            os.getppid(),
            (request_fd, result_fd),
            False,
        )
    os.close(request_fd)
    os.close(result_fd)
    return pid


def _pidfd(pid: int) -> int | None:
    """A pidfd that becomes readable when the child ends (None: it is polled)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def main() -> None:
    """The worker: ``ready``, then (Linux) the template's loop, else one run."""
    # No PR_SET_PDEATHSIG here: it follows the kernel's thread that started this process,
    # not the kernel. The kernel's end closes stdin instead, which ends this loop (and kills
    # the children).
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr = open(os.devnull, "w")  # stray prints never enter the frames
    from cadet_magic.fallback.protocol import write_frame

    t0 = time.perf_counter()
    info: dict[str, Any] = {
        "event": "ready",
        "pid": os.getpid(),
        "platform": sys.platform,
        "fork": FORK,
    }
    try:
        import numpy  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow
        import pyarrow.ipc  # noqa: F401

        import cadet_magic.fallback.in_process  # noqa: F401
    except ImportError as e:
        write_frame(out, {"event": "failed", "message": f"cannot import {e.name}: {e}"})
        return
    if sys.platform.startswith("linux"):
        from cadet_magic.fallback import confine

        info.update(confine.available())
    info["import_seconds"] = time.perf_counter() - t0
    write_frame(out, info)
    if FORK:
        _serve_forks(out)
    else:
        _serve_once(inp, out)


if __name__ == "__main__":
    main()
