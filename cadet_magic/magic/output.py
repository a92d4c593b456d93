"""What the magics show besides an answer: a one-line :class:`Message`, the one line a failed
``%%ask`` raises as IPython's ``UsageError`` (:func:`usage_error`), what the live panel says a
question builds on, and the rows ``-o`` stores when pandas is missing.
"""

from __future__ import annotations

import logging
from typing import Any

from IPython.core.error import UsageError

from cadet_magic.errors import CadetError, ModelCallInterrupted, UnsupportedConnectionError

log = logging.getLogger("cadet_magic")


class Message:
    """One line of information for the user (``%cadet reset``); errors raise ``UsageError``."""

    def __init__(self, text: str, kind: str = "info") -> None:
        self.text = text
        self.kind = kind

    def __repr__(self) -> str:
        return self.text

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        from html import escape

        color = "var(--jp-error-color1,#c62828)" if self.kind == "error" else "inherit"
        return {
            "text/plain": self.text,
            "text/html": f"<div class='cadet-message' style='color:{color}'>{escape(self.text)}</div>",
        }


def running_context(followed: Any, recorded: Any) -> str:
    """What the panel says the question builds on while it runs."""
    if recorded is not None:
        return "Rerun of the recorded SQL: no model call"
    if followed is not None:
        return f"Following answer {followed.number}: {followed.question!r}"
    return ""


def rows_as_dicts(columns: list[str], rows: list[tuple]) -> list[dict[str, Any]]:
    """The answer's rows as dicts keyed by column name (what ``-o`` stores without pandas).

    >>> rows_as_dicts(["a", "b"], [(1, 2), (3, 4)])
    [{'a': 1, 'b': 2}, {'a': 3, 'b': 4}]
    """
    return [dict(zip(columns, row, strict=False)) for row in rows]


def usage_error(error: BaseException, label: str, con_name: str | None) -> UsageError:
    """The one line a failed ``%%ask`` shows for ``error`` (the kernel and the connection are
    as they were)."""
    if isinstance(error, UnsupportedConnectionError):
        return UsageError(str(UnsupportedConnectionError(error.value, name=con_name)))
    if isinstance(error, CadetError):
        return UsageError(str(error))
    if isinstance(error, ModelCallInterrupted):
        return UsageError(
            "Interrupted: the model call was stopped (no query was running); your "
            "connection is unchanged."
        )
    if isinstance(error, KeyboardInterrupt):
        return UsageError(
            "Interrupted: the running query was cancelled; your connection is unchanged."
        )
    log.debug("%%ask failed", exc_info=error)
    first = (str(error).strip().splitlines() or [""])[0][:300]
    return UsageError(
        f"{label} failed ({type(error).__name__}): {first}. Your connection is unchanged; "
        "check the options and the connection, then run the cell again."
    )
