"""Live display hook (edge). Until the widget panel lands, no live display is shown."""

from __future__ import annotations

from typing import Any


def live_display(question: str) -> Any:
    """A live display for one question, or None where none is available."""
    return None
