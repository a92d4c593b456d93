"""The diagnosis vocabulary: failure categories and the Diagnosis record (stdlib only).

Example:
    >>> Category("join_error") is Category.join_error, str(Category.timeout)
    (True, 'timeout')
    >>> Diagnosis(Category.connection_error, retryable=False).retryable
    False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cadet_magic.diagnose.category import NOT_RETRYABLE, Category
from cadet_magic.diagnose.found import Found, found

__all__ = ["NOT_RETRYABLE", "Category", "Diagnosis", "Found"]


@dataclass(frozen=True)
class Diagnosis:
    """What went wrong and what to tell the model.

    Attributes:
        category: the failure category.
        retryable: whether another model attempt can fix it.
        details: what the diagnosis found, as its category's typed record
            (:class:`~cadet_magic.diagnose.found.Found` or the category's own: the name it is
            about, where, the marks the feedback needs, ...).
        suggestions: ranked real names (``table.column`` or ``table``; functions for
            function_not_found), best first.
        feedback: the text for the model (the failed SQL plus a short, specific fix).
        outcome: what the attempt's record says happened (an ``Outcome`` value).
        error: the message the attempt's record shows (the engine's own words, one problem
            per failure), or None.
        exception: the original exception (class, SQLSTATE, driver attributes), when an
            exception caused the failure.
    """

    category: Any
    retryable: bool
    details: Found = field(default_factory=Found)
    suggestions: list[str] = field(default_factory=list)
    feedback: str = ""
    outcome: str = "error"
    error: str | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.details == Found() and self.category != Category.unknown:
            # nothing found beyond the category: the category's own (empty) record
            object.__setattr__(self, "details", found(Category(self.category)))
