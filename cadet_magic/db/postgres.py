"""PostgreSQL through psycopg (3 or 2), for the SQLAlchemy runner: the catalog queries, the
settings pinned in the agent's transaction, the server-side bound on what a query sends, and
psycopg's errors read into one portable :class:`EngineError` (no driver imported here).

Example:
    >>> pg_kind(23), pg_kind(25), pg_kind(114)
    ('fixed', 'text', 'other')
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.db.base import read_exception
from cadet_magic.db.error_table import ErrorTable, Name, Reading, Rule, Said, Value, datetime_state
from cadet_magic.errors import EngineError, ErrorKind, Fact, exception_chain
from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table

# PostgreSQL catalog queries: the relations visible through the session's search_path
# (what an unqualified name resolves to, temporary tables included), not the system catalogs.
_PG_RELATIONS = (
    "relkind IN ('r', 'v', 'm', 'p', 'f') AND NOT relispartition "
    "AND relnamespace NOT IN (SELECT oid FROM pg_namespace "
    "WHERE nspname IN ('pg_catalog', 'information_schema')) AND pg_table_is_visible(oid)"
)
#: One row that changes with every table, column, key or comment visible through the
#: search_path: the path itself, row counts and xmin sums of the catalog rows.
PG_FINGERPRINT_SQL = f"""
WITH cls AS (SELECT oid, xmin FROM pg_class WHERE {_PG_RELATIONS})
SELECT current_setting('search_path'), current_schemas(true)::text,
  (SELECT count(*) || ':' || coalesce(sum(xmin::text::bigint), 0) FROM cls),
  (SELECT count(*) || ':' || coalesce(sum(a.xmin::text::bigint), 0)
     FROM pg_attribute a WHERE a.attrelid IN (SELECT oid FROM cls)),
  (SELECT count(*) || ':' || coalesce(sum(d.xmin::text::bigint), 0)
     FROM pg_description d WHERE d.objoid IN (SELECT oid FROM cls)),
  (SELECT count(*) || ':' || coalesce(sum(k.xmin::text::bigint), 0)
     FROM pg_constraint k WHERE k.conrelid IN (SELECT oid FROM cls))
"""
PG_COLUMNS_SQL = f"""
SELECT c.oid, c.relname, c.relkind, obj_description(c.oid, 'pg_class'), a.attnum, a.attname,
       format_type(a.atttypid, a.atttypmod), col_description(c.oid, a.attnum)
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
WHERE c.oid IN (SELECT oid FROM pg_class WHERE {_PG_RELATIONS})
  AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
"""
PG_KEYS_SQL = f"""
SELECT k.conrelid, k.contype, k.conkey, k.confkey, k.confrelid, r.relname,
       pg_table_is_visible(r.oid), n.nspname
FROM pg_constraint k
LEFT JOIN pg_class r ON r.oid = k.confrelid
LEFT JOIN pg_namespace n ON n.oid = r.relnamespace
WHERE k.contype IN ('p', 'f')
  AND k.conrelid IN (SELECT oid FROM pg_class WHERE {_PG_RELATIONS})
ORDER BY k.conrelid, k.conname
"""

#: Each view visible through the search_path and its query (its definition, as the catalog
#: keeps it); and each foreign table whose wrapper reads files or runs programs (file_fdw),
#: which the agent never reads (:mod:`cadet_magic.sql.views`).
PG_VIEWS_SQL = f"""
SELECT c.relname, pg_get_viewdef(c.oid) FROM pg_class c
WHERE c.relkind = 'v' AND c.oid IN (SELECT oid FROM pg_class WHERE {_PG_RELATIONS})
UNION ALL
SELECT c.relname, NULL FROM pg_class c
JOIN pg_foreign_table ft ON ft.ftrelid = c.oid
JOIN pg_foreign_server s ON s.oid = ft.ftserver
JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
WHERE c.relkind = 'f' AND w.fdwname = 'file_fdw'
  AND c.oid IN (SELECT oid FROM pg_class WHERE {_PG_RELATIONS})
"""
#: Why a foreign table of file_fdw is withheld from the agent.
FILE_FDW = "a foreign table of file_fdw reads a file or runs a program on the server"

#: libpq transaction states (``connection.info.transaction_status`` in psycopg 3 and psycopg2).
PG_IDLE, PG_INERROR = 0, 3

#: Inside the agent's transaction, the settings that change how SQL text is read or
#: resolved, pinned to what the safety check assumes (one round trip, undone by the
#: rollback): backslashes are literal in '...' strings; ``x = NULL`` is never rewritten
#: to ``IS NULL``; array literals read NULL; dates read and print as ISO, month before day;
#: intervals in PostgreSQL style; built-in functions resolve before any schema's.
PG_PINS = (
    "SELECT set_config('standard_conforming_strings', 'on', true), "
    "set_config('backslash_quote', 'safe_encoding', true), "
    "set_config('transform_null_equals', 'off', true), "
    "set_config('array_nulls', 'on', true), "
    "set_config('DateStyle', 'ISO, MDY', true), "
    "set_config('IntervalStyle', 'postgres', true), "
    "set_config('search_path', concat_ws(', ', 'pg_catalog', "
    "nullif(current_setting('search_path'), '')), true)"
)


def pg_transaction_status(raw: Any) -> int | None:
    """libpq's transaction status of a psycopg (3 or 2) connection, or None for other drivers."""
    info = getattr(raw, "info", None)
    status = getattr(info, "transaction_status", None)
    return None if status is None else int(status)


def pg_schema_from_rows(col_rows: list, key_rows: list) -> tuple[Schema, set[str]]:
    """The schema (and the names of its views) from the rows of the pg_catalog queries."""
    names: dict[int, dict[int, str]] = {}
    info: dict[int, tuple[str, str, str | None]] = {}
    columns: dict[int, list[tuple[str, str, str | None]]] = {}
    for oid, rel, kind, comment, attnum, att, typ, col_comment in col_rows:
        info[oid] = (rel, kind, comment)
        names.setdefault(oid, {})[attnum] = att
        columns.setdefault(oid, []).append((att, typ, col_comment))
    pks: dict[int, set[str]] = {}
    fks: dict[int, list[ForeignKey]] = {}
    for rel, kind, conkey, confkey, ref_oid, ref_name, same_ns, ref_ns in key_rows:
        own = [names.get(rel, {}).get(n, "") for n in conkey or ()]
        if kind == "p":
            pks.setdefault(rel, set()).update(own)
        elif ref_name:
            ref_cols = names.get(ref_oid)
            if ref_cols is None:  # another schema: its column names are not loaded
                ref = tuple(str(n) for n in confkey or ())
            else:
                ref = tuple(ref_cols.get(n, "") for n in confkey or ())
            target = ref_name if same_ns else f"{ref_ns}.{ref_name}"
            fks.setdefault(rel, []).append(ForeignKey(tuple(own), target, ref))
    tables = tuple(
        Table(
            name=info[oid][0],
            columns=tuple(
                Column(c, typ or "", c in pks.get(oid, ()), cc or None) for c, typ, cc in cols
            ),
            foreign_keys=tuple(fks.get(oid, ())),
            comment=info[oid][2] or None,
        )
        for oid, cols in columns.items()
    )
    views = {info[oid][0] for oid in columns if info[oid][1] in ("v", "m")}
    return Schema(tables=tables, dialect="postgres"), views


#: PostgreSQL type OIDs of small fixed-size values (bool, integers, floats, oid, dates and
#: times, interval, uuid) and of text and binary values.
_PG_FIXED = frozenset({16, 20, 21, 23, 26, 700, 701, 1082, 1083, 1114, 1184, 1186, 1266, 2950})
_PG_TEXT = frozenset({17, 18, 19, 25, 1042, 1043})


#: The marker of the server's refusal of a row larger than the byte budget, and its one line.
ROW_TOO_LARGE = "cadet_magic_row_larger_than_the_result_budget"
ROW_TOO_LARGE_LINE = (
    "A row of the result is larger than the result budget: ask for fewer or shorter values, "
    "or raise %config AskMagic.result_bytes."
)
#: PostgreSQL's own errors for a value beyond its 1 GB limit (raised while the guard measures
#: or copies such a row).
PG_VALUE_TOO_LARGE = ("invalid memory alloc request size", "Cannot enlarge string buffer")
#: Columns :func:`pg_bounded_sql` adds after the query's own (stripped before anything sees them).
GUARD_COLUMNS = 2


def pg_bounded_sql(sql: str, budget: int) -> str:
    """``sql`` wrapped so that the server itself bounds what it sends: a row whose values
    take more than ``budget`` bytes (``pg_column_size`` of the row as the query produced it,
    values decompressed) fails (:data:`ROW_TOO_LARGE`) before it is sent, and no row
    is sent once the rows before it hold more than ``budget`` bytes (so the client receives
    at most about twice the budget, however large the values the query builds; the byte
    budget of the fetch then cuts the answer). Two columns are added after the query's own
    (:data:`GUARD_COLUMNS`); the row order is the query's.

    Example:
        >>> print(pg_bounded_sql("SELECT 1 LIMIT 2", 100))  # doctest: +NORMALIZE_WHITESPACE
        SELECT * FROM (SELECT cadet_m.*, sum(cadet_magic_size) OVER (ROWS BETWEEN UNBOUNDED
        PRECEDING AND 1 PRECEDING) AS cadet_magic_before FROM (SELECT cadet_r.*,
        pg_column_size(cadet_r) AS cadet_magic_size FROM (
        SELECT 1 LIMIT 2
        ) AS cadet_r) AS cadet_m) AS cadet_s WHERE coalesce(cadet_magic_before, 0) <= 100 AND
        CAST(CASE WHEN cadet_magic_size > 100 THEN 'cadet_magic_row_larger_than_the_result_budget'
        ELSE '0' END AS int) = 0
    """
    budget = int(budget)
    return (
        "SELECT * FROM (SELECT cadet_m.*, sum(cadet_magic_size) OVER (ROWS BETWEEN UNBOUNDED "
        "PRECEDING AND 1 PRECEDING) AS cadet_magic_before FROM (SELECT cadet_r.*, "
        f"pg_column_size(cadet_r) AS cadet_magic_size FROM (\n{sql}\n) AS cadet_r) "
        f"AS cadet_m) AS cadet_s WHERE coalesce(cadet_magic_before, 0) <= {budget} AND "
        f"CAST(CASE WHEN cadet_magic_size > {budget} THEN '{ROW_TOO_LARGE}' "
        "ELSE '0' END AS int) = 0"
    )


def without_guard(fetchmany: Any) -> Any:
    """``fetchmany`` returning the rows without :func:`pg_bounded_sql`'s added columns."""

    def fetch(n: int) -> list:
        return [tuple(r)[:-GUARD_COLUMNS] for r in fetchmany(n)]

    return fetch


def pg_kind(type_oid: object) -> str:
    """A PostgreSQL result column's type OID as ``"fixed"``, ``"text"`` or ``"other"``."""
    if type_oid in _PG_FIXED:
        return "fixed"
    return "text" if type_oid in _PG_TEXT else "other"


def server_cursors(raw: Any) -> bool:
    """Whether the driver offers server-side (named) cursors here: psycopg 3 always,
    psycopg2 only outside autocommit (it refuses a named cursor there)."""
    module = type(raw).__module__
    if module.startswith("psycopg2"):
        return not getattr(raw, "autocommit", False)
    return module.startswith("psycopg")


def pg_cancel(raw: Any) -> None:
    """Asks the server to cancel what the connection runs (quietly: it may be over)."""
    cancel = getattr(raw, "cancel", None)
    if cancel is not None:
        try:
            cancel()
        except Exception:  # noqa: BLE001
            pass


def postgres_error(error: BaseException) -> EngineError:
    """A psycopg (3 or 2) error, raw or SQLAlchemy-wrapped, as an :class:`EngineError`: its
    SQLSTATE (``sqlstate`` / ``pgcode``), PostgreSQL's HINT and the statement position
    (``diag``); other drivers' errors by their words and classes."""
    sqlstate = hint = position = None
    for e in exception_chain(error):
        state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
        if isinstance(state, str) and re.fullmatch(r"[0-9A-Z]{5}", state) and sqlstate is None:
            sqlstate = state
        diag = getattr(e, "diag", None)
        if diag is not None:
            hint = getattr(diag, "message_hint", None) or hint
            pos = getattr(diag, "statement_position", None)
            if pos:
                try:
                    position = int(pos)
                except (TypeError, ValueError):
                    pass
    return read_exception(
        error, sqlstate=sqlstate, suggestion=str(hint) if hint else None, position=position
    )


#: Built-in functions PostgreSQL has: "function f(types) does not exist" on one of them means
#: arguments of the wrong types (a type mismatch), not a missing function.
_COMMON_FUNCTIONS = frozenset(
    "abs avg ceil ceiling coalesce concat count date_part date_trunc extract floor greatest "
    "least length lower ltrim max min nullif position replace round rtrim sign sqrt strpos "
    "substr substring sum trim trunc upper left right lpad rpad split_part to_char to_date "
    "to_timestamp now age length char_length octet_length md5 power mod log ln exp".split()
)


def _missing_function(r: Reading) -> bool:
    """Undefined function (``42883``) names a missing function, not an operator or a real
    function given arguments of the wrong types."""
    if re.match(r"operator does not exist", r.primary, re.I):
        return False
    m = re.match(r"^function (\w+)\(", r.primary, re.I)
    if m and m.group(1).lower() in _COMMON_FUNCTIONS:
        return False
    return not re.search(r"No function matches the given name and argument types '", r.primary)


K = ErrorKind

#: PostgreSQL's errors: its SQLSTATEs are the common vocabulary (in the standard table); here
#: psycopg's classes, the server's wording, its echo of the statement line and its HINT.
POSTGRES = ErrorTable(
    "postgres",
    driver=postgres_error,
    rules=(
        Rule(
            K.timeout,
            classes=("QueryCanceled", "QueryCanceledError"),
            pattern=r"statement timeout|canceling statement",
        ),
        Rule(
            K.connection_error,
            sqlstates=("57P01", "57P02", "57P03", "53300"),
            classes=("ConnectionTimeout",),
            pattern=r"connection to server|server closed the connection|terminating connection|"
            r"connection already closed",
        ),
        Rule(K.permission_denied, classes=("InsufficientPrivilege", "ReadOnlySqlTransaction")),
        Rule(K.multiple_statements, pattern=r"cannot insert multiple commands"),
        Rule(
            K.aggregation_error,
            classes=("GroupingError",),
            pattern=r"must appear in the GROUP BY|cannot contain aggregates|"
            r"aggregate functions? (calls )?(are|is) not allowed|aggregate function calls cannot|"
            r"cannot be nested|window functions are not allowed in",
        ),
        Rule(
            K.join_error,
            classes=("AmbiguousColumn", "AmbiguousAlias", "DuplicateAlias"),
            pattern=r"specified more than once",
        ),
        Rule(
            K.column_not_found, classes=("UndefinedColumn",), pattern=r"^column .* does not exist"
        ),
        Rule(
            K.table_not_found,
            classes=("UndefinedTable", "InvalidSchemaName"),
            pattern=r"relation .* does not exist|missing FROM-clause entry|^table .* does not exist",
        ),
        Rule(K.division_by_zero, classes=("DivisionByZero",)),
        Rule(K.datetime_format, classes=("InvalidDatetimeFormat", "DatetimeFieldOverflow")),
        Rule(
            K.datetime_format,
            pattern=r"date/time|datestyle|invalid (date|time|timestamp)|"
            r"invalid input syntax for type .*",
            check=datetime_state,
        ),
        Rule(
            K.function_not_found,
            sqlstates=("42883",),
            classes=("UndefinedFunction",),
            pattern=r"^function .* does not exist",
            check=_missing_function,
        ),
        Rule(
            K.type_mismatch,
            classes=("InvalidTextRepresentation",),
            pattern=r"operator does not exist|invalid input syntax|argument of .* must be type|"
            r"must be type|out of range for type|No operator matches|"
            r"^function \w+\(.*\) does not exist",
        ),
        Rule(K.syntax_error, pattern=r"must have an alias"),
    ),
    names=(
        Name(K.column_not_found, r'^column "([^"]+)" does not exist'),
        Name(K.column_not_found, r'^column "?([^"\s]+?)"? does not exist'),
        Name(K.table_not_found, r'relation "?([^"\s]+)"? does not exist'),
        Name(K.table_not_found, r'missing FROM-clause entry for table "?([^"\s]+)"?'),
        Name(K.join_error, r'column reference "?([^"\s]+)"? is ambiguous'),
        Name(K.join_error, r'table name "?([^"\s]+)"? specified more than once'),
        Name(K.aggregation_error, r'column "?([^"\s]+?)"? must appear in the GROUP BY'),
        Name(K.function_not_found, r"^function (\w+)\("),
        Name(K.syntax_error, r'at or near "([^"]*)"'),
    ),
    values=(
        Value(r"invalid input syntax for type ([\w ]+): (\".*?\")", "{1} as {0}"),
        Value(r"operator does not exist: (.+)$"),
        Value(r"(?:field format|out of range): (\".*?\")"),
    ),
    facts=(
        Said(Fact.qualifier, r"missing FROM-clause", (K.table_not_found,), "primary"),
        Said(Fact.alias_required, r"must have an alias", (K.syntax_error,), "primary"),
    ),
    hint_proposals=("Perhaps you meant",),
    echoes=(r"^LINE \d+: ?(?P<text>.*)$",),
    hint_lines=("HINT:",),
)
