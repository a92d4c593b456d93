"""The failure categories of the diagnosis, one vocabulary for every phase (stdlib only).

Example:
    >>> Category("join_error") is Category.join_error, str(Category.timeout)
    (True, 'timeout')
"""

from __future__ import annotations

from enum import StrEnum


class Category(StrEnum):
    """What kind of failure an attempt had (a ``str``: compares equal to its value).

    One vocabulary for both phases: the SQL phase's failures (the engine's errors, the
    safety check, a reply without SQL) and those particular to the fallback phase (its two
    blocks, the simple-SELECT rule, the pandas code's check and run), which keep the SQL
    categories for the engine errors of their SELECT.

    Example:
        >>> Category("code_timeout") is Category.code_timeout, Category.no_sql == "no_sql"
        (True, True)
    """

    column_not_found = "column_not_found"
    table_not_found = "table_not_found"
    syntax_error = "syntax_error"
    type_mismatch = "type_mismatch"
    join_error = "join_error"
    aggregation_error = "aggregation_error"
    function_not_found = "function_not_found"
    division_by_zero = "division_by_zero"
    datetime_format = "datetime_format"
    timeout = "timeout"
    permission_denied = "permission_denied"
    connection_error = "connection_error"
    forbidden = "forbidden"
    multiple_statements = "multiple_statements"
    no_sql = "no_sql"
    unknown = "unknown"
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
