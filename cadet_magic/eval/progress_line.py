"""The evaluation's progress line: on a terminal a bar redrawn in place with the running
tally and the time left; in a log file one line per finished question with its verdict.

Example:
    >>> _hms(75), _hms(3725)
    ('1m15s', '1h02m')
"""

from __future__ import annotations

import time
from typing import IO

from cadet_magic.eval.data import Question
from cadet_magic.text import first_line


class Progress:
    """One status line while the evaluation runs: on a terminal a bar redrawn in place,
    otherwise (a log file) one line per finished question."""

    def __init__(self, total: int, stream: IO[str] | None) -> None:
        self.total, self.stream, self.done = total, stream, 0
        self.start = time.monotonic()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def update(self, mode: str, q: Question, rec: dict, tally: dict[str, list[int]]) -> None:
        self.done += 1
        if self.stream is None:
            return
        spent = time.monotonic() - self.start
        eta = spent / self.done * (self.total - self.done)
        right = " ".join(f"{m} {r}/{n}" for m, (r, n) in tally.items())
        if self.tty:
            width = 24
            full = int(width * self.done / max(self.total, 1))
            bar = "#" * full + "-" * (width - full)
            line = f"\r[{bar}] {self.done}/{self.total} right: {right} eta {_hms(eta)}  "
            self.stream.write(line[:200])
        else:
            verdict = (
                f"error: {first_line(rec['error'], 80, mark='...')}"
                if rec.get("error")
                else f"first {'right' if rec['first_match'] else 'wrong'}, "
                f"final {'right' if rec['final_match'] else 'wrong'}"
            )
            self.stream.write(
                f"[{self.done}/{self.total}] {mode} {q.db_id} #{q.index}: {verdict} "
                f"({rec['seconds']:.1f} s, {rec['calls']} call(s)); right: {right}; "
                f"eta {_hms(eta)}\n"
            )
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _hms(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m{rest % 60:02d}s"
