"""One long-lived thread that fires query deadlines (stdlib only).

Starting a ``threading.Timer`` per query costs a thread start, measured at about
4 ms on a busy 2-core machine: more than fetching the first 1000 rows. The
watchdog keeps one daemon thread and a heap of deadlines instead; scheduling and
cancelling are a lock and a heap push.

Example:
    >>> import threading, time
    >>> fired = threading.Event()
    >>> handle = WATCHDOG.schedule(0.05, fired.set)
    >>> fired.wait(2.0)
    True
    >>> WATCHDOG.schedule(60, fired.clear).cancel()
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

#: Cancelled deadlines are swept from the heap when it grows beyond this.
_SWEEP_AT = 256


class Deadline:
    """A scheduled callback; :meth:`cancel` stops it from firing."""

    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = _nothing  # drop the reference to the connection now


def _nothing() -> None:
    return None


class Watchdog:
    """Calls callbacks at their deadlines from a single daemon thread."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, delay: float, callback: Callable[[], object]) -> Deadline:
        """Calls ``callback`` (in the watchdog thread) after ``delay`` seconds unless cancelled."""
        handle = Deadline(callback)
        when = time.monotonic() + delay
        with self._cv:
            if len(self._heap) > _SWEEP_AT:
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)
            earliest = self._heap[0][0] if self._heap else None
            heapq.heappush(self._heap, (when, next(self._seq), handle))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="cadet_magic-watchdog", daemon=True
                )
                self._thread.start()
            elif earliest is None or when < earliest:
                self._cv.notify()
        return handle

    def _loop(self) -> None:
        while True:
            with self._cv:
                while True:
                    while self._heap and self._heap[0][2].cancelled:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cv.wait()
                        continue
                    when, _, handle = self._heap[0]
                    left = when - time.monotonic()
                    if left <= 0:
                        heapq.heappop(self._heap)
                        break
                    self._cv.wait(left)
            callback = handle.callback
            if not handle.cancelled:
                try:
                    callback()
                except Exception:  # noqa: BLE001 - a failed interrupt must not stop the thread
                    pass
            # Hold no reference to a connection while waiting.
            callback = handle = None  # type: ignore[assignment]


#: The process-wide watchdog the runners use.
WATCHDOG = Watchdog()
