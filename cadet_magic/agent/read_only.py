"""A request to change data, answered read-only (portable core: stdlib only).

cadet_magic runs one read-only query per answer: a question asking to remove, change or add
data ("Remove the cancelled orders, then show how many orders are left.") is answered with
what the data shows, and the answer says so in one line (:data:`READ_ONLY_NOTE`), so that no
one believes the data was changed. A question asks for a change (:func:`asks_for_a_change`)
when a clause of it begins with a verb that changes data (:data:`CHANGE_VERBS`, the plain
imperative form: "removed" or "the update date" do not count), or when the model wrote a
statement that changes data for it (an attempt refused as such: :func:`wrote_a_change`).

Example:
    >>> asks_for_a_change("Remove the cancelled orders, then show how many orders are left.")
    True
    >>> asks_for_a_change("How many orders were removed last year?")
    False
    >>> asks_for_a_change("Which products had a price drop? Then delete them.")
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: What an answer to a request to change data says.
READ_ONLY_NOTE = "Nothing was changed: cadet_magic only reads; this is what the data shows."

#: Verbs that change data, as a request begins with them.
CHANGE_VERBS = (
    "remove", "delete", "drop", "update", "insert", "add", "change", "set", "rename", "truncate",
    "erase", "wipe", "clear", "modify", "overwrite", "replace", "purge", "create", "alter",
    "merge", "upsert", "edit", "fix", "correct", "mark", "cancel", "archive", "move", "reset",
)  # fmt: skip

#: Words a request may put before its verb ("please", "first", "then", "now", "and").
_LEAD = r"(?:(?:please|first|then|now|and|also|just|go\s+ahead\s+and|can\s+you|could\s+you)\s+)*"
_CLAUSE = re.compile(
    r"(?:^|[.;:!?,]\s*|\bthen\s+|\band\s+then\s+)" + _LEAD + r"(" + "|".join(CHANGE_VERBS) + r")\b",
    re.IGNORECASE,
)
#: The first keyword of a statement that changes data or the schema.
_WRITE = re.compile(
    r"^\s*(?:with\b.*?\)\s*)?(delete|update|insert|drop|alter|create|truncate|merge|replace|"
    r"upsert|grant|revoke|attach|copy|vacuum)\b",
    re.IGNORECASE | re.DOTALL,
)


def asks_for_a_change(question: str) -> bool:
    """Whether a clause of ``question`` begins with a verb that changes data."""
    return _CLAUSE.search(question.strip()) is not None


def wrote_a_change(attempts: Iterable[Any]) -> bool:
    """Whether an attempt's SQL was a statement that changes data, refused by the check.

    Example:
        >>> from cadet_magic.result import Attempt
        >>> wrote_a_change([Attempt(1, "DELETE FROM orders", "refused"), Attempt(2, "SELECT 1")])
        True
    """
    return any(
        str(getattr(a, "outcome", "")) == "refused" and _WRITE.match(getattr(a, "sql", None) or "")
        for a in attempts
    )


def read_only_note(question: str, attempts: Iterable[Any]) -> str | None:
    """:data:`READ_ONLY_NOTE` when the question asked for a change (or the model wrote one),
    else None."""
    if asks_for_a_change(question) or wrote_a_change(attempts):
        return READ_ONLY_NOTE
    return None
