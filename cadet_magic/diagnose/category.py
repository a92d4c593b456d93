"""The failure categories of the diagnosis, one vocabulary for every phase (stdlib only; the
engine errors' categories are :class:`~cadet_magic.errors.ErrorKind`'s members).

Example:
    >>> Category("join_error") is Category.join_error, str(Category.timeout)
    (True, 'timeout')
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from typing import TYPE_CHECKING

from cadet_magic.errors import ErrorKind

#: The diagnosis' own categories of the SQL phase, each placed before the error kind named
#: (the order of the SQL phase's categories is part of the contract).
_OWN_SQL: dict[ErrorKind, tuple[str, ...]] = {
    ErrorKind.multiple_statements: ("forbidden",),  # the safety check refused the query
    ErrorKind.unknown: ("no_sql",),  # the reply held no SQL
}


def _sql_members() -> Iterator[tuple[str, str]]:
    """(name, value) of the SQL phase's categories: every :class:`ErrorKind`, taken from it,
    with the diagnosis' own among them."""
    for kind in ErrorKind:
        for own in _OWN_SQL.get(kind, ()):
            yield own, own
        yield kind.name, kind.value


class Category(StrEnum):
    """What kind of failure an attempt had (a ``str``: compares equal to its value).

    One vocabulary for both phases: the SQL phase's failures (the engine's errors, whose
    categories are :class:`~cadet_magic.errors.ErrorKind`'s members, taken from it; the
    safety check; a reply without SQL) and those particular to the fallback phase (its two
    blocks, the simple-SELECT rule, the pandas code's check and run), which keep the SQL
    categories for the engine errors of their SELECT.

    Example:
        >>> Category("code_timeout") is Category.code_timeout, Category.no_sql == "no_sql"
        (True, True)
        >>> all(Category(k.value).name == k.name for k in ErrorKind)
        True
    """

    # The SQL phase's categories, built from ErrorKind (the class body's namespace takes them
    # as members, in order).
    vars().update(_sql_members())
    if TYPE_CHECKING:  # what the type checker cannot see of the line above (a test compares)
        column_not_found: Category
        table_not_found: Category
        syntax_error: Category
        type_mismatch: Category
        join_error: Category
        aggregation_error: Category
        function_not_found: Category
        division_by_zero: Category
        datetime_format: Category
        timeout: Category
        permission_denied: Category
        connection_error: Category
        forbidden: Category
        multiple_statements: Category
        no_sql: Category
        unknown: Category
    #: The query ran, but a string it filters on does not occur while a close value does.
    value_not_found = "value_not_found"
    #: The query ran, but does not compute what the question names (a median by ``AVG``).
    computation_missing = "computation_missing"
    # The fallback phase's own failures.
    no_blocks = "no_blocks"
    not_simple = "not_simple"
    too_many_rows = "too_many_rows"
    code_refused = "code_refused"
    python_error = "python_error"
    code_timeout = "code_timeout"
    code_memory = "code_memory"
    no_result = "no_result"
    bad_result = "bad_result"
    unavailable = "unavailable"

    def __str__(self) -> str:
        return self.value


#: Regenerating the SQL cannot fix these.
NOT_RETRYABLE = frozenset(
    {Category.permission_denied, Category.connection_error, Category.unavailable}
)
