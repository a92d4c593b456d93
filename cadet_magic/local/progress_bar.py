"""A progress bar for the installer, on one line of a terminal, as a few lines elsewhere.

On a terminal the line is redrawn at most five times a second; in a log (a CI job, a notebook's
``!`` cell) a line is written at every tenth of the way, so the log stays short.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> bar = Progress(4 * 2**20, "model", stream=out)
    >>> for _ in range(4):
    ...     bar.update(2**20)
    >>> bar.close()
    >>> out.getvalue().splitlines()[-1].split(" MB")[0]
    'model: 100% 4.2 / 4.2'
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30


def megabytes(n: int) -> str:
    """Bytes in MB (10^6), one decimal.

    >>> megabytes(1_117_320_768)
    '1117.3'
    """
    return f"{n / 1e6:.1f}"


class Progress:
    """Bytes done of ``total``, with the rate since the start."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, done: int = 0) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.done = done
        self.start_done = done
        self.started = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = 0.0
        self._tenth = done * 10 // self.total

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.tty:
            if now - self._drawn >= 0.2 or self.done >= self.total:
                self._drawn = now
                self.stream.write("\r" + self.line(now))
                self.stream.flush()
        else:
            tenth = self.done * 10 // self.total
            if tenth > self._tenth:
                self._tenth = tenth
                self.stream.write(self.line(now) + "\n")
                self.stream.flush()

    def line(self, now: float) -> str:
        share = min(self.done / self.total, 1.0)
        seconds = max(now - self.started, 1e-6)
        rate = (self.done - self.start_done) / seconds / 1e6
        bar = "#" * int(share * WIDTH) + "." * (WIDTH - int(share * WIDTH))
        shown = f"{self.label}: {share:4.0%} {megabytes(self.done)} / {megabytes(self.total)} MB"
        return f"{shown} [{bar}] {rate:.0f} MB/s" if self.tty else f"{shown}, {rate:.0f} MB/s"

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r" + self.line(time.monotonic()) + "\n")
        elif self.done * 10 // self.total == self._tenth and self.done < self.total:
            self.stream.write(self.line(time.monotonic()) + "\n")
        self.stream.flush()
