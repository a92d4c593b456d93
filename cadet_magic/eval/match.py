"""Execution match, as the evaluation scores an answer: the rule lives in the portable core
(:mod:`cadet_magic.vote.execution_match`), where the agent's vote compares its candidates' results the
same way; this module names it for the evaluation.

Example:
    >>> execution_match([(1, "a")], [("a", 1.0)], ordered=False)
    True
"""

from __future__ import annotations

from cadet_magic.vote.execution_match import (
    execution_match,
    has_outer_order,
    normalise,
    normalise_rows,
)

__all__ = ["execution_match", "has_outer_order", "normalise", "normalise_rows"]
