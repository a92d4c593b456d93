"""What differs between engines that the diagnosis tells the model, kept with the dialects
(stdlib + sqlglot): each engine's date functions, its equivalents of the foreign functions
models reach for, the constructs it lacks and whether it compares quoted names' case. The
diagnosis asks a :class:`~cadet_magic.sql.target.Target` for them (``target.facts``), never an
engine's name.

Example:
    >>> facts_for("sqlite").case_sensitive, facts_for("postgres").case_sensitive
    (False, True)
    >>> facts_for("postgres").function_equivalents["nvl"], facts_for("").date_functions
    ('coalesce', None)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from sqlglot import exp

#: A construct an engine lacks: (the test of a sqlglot node, its name, what to write instead).
Unsupported = tuple[Callable[[exp.Expression], bool], str, str]


@dataclass(frozen=True)
class EngineFacts:
    """What the diagnosis needs to know of one engine's SQL.

    Attributes:
        date_functions: the engine's date functions as the feedback names them (None: none
            known).
        function_equivalents: a foreign function's name (lower case) -> the engine's way.
        unsupported: the constructs the engine lacks, in the order they are looked for.
        case_sensitive: a quoted identifier must match the stored name's case exactly (an
            unquoted one is folded).
    """

    date_functions: str | None = None
    function_equivalents: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    unsupported: tuple[Unsupported, ...] = ()
    case_sensitive: bool = False


#: The date functions of each dialect, as the feedback names them.
_DATE_FUNCTIONS: dict[str, str] = {
    "duckdb": "DuckDB: CAST(x AS DATE), strptime(x, '%Y-%m-%d'), strftime(x, '%Y'), "
    "date_trunc('month', x), x + INTERVAL 1 DAY",
    "sqlite": "SQLite stores dates as text 'YYYY-MM-DD': date(x), strftime('%Y', x), "
    "date(x, '+1 day'), julianday(a) - julianday(b)",
    "postgres": "PostgreSQL: x::date, to_date(x, 'YYYY-MM-DD'), to_char(x, 'YYYY'), "
    "EXTRACT(YEAR FROM x), date_trunc('month', x), x + INTERVAL '1 day'",
    "mysql": "MySQL/MariaDB: CAST(x AS DATE), str_to_date(x, '%Y-%m-%d'), "
    "date_format(x, '%Y'), YEAR(x), x + INTERVAL 1 DAY, datediff(a, b)",
}


#: Foreign functions models reach for, and each dialect's own way to say it.
_FUNCTION_EQUIVALENTS: dict[str, dict[str, str]] = {
    "duckdb": {
        "nvl": "coalesce",
        "isnull": "coalesce",
        "nvl2": "CASE WHEN ... IS NOT NULL",
        "date_format": "strftime",
        "to_char": "strftime",
        "to_date": "strptime",
        "str_to_date": "strptime",
        "dateadd": "date_add or + INTERVAL",
        "getdate": "now",
        "sysdate": "now",
        "curdate": "current_date",
        "charindex": "strpos",
        "iif": "CASE WHEN",
        "substring_index": "split_part",
        "julianday": "date_diff",
        "add_months": "+ INTERVAL",
        "months_between": "date_diff('month', a, b)",
        "regexp_like": "regexp_matches",
    },
    "sqlite": {
        "nvl": "coalesce",
        "isnull": "coalesce",
        "date_format": "strftime",
        "to_char": "strftime",
        "year": "strftime('%Y', x)",
        "month": "strftime('%m', x)",
        "day": "strftime('%d', x)",
        "len": "length",
        "concat": "||",
        "getdate": "datetime('now')",
        "now": "datetime('now')",
        "curdate": "date('now')",
        "dateadd": "date(x, '+N days')",
        "datediff": "julianday(a) - julianday(b)",
        "date_trunc": "strftime",
        "extract": "strftime",
        "charindex": "instr",
        "left": "substr",
        "right": "substr",
        "to_date": "date",
        "str_to_date": "date",
        "lcase": "lower",
        "ucase": "upper",
        "substring_index": "substr and instr",
        "datepart": "strftime",
    },
    "postgres": {
        "nvl": "coalesce",
        "ifnull": "coalesce",
        "isnull": "coalesce",
        "iif": "CASE WHEN",
        "date_format": "to_char",
        "strftime": "to_char",
        "year": "EXTRACT(YEAR FROM x)",
        "month": "EXTRACT(MONTH FROM x)",
        "day": "EXTRACT(DAY FROM x)",
        "len": "length",
        "getdate": "now",
        "sysdate": "now",
        "curdate": "current_date",
        "dateadd": "x + INTERVAL '1 day'",
        "datediff": "a - b",
        "charindex": "strpos",
        "instr": "strpos",
        "julianday": "EXTRACT(EPOCH FROM x)",
        "lcase": "lower",
        "ucase": "upper",
        "substring_index": "split_part",
        "group_concat": "string_agg",
        "datepart": "date_part",
        "str_to_date": "to_date",
        "add_months": "+ INTERVAL",
    },
    "mysql": {
        "strftime": "date_format",
        "to_char": "date_format",
        "to_date": "str_to_date",
        "strptime": "str_to_date",
        "date_trunc": "date_format(x, '%Y-%m-01')",
        "date_part": "EXTRACT(YEAR FROM x)",
        "datepart": "EXTRACT(YEAR FROM x)",
        "dateadd": "date_add(x, INTERVAL 1 DAY)",
        "date_diff": "datediff",
        "julianday": "to_days",
        "getdate": "now",
        "iif": "if",
        "nvl": "ifnull",
        "isnull": "ifnull",
        "len": "char_length",
        "charindex": "locate",
        "strpos": "locate",
        "string_agg": "group_concat",
        "listagg": "group_concat",
        "split_part": "substring_index",
        "regexp_like": "x REGEXP pattern",
        "regexp_matches": "x REGEXP pattern",
    },
}


#: Constructs some engines lack: dialect -> [(sqlglot node test, name, alternative)].
_UNSUPPORTED: dict[str, list[Unsupported]] = {
    "sqlite": [
        (lambda n: isinstance(n, exp.Any), "ANY (subquery)",
         "compare with the subquery's MAX or MIN: x < ANY (SELECT y ...) is x < (SELECT MAX(y) ...); = ANY is IN"),
        (lambda n: isinstance(n, exp.All), "ALL (subquery)",
         "compare with the subquery's MAX or MIN: x > ALL (SELECT y ...) is x > (SELECT MAX(y) ...)"),
        (lambda n: isinstance(n, exp.Distinct) and n.args.get("on") is not None,
         "DISTINCT ON", "number the rows with ROW_NUMBER() OVER (PARTITION BY ...) in a CTE and keep row 1"),
        (lambda n: isinstance(n, exp.Qualify), "QUALIFY",
         "compute the window function in a CTE, then filter it with WHERE"),
        (lambda n: isinstance(n, exp.Lateral), "LATERAL", "write a correlated subquery or a CTE"),
    ],
    "postgres": [
        (lambda n: isinstance(n, exp.Qualify), "QUALIFY",
         "compute the window function in a CTE, then filter it with WHERE"),
    ],
}  # fmt: skip


#: Dialects where a quoted identifier must match the stored name's case exactly (and an
#: unquoted one is folded). SQLite, DuckDB and MySQL resolve column names ignoring case.
_CASE_SENSITIVE = frozenset({"postgres", "redshift", "snowflake", "oracle", "trino", "presto"})


@lru_cache(maxsize=64)
def facts_for(key: str) -> EngineFacts:
    """The facts of the dialect named ``key`` (a :attr:`Target.key`; none known: empty ones)."""
    return EngineFacts(
        date_functions=_DATE_FUNCTIONS.get(key),
        function_equivalents=MappingProxyType(_FUNCTION_EQUIVALENTS.get(key, {})),
        unsupported=tuple(_UNSUPPORTED.get(key, ())),
        case_sensitive=key in _CASE_SENSITIVE,
    )
