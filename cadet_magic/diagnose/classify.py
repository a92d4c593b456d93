"""The diagnosis's public face: an engine error (or a safety refusal) -> a :class:`Diagnosis`.

:func:`diagnose_error` is the one entry point; the category rules live in
:mod:`cadet_magic.diagnose.rules` (engine error -> category, priority ordered), the category
and diagnosis types in :mod:`cadet_magic.diagnose.model`. Nothing here is imported back by
those modules, so the package has no import cycle.

Example:
    >>> d = diagnose_error("no such column: amout", sql="SELECT amout FROM orders",
    ...                    dialect="sqlite", schema={"orders": ["amount", "status"]})
    >>> d.category, d.retryable, d.suggestions[:1]
    (<Category.column_not_found: 'column_not_found'>, True, ['orders.amount'])
"""

from __future__ import annotations

from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis
from cadet_magic.diagnose.router import diagnose_error
from cadet_magic.diagnose.rules import RULES, Rule, classify

__all__ = ["NOT_RETRYABLE", "RULES", "Category", "Diagnosis", "Rule", "classify", "diagnose_error"]
