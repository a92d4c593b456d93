"""The safety check's refusal as an error object the diagnosis can read (stdlib only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class SafetyRefusal(Exception):
    """The safety check refused the SQL; ``issues`` are its :class:`Issue` objects."""

    def __init__(self, issues: Sequence[Any]) -> None:
        self.issues = list(issues)
        super().__init__("; ".join(i.message for i in self.issues) or "Refused by the safety check")

    @property
    def codes(self) -> list[str]:
        return [i.code for i in self.issues]
