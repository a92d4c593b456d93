"""The kernel's data limit while an in-process engine runs model-written SQL (Linux; stdlib).

DuckDB computes a whole vector of rows (up to 2048) before anything can be fetched, and the
strings and lists it builds row by row (``repeat('x', 10^8)``, a window ``string_agg``) are
allocated outside its buffer manager, so its ``memory_limit`` does not count them: one such
query was measured to grow a kernel by gigabytes within a second. The operating system's limit
on the process's private writable memory (``RLIMIT_DATA``, which on Linux covers ``mmap``
as well as the heap) does: for the run, its soft value is lowered to what the process maps now
plus a budget, so an allocation beyond it fails, DuckDB reports its out-of-memory error
(a ``bad_alloc`` turned into ``OutOfMemoryException``) and frees what it built, and the run
ends in one line. The limit is put back when the last run holding it ends.

The limit is one of the whole process: while a run holds it, an allocation of any thread of
the kernel beyond the budget fails too. It is never raised above a limit set before, and only
the soft value changes. Where ``resource`` or ``/proc/self/status`` is missing (macOS,
Windows, Pyodide), nothing is limited and :func:`data_limit` yields False.

Example:
    >>> with data_limit(256 * 2**20) as held:
    ...     inside = current_limit()
    >>> held == (inside is not None), current_limit() is None or current_limit() != inside
    (True, True)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_LOCK = threading.Lock()
#: Runs holding the limit now, and the (soft, hard) pair to put back when the last ends (None:
#: the limit was left alone, as when a lower one was set before).
_HELD: list = [0, None]


def mapped_data() -> int | None:
    """Bytes of private writable memory the process maps now (``VmData``), or None."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def current_limit() -> int | None:
    """The soft data limit in bytes, None when there is none (or it cannot be read)."""
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    return None if soft == resource.RLIM_INFINITY else soft


@contextmanager
def data_limit(budget: int) -> Iterator[bool]:
    """Holds the process's data limit at what it maps now + ``budget`` bytes for the block
    (runs that overlap share the first one's limit); yields whether a limit holds."""
    try:
        import resource
    except ImportError:
        yield False
        return
    with _LOCK:
        if _HELD[0] == 0:
            _HELD[1] = _lower(resource, budget)
        _HELD[0] += 1
        held = _HELD[1] is not None or current_limit() is not None
    try:
        yield held
    finally:
        with _LOCK:
            _HELD[0] -= 1
            if _HELD[0] == 0 and _HELD[1] is not None:
                try:
                    resource.setrlimit(resource.RLIMIT_DATA, _HELD[1])
                finally:
                    _HELD[1] = None


def _lower(resource: Any, budget: int) -> tuple[int, int] | None:
    """Sets the soft limit for a run; returns the pair to put back (None: left alone)."""
    now = mapped_data()
    if now is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    wanted = now + budget
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft <= wanted:
        return None  # a lower limit holds already
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
    except (ValueError, OSError):
        return None
    return soft, hard
