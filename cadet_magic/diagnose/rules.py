"""Engine error -> category, checked in priority order, most specific first (stdlib only).

Each rule keys on what engines keep stable: the SQLSTATE, the kind the error is classed by
(DuckDB ``BinderException``, PostgreSQL ``GroupingError``, a Spark condition ...), the engine's
own code (SQLite's error names) and
the message *prefix* ("must appear in the GROUP BY clause", "no such column"), never on the
whole text. System errors come first, then the specific SQL errors before the generic ones,
so that "column x must appear in the GROUP BY clause" is an aggregation error, not a column
error.

Example:
    >>> from cadet_magic.diagnose.error_info import read_error
    >>> classify(read_error('column "orders.status" must appear in the GROUP BY clause'))
    <Category.aggregation_error: 'aggregation_error'>
    >>> classify(read_error("no such column: amout")).value
    'column_not_found'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from cadet_magic.diagnose.error_info import ErrorInfo
from cadet_magic.diagnose.model import Category

__all__ = ["RULES", "Rule", "classify"]


@dataclass(frozen=True)
class Rule:
    """One category's signature; matches if any of its keys does."""

    category: Category
    sqlstates: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    pattern: str | None = None
    check: Callable[[ErrorInfo], bool] | None = None

    def matches(self, info: ErrorInfo) -> bool:
        if info.sqlstate and any(info.sqlstate.startswith(s) for s in self.sqlstates):
            return self.check(info) if self.check else True
        if any(c in self.classes for c in info.classes):
            return self.check(info) if self.check else True
        if info.code and info.code in self.codes:
            return True
        if self.pattern and re.search(self.pattern, info.primary, re.I):
            return self.check(info) if self.check else True
        return False


def _is_operator(info: ErrorInfo) -> bool:
    return bool(re.match(r"operator does not exist", info.primary, re.I))


def _is_function(info: ErrorInfo) -> bool:
    return not _is_operator(info)


_NUMBER_ONLY = re.compile(r"(Could not convert string|invalid input syntax for type) ", re.I)
_DATETIME_WORDS = re.compile(
    r"\b(date|time|timestamp|timestamptz|interval|datestyle|time zone)\b|date/time", re.I
)


def _spark_datetime(info: ErrorInfo) -> bool:
    """Spark's cast of a malformed value to a date or timestamp (``CAST_INVALID_INPUT``)."""
    target = str((info.details.get("parameters") or {}).get("targetType", "")).upper()
    return (
        "DATE" in target or "TIMESTAMP" in target or "DATETIME" in info.details.get("condition", "")
    )


def _is_datetime(info: ErrorInfo) -> bool:
    """A conversion error whose target is a date, time, timestamp or interval."""
    text = info.primary
    if re.search(r"date field|timestamp field|time field|date/time|datestyle", text, re.I):
        return True
    m = re.search(r"\bto (\w+)|for type ([\w ]+?):", text, re.I)
    target = (m.group(1) or m.group(2)) if m else ""
    return bool(_DATETIME_WORDS.search(target or ""))


#: Priority order: the first matching rule wins.
RULES: tuple[Rule, ...] = (
    # 1. System errors.
    Rule(
        Category.timeout,
        sqlstates=("57014",),
        classes=("QueryTimeout", "QueryCanceled", "QueryCanceledError", "InterruptException")
        + ("OPERATION_CANCELED",),  # Spark
        codes=("SQLITE_INTERRUPT",),
        pattern=r"^interrupted\b|statement timeout|canceling statement|timed? ?out\b|"
        r"^INTERRUPT Error|query (was )?cancel",
    ),
    Rule(
        Category.connection_error,
        sqlstates=("08", "57P01", "57P02", "57P03", "53300"),
        classes=("ConnectionException", "ConnectionTimeout", "InterfaceError"),
        codes=("SQLITE_CANTOPEN", "SQLITE_NOTADB", "SQLITE_CORRUPT"),
        pattern=r"connection (refused|closed|reset|failed|already closed|to server)|"
        r"server closed the connection|could not connect|unable to open database|"
        r"no connection|terminating connection|database is closed|"
        r"closed (database|connection)|connection is closed",
    ),
    Rule(
        Category.permission_denied,
        sqlstates=("42501", "25006", "28"),
        classes=("PermissionException", "InsufficientPrivilege", "ReadOnlySqlTransaction"),
        codes=("SQLITE_AUTH", "SQLITE_READONLY", "SQLITE_PERM"),
        pattern=r"permission denied|not authorized|read-only (transaction|mode)|readonly database|"
        r"^Permission Error|access denied|insufficient privilege",
    ),
    # 2. Refusals the engine makes on the shape of the request.
    Rule(
        Category.multiple_statements,
        pattern=r"only execute one statement|cannot insert multiple commands|"
        r"multiple statements|more than one statement",
    ),
    # 3. Specific SQL errors (their texts mention columns too: they must come first).
    Rule(
        Category.aggregation_error,
        sqlstates=("42803",),
        classes=("GroupingError",)
        + (
            "MISSING_AGGREGATION",
            "MISSING_GROUP_BY",
            "GROUP_BY_AGGREGATE",
            "GROUP_BY_POS_AGGREGATE",
        )
        + ("INVALID_WHERE_CONDITION", "NESTED_AGGREGATE_FUNCTION"),  # Spark
        pattern=r"must appear in the GROUP BY|cannot contain aggregates|misuse of (?:aliased )?aggregate|"
        r"aggregate functions? (calls )?(are|is) not allowed|aggregate function calls cannot|"
        r"cannot be nested|not in GROUP BY|GROUP BY clause cannot contain|"
        r"must be part of an aggregate|window functions are not allowed in|"
        r"misuse of window function",
    ),
    Rule(
        Category.join_error,
        sqlstates=("42702", "42P09", "42712"),
        classes=("AmbiguousColumn", "AmbiguousAlias", "DuplicateAlias")
        + ("AMBIGUOUS_REFERENCE", "AMBIGUOUS_COLUMN_OR_FIELD", "AMBIGUOUS_LATERAL_COLUMN_ALIAS"),
        pattern=r"ambiguous|specified more than once|duplicate alias|"
        r"duplicate table (name|alias)|is not unique",
    ),
    Rule(
        Category.column_not_found,
        sqlstates=("42703",),
        classes=("UndefinedColumn", "UNRESOLVED_COLUMN", "UNRESOLVED_FIELD"),
        pattern=r"^no such column|Referenced column .* not found|does not have a column named|"
        r"^column .* does not exist|^column .* not found|has no column named|"
        r"Values list .* does not have a column",
    ),
    Rule(
        Category.table_not_found,
        sqlstates=("42P01", "3F000"),
        classes=("UndefinedTable", "InvalidSchemaName", "TABLE_OR_VIEW_NOT_FOUND"),
        pattern=r"^no such table|^Table with name .* does not exist|relation .* does not exist|"
        r"^Referenced table .* not found|missing FROM-clause entry|^table .* does not exist|"
        r"^Schema with name .* does not exist|^View with name .* does not exist|"
        r"^no such schema|^unknown database",
    ),
    Rule(
        Category.division_by_zero,
        sqlstates=("22012",),
        classes=("DivisionByZero", "DIVIDE_BY_ZERO"),
        pattern=r"division by zero|divide by zero|divided by zero",
    ),
    Rule(
        Category.datetime_format,
        sqlstates=("22007", "22008", "22009"),
        classes=("InvalidDatetimeFormat", "DatetimeFieldOverflow", "CAST_INVALID_INPUT")
        + ("INCONSISTENT_BEHAVIOR_CROSS_VERSION",),
        pattern=r"date field|timestamp field|time field|date/time|datestyle|"
        r"invalid (date|time|timestamp)|(Could not convert|invalid input syntax for type) .*",
        check=lambda info: (
            bool(info.sqlstate and info.sqlstate.startswith("2200"))
            or any(c in ("InvalidDatetimeFormat", "DatetimeFieldOverflow") for c in info.classes)
            or _is_datetime(info)
            or _spark_datetime(info)
        ),
    ),
    Rule(
        Category.function_not_found,
        sqlstates=("42883",),
        classes=("UndefinedFunction", "UNRESOLVED_ROUTINE", "WRONG_NUM_ARGS"),
        pattern=r"^no such function|^(Scalar|Table|Aggregate|Pragma|Macro) Function with name|"
        r"^function .* does not exist|^Function with name",
        check=lambda info: _is_function(info) and not _wrong_argument_types(info),
    ),
    Rule(
        Category.type_mismatch,
        sqlstates=("22P02", "42804", "42883", "22003", "22018", "42846", "22023"),
        classes=("ConversionException", "MismatchTypeException", "InvalidTextRepresentation")
        + ("DATATYPE_MISMATCH", "CAST_INVALID_INPUT", "CAST_OVERFLOW", "INVALID_FORMAT"),
        codes=("SQLITE_MISMATCH",),
        pattern=r"could not convert|cannot compare|no function matches|operator does not exist|"
        r"invalid input syntax|cannot be cast|cannot cast|type mismatch|datatype mismatch|"
        r"argument of .* must be type|must be type|Mismatch Type|out of range for type|"
        r"No operator matches|Unimplemented type for cast|Conversion Error|"
        r"^function \w+\(.*\) does not exist",
    ),
    # 4. Generic.
    Rule(
        Category.syntax_error,
        sqlstates=("42601", "42P10", "42000"),
        classes=(
            "ParserException",
            "SyntaxError",
            "ParseError",
            "TokenError",
            "PARSE_SYNTAX_ERROR",
        ),
        pattern=r"syntax error|^incomplete input|unrecognized token|^Parser Error|"
        r"unterminated|unexpected end|near \".*\"|must have an alias",
    ),
)

#: Built-in functions that exist on every engine we read: "no function matches" on one of
#: them means wrong argument types (type_mismatch), not a missing function.
_COMMON_FUNCTIONS = frozenset(
    "abs avg ceil ceiling coalesce concat count date_part date_trunc extract floor greatest "
    "least length lower ltrim max min nullif position replace round rtrim sign sqrt strpos "
    "substr substring sum trim trunc upper left right lpad rpad split_part to_char to_date "
    "to_timestamp now age length char_length octet_length md5 power mod log ln exp".split()
)


def _wrong_argument_types(info: ErrorInfo) -> bool:
    """PostgreSQL/DuckDB name a real function whose argument types did not match."""
    m = re.match(r"^function (\w+)\(", info.primary, re.I)
    if m and m.group(1).lower() in _COMMON_FUNCTIONS:
        return True
    return bool(re.search(r"No function matches the given name and argument types '", info.primary))


def classify(info: ErrorInfo) -> Category:
    """The category of an engine error, by the first matching rule of :data:`RULES`.

    Args:
        info: the error as read by :func:`cadet_magic.diagnose.error_info.read_error`.

    Returns:
        The category; :attr:`Category.unknown` when no rule matches.

    Example:
        >>> from cadet_magic.diagnose.error_info import read_error
        >>> classify(read_error("Conversion Error: invalid date field format: \\"01/02/2024\\""))
        <Category.datetime_format: 'datetime_format'>
    """
    for rule in RULES:
        if rule.matches(info):
            return rule.category
    return Category.unknown
