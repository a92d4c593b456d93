"""An engine's error (or a safety refusal) -> a :class:`Diagnosis`: read the error, classify it,
find names, pick the template. Reached through :func:`cadet_magic.diagnose.diagnose`.

Example:
    >>> d = engine_diagnosis("no such column: amout", sql="SELECT amout FROM orders",
    ...                    dialect="sqlite", schema={"orders": ["amount"]})
    >>> d.category.value, d.retryable, d.suggestions[:1], d.details["identifier"]
    ('column_not_found', True, ['orders.amount'], 'amout')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from cadet_magic.diagnose import feedback as templates
from cadet_magic.diagnose import malformed, suggest
from cadet_magic.diagnose.aggregates import aggregate_mistake
from cadet_magic.diagnose.error_info import ErrorInfo, read_error
from cadet_magic.diagnose.joins import missing_join
from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis
from cadet_magic.diagnose.rules import classify
from cadet_magic.diagnose.sqlcontext import SqlContext, parse_tree, sql_context
from cadet_magic.schema.model import Schema
from cadet_magic.sql.dialect import dialect_key
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.text import error_text

#: Dialects where a quoted identifier must match the stored name's case exactly (and an
#: unquoted one is folded). SQLite, DuckDB and MySQL resolve column names ignoring case.
CASE_SENSITIVE = frozenset({"postgres", "redshift", "snowflake", "oracle", "trino", "presto"})

_REFUSAL_CODES = {
    "multiple_statements": Category.multiple_statements,
    "unknown_table": Category.table_not_found,
    "unknown_function": Category.function_not_found,
    "parse_error": Category.syntax_error,
}
_DATE_PARTS = frozenset(
    "year years month months day days week weeks hour hours minute minutes second seconds "
    "quarter dd mm yy yyyy hh mi ss dw dy wk qq".split()
)
_DATE_FUNCTION_WORDS = ("date", "time", "year", "month", "day", "char", "strf", "format")

# Where each category's offending identifier sits in the primary message.
_IDENTIFIER = {
    Category.column_not_found: [
        r'Referenced column "([^"]+)" not found',
        r'Referenced column "([^"]+)" was not found',
        r'^column "([^"]+)" does not exist',
        r'Referenced column "?([^"\s]+)"? not found',
        r'does not have a column named "?([^"\s]+)"?',
        r"no such column: ?(.+?)\s*$",  # SQLite names it whole, spaces included
        r'^column "?([^"\s]+?)"? does not exist',
        r"has no column named (\S+)",
        r"^Unknown column '([^']+)' in",  # MySQL / MariaDB
        r'with name "([^"]+)" cannot be resolved',  # Spark
    ],
    Category.table_not_found: [
        r"Table with name \"?([^\"\s!]+)\"? does not exist",
        r"no such table: ?(\S+)",
        r'relation "?([^"\s]+)"? does not exist',
        r'missing FROM-clause entry for table "?([^"\s]+)"?',
        r'Referenced table "?([^"\s]+)"? not found',
        r"^Table '(?:[^'.]+\.)?([^']+)' doesn't exist",  # MySQL / MariaDB
        r"^Unknown table '(?:[^'.]+\.)?([^']+)'",
        r'The table or view "([^"]+)" cannot be found',  # Spark
    ],
    Category.join_error: [
        r'column reference "?([^"\s]+)"? is ambiguous',
        r'Ambiguous reference to (?:column name|table) "?([^"\s]+)"?',
        r"ambiguous column name: ?(\S+)",
        r'table name "?([^"\s]+)"? specified more than once',
        r'Duplicate alias "?([^"\s]+)"?',
        r"^Column '([^']+)' in .* is ambiguous",  # MySQL / MariaDB
        r"^Not unique table/alias: '([^']+)'",
        r'Reference "([^"]+)" is ambiguous',  # Spark
    ],
    Category.aggregation_error: [
        r'column "?([^"\s]+?)"? must appear in the GROUP BY',
        r"misuse of aggregate(?: function)?:? (\w+)\(",
        r"^'([^']+)' isn't in GROUP BY",  # MySQL / MariaDB
        r'non-aggregating expression "([^"]+)"',  # Spark
    ],
    Category.function_not_found: [
        r"Function with name \"?(\w+)\"? does not exist",
        r"no such function: ?(\w+)",
        r"^function (\w+)\(",
        r'Cannot resolve routine "([^"]+)"',  # Spark
        r'^The "(\w+)" requires \d+ parameters',  # Spark
        r"^FUNCTION (?:\w+\.)?(\w+) does not exist",  # MySQL / MariaDB
    ],
    Category.syntax_error: [
        r'at or near "([^"]*)"',
        r'near "([^"]*)": syntax error',
        r"near '([^\s']+)",  # MySQL / MariaDB: the first word it names
    ],
}


# What was mismatched, for type and date/time errors: (pattern, format).
_VALUE = (
    (r"Could not convert string ([\"'].*?[\"']) to ([\w(),]+)", "{0} as {1}"),
    (r"invalid input syntax for type ([\w ]+): (\".*?\")", "{1} as {0}"),
    (r"Cannot compare values of type (\w+) and type (\w+)", "{0} compared with {1}"),
    (r"operator does not exist: (.+)$", "{0}"),
    (r"argument types '([^']+)'", "{0}"),
    (r"(?:field format|out of range): (\".*?\")", "{0}"),
)


def _value(text: str) -> str | None:
    for pattern, fmt in _VALUE:
        m = re.search(pattern, text, re.I)
        if m:
            return fmt.format(*m.groups())[:80]
    return None


def _first(patterns: Iterable[str], text: str) -> str | None:
    for p in patterns:
        m = re.search(p, text, re.I)
        if m:
            return m.group(1).strip().rstrip("!.,;:")
    return None


def _position(info: ErrorInfo, sql: str | None, ident: str | None) -> int | None:
    if info.position:
        return info.position
    if sql and ident:
        m = re.search(rf"(?<![\w.]){re.escape(ident)}(?!\w)", sql, re.I)
        if m:
            return m.start() + 1
    if info.caret and sql and "\n" not in sql:
        return info.caret
    return None


def _refusal(
    error: SafetyRefusal, sql: str | None, dialect: str | None
) -> tuple[Category, dict[str, Any]]:
    """The category and details of a safety refusal; the check words functions as it
    regenerates them, so they are named as the model wrote them."""
    issues = list(getattr(error, "issues", []) or [])
    codes = list(error.codes)
    category = _REFUSAL_CODES.get(codes[0], Category.forbidden) if codes else Category.forbidden
    text = as_written(str(error), sql, dialect)
    details: dict[str, Any] = {
        "message": text,
        "codes": codes,
        "issues": [as_written(str(getattr(i, "message", i)), sql, dialect) for i in issues],
    }
    if category is Category.table_not_found:
        m = re.search(r"Unknown table '([^']+)'", text)
        if m:
            details["identifier"] = m.group(1)
    elif category is Category.function_not_found:
        m = re.search(r"(\w+)\(\) is not a function", text)
        if m:
            details["identifier"] = m.group(1)
    return category, details


def engine_diagnosis(
    error: BaseException | str,
    *,
    sql: str | None = None,
    dialect: str | None = None,
    schema: Schema | Mapping[str, Iterable[str]] | None = None,
    message: str | None = None,
) -> Diagnosis:
    """Classifies an error and builds suggestions and feedback for the model.

    Args:
        error: the engine's error as its runner read it (:class:`~cadet_magic.errors.EngineError`),
            any other exception, or its message; also a
            :class:`cadet_magic.errors.QueryTimeout` or a
            :class:`cadet_magic.sql.refusal.SafetyRefusal`.
        sql: the failed query (for aliases, positions and the feedback).
        dialect: ``duckdb``, ``sqlite``, ``postgresql``... (for dialect-specific advice).
        schema: the live schema, a :class:`Schema` or a ``{table: [column, ...]}`` mapping.
        message: the error's text to read instead of the exception's own (e.g. naming
            functions as the model wrote them); the exception's class and SQLSTATE still count.

    Returns:
        The :class:`Diagnosis`: category, retryable, details (message, identifier,
        position, ...), ranked suggestions and the feedback text.

    Example:
        >>> d = engine_diagnosis('column "orders.status" must appear in the GROUP BY clause or '
        ...     'be used in an aggregate function', sql="SELECT status, SUM(amount) FROM orders",
        ...     dialect="postgresql", schema={"orders": ["status", "amount"]})
        >>> d.category.value, d.suggestions
        ('aggregation_error', ['orders.status'])
    """
    sch = Schema.coerce(schema)
    ctx = sql_context(sql, dialect)
    shown: str | None = None
    if isinstance(error, SafetyRefusal):
        category, details = _refusal(error, sql, dialect)
        shown = details["message"]
        info = None
    else:
        info = read_error(error, message)
        renamed = as_written(info.message, sql, dialect)
        if renamed != info.message:
            info = read_error(error, renamed)
        shown = as_written(
            error_text(message if message is not None else error) or "", sql, dialect
        )
        category = classify(info)
        details = {"message": info.message, "primary": info.primary}
        for key in ("sqlstate", "code", "prefix", "hint"):
            if getattr(info, key):
                details[key] = getattr(info, key)
        if info.driver_class:
            details["exception"] = info.driver_class
        if category is Category.timeout and hasattr(error, "seconds"):
            details["seconds"] = error.seconds
        ident = _first(_IDENTIFIER.get(category, []), info.primary)
        if ident is not None:
            details["identifier" if category is not Category.syntax_error else "near"] = ident
        category = _refine(category, details, info, ctx, sql, sch, dialect)
        if category in (Category.type_mismatch, Category.datetime_format):
            value = _value(info.primary)
            if value:
                details["value"] = value
    category = _malformed(category, details, info, sql, sch, dialect)
    suggestions = _suggestions(category, details, info, ctx, sch, dialect, sql)
    if info is not None:
        pos = _position(info, sql, details.get("identifier") or details.get("near"))
        if pos:
            details["position"] = pos
    if category is Category.table_not_found and sch.tables:
        details["tables"] = sch.table_names()
    if category in (Category.column_not_found, Category.table_not_found):
        real = _case_only(category, details, ctx, sch, dialect)
        if real is not None:
            details["case_sensitive"] = real
            suggestions = [real, *[x for x in suggestions if x != real]]
    refused = isinstance(error, SafetyRefusal)
    return Diagnosis(
        category=category,
        retryable=category not in NOT_RETRYABLE,
        details=details,
        suggestions=suggestions,
        feedback=templates.render(sql, category.value, details, suggestions, dialect),
        outcome=("refused" if refused else "timeout" if category is Category.timeout else "error"),
        error=shown,
        exception=error if isinstance(error, BaseException) else None,
    )


_ECHO = re.compile(r"^LINE \d+: ?(?P<text>.*)$")


def as_written(text: str, sql: str | None, dialect: str | None) -> str:
    """An engine's error text naming what the model wrote, not what ran: functions the check
    regenerated in the dialect's own spelling are named as written (``PERCENTILE_CONT`` ->
    ``MEDIAN`` on SQLite), and the engine's echo of a statement line that the model did not
    write (``LINE 1: ...`` and its caret) is left out.

    Example:
        >>> as_written("no such function: PERCENTILE_CONT", "SELECT median(x) FROM t", "sqlite")
        'no such function: MEDIAN'
        >>> as_written("boom\\nLINE 1: SELECT CAST(x AS INT)\\n        ^", "SELECT x::int", "duckdb")
        'boom'
    """
    if not sql or not text:
        return text
    from cadet_magic.sql.validate import renamed_functions

    for run_as, written in renamed_functions(sql, dialect).items():
        text = re.sub(rf"\b{re.escape(run_as)}\b", written, text, flags=re.I)
    lines = text.split("\n")
    flat = re.sub(r"\s+", " ", sql).lower()
    out: list[str] = []
    skip_caret = False
    for line in lines:
        m = _ECHO.match(line)
        if m:
            echoed = re.sub(r"\s+", " ", m.group("text")).strip().strip(".").lower()
            skip_caret = bool(echoed) and not all(p.strip() in flat for p in echoed.split("..."))
            if not skip_caret:
                out.append(line)
            continue
        if skip_caret and line.strip() and set(line.strip()) <= {"^"}:
            skip_caret = False
            continue
        skip_caret = False
        out.append(line)
    return "\n".join(out).rstrip()


def _missing_qualified_column(alias: str, ctx: SqlContext, sql: str, schema: Schema) -> str | None:
    """The first ``alias.column`` of the query whose table lacks that column."""
    table = schema.table(ctx.resolve(alias) or "")
    if table is None:
        return None
    columns = {c.lower() for c in table.column_names()}
    for m in re.finditer(rf"(?<![\w.]){re.escape(alias)}\.\"?(\w+)", sql, re.I):
        if m.group(1).lower() not in columns:
            return f"{alias}.{m.group(1)}"
    return None


def _refine(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo,
    ctx: SqlContext,
    sql: str | None,
    schema: Schema,
    dialect: str | None = None,
) -> Category:
    """Corrections the query itself makes possible, in order: nesting too deep, another
    reading of the missing name (:func:`_renamed`), marks for the feedback (:func:`_mark`),
    the aggregation mistake, a missing join, a date function."""
    if malformed.TOO_DEEP.search(info.message):
        details["too_deep"] = True
        return Category.syntax_error
    ident = (details.get("identifier") or "").strip('"')  # as the engine named it
    category = _field_of_column(category, details, info, sql)
    renamed = _renamed(category, details, info, ctx, sql, schema, ident)
    if renamed is not None:
        return renamed
    _mark(category, details, info, ctx, sql, ident)
    if category is Category.aggregation_error:
        _aggregation(details, info, sql, dialect)
    if category in (Category.column_not_found, Category.table_not_found) and sql:
        joined = _missing_join(category, details, info, ctx, sql, schema)
        if joined is not None:
            details["missing_join"] = joined
            return Category.join_error
    if category is Category.function_not_found:
        fn = (details.get("identifier") or "").lower()
        if any(w in fn for w in _DATE_FUNCTION_WORDS):
            details["date_function"] = True
    return category


def _field_of_column(
    category: Category, details: dict[str, Any], info: ErrorInfo, sql: str | None
) -> Category:
    """DuckDB reads ``x.y``, ``x`` not in FROM, as field ``y`` of a column ``x``: a column."""
    field = re.search(
        r"Cannot extract field '([^']+)' from expression \"?([^\"\s]+)\"?", info.primary
    )
    if category is Category.unknown and field and sql:
        details["identifier"] = f"{field.group(2)}.{field.group(1)}"
        return Category.column_not_found
    return category


def _renamed(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo,
    ctx: SqlContext,
    sql: str | None,
    schema: Schema,
    ident: str,
) -> Category | None:
    """Another category for the name the engine missed, when the query shows one."""
    if not sql:
        return None
    if category is Category.column_not_found and ident.lower() in _DATE_PARTS:
        # DATEADD(day, ...) / DATEDIFF(day, ...): another dialect's function whose first
        # argument the engine read as a column.
        m = re.search(rf"\b(\w+)\s*\(\s*{re.escape(ident)}\s*,", sql, re.I)
        if m:
            details["identifier"] = m.group(1)
            details["date_function"] = True
            return Category.function_not_found
    if (
        category is Category.table_not_found
        and ident.lower() in ctx.aliases
        and re.match(r"Referenced table", info.primary)
    ):
        # DuckDB, in a subquery: T1.bad_column is looked up in the outer query too and
        # reported as a missing table "T1"; the alias exists, the column does not.
        bad = _missing_qualified_column(ident, ctx, sql, schema)
        if bad:
            details["identifier"] = bad
            return Category.column_not_found
    return None


def _mark(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo,
    ctx: SqlContext,
    sql: str | None,
    ident: str,
) -> None:
    """Marks for the feedback: a string written in double quotes, a derived table's alias."""
    if category is Category.column_not_found and sql and ident and f'"{ident}"' in sql:
        if " " in ident or re.search(
            rf"(=|<>|!=|LIKE|IN\s*\(|,)\s*\"{re.escape(ident)}\"", sql, re.I
        ):
            details["double_quoted_string"] = True
    derived = {d.lower() for d in ctx.derived}
    if (
        (category is Category.syntax_error and "must have an alias" in info.primary)
        or (
            category is Category.column_not_found
            and "." in ident
            and ident.split(".")[0].lower() in derived
        )
        or (category is Category.table_not_found and ident.lower() in derived)
    ):
        details["derived_alias"] = True


def _aggregation(
    details: dict[str, Any], info: ErrorInfo, sql: str | None, dialect: str | None
) -> None:
    """Which aggregation mistake the query makes (unparsable: what the message says)."""
    mistake = aggregate_mistake(sql, dialect)
    if mistake is None:
        low = info.primary.lower()
        kind = (
            "nested_aggregate"
            if "nested" in low
            else "aggregate_in_where"
            if "where" in low
            else None
        )
        mistake = {"kind": kind} if kind else None
    if mistake is not None:
        details["aggregate_mistake"] = mistake
        if mistake["kind"] == "aggregate_in_where":
            details["aggregate_in_where"] = True


def _missing_join(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo,
    ctx: SqlContext,
    sql: str,
    schema: Schema,
) -> dict[str, Any] | None:
    """A column of a table the query does not join: a bare column none of the query's tables
    has, or one qualified by a table or alias the query does not have."""
    if details.get("double_quoted_string") or details.get("derived_alias"):
        return None
    ident = (details.get("identifier") or "").strip('"')
    if not ident:
        return None
    if category is Category.table_not_found:
        # PostgreSQL "missing FROM-clause entry for table x", DuckDB "Referenced table x not
        # found": x.column was written, and x is not in FROM.
        if not re.search(r"missing FROM-clause|Referenced table", info.primary, re.I):
            return None
        if ident.lower() in ctx.aliases:
            return None
        m = re.search(rf"(?<![\w.])\"?{re.escape(ident)}\"?\.(?:\"([^\"]+)\"|(\w+))", sql, re.I)
        if m is None:
            return None
        qualifier, column = ident, m.group(1) or m.group(2)
    else:
        qualifier, _, column = ident.rpartition(".")
        qualifier = qualifier.strip('"`[]') or ""
        column = column.strip('"`[]')
        if qualifier and qualifier.lower() in ctx.aliases:
            return None  # the alias exists: its table lacks the column (a wrong column)
        if not qualifier and any(
            (t := schema.table(name)) is not None
            and column.lower() in {c.lower() for c in t.column_names()}
            for name in ctx.tables
        ):
            return None
    found = missing_join(
        column, schema, tables=ctx.tables, aliases=ctx.aliases, qualifier=qualifier or None
    )
    if found is None:
        return None
    # a qualifier may simply name the wrong table: the query's own tables that have it
    in_query = suggest.qualify(column, schema, tables=ctx.tables, aliases={}) if qualifier else []
    return {
        "column": found.column,
        "table": found.table,
        "joins": found.joins,
        "owners": found.owners,
        "qualifier": found.qualifier,
        "in_query": in_query,
    }


def _malformed(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo | None,
    sql: str | None,
    schema: Schema,
    dialect: str | None,
) -> Category:
    """Replies that are not a finished query of this engine, whatever the engine made of
    them: nested too deeply, bind placeholders, syntax the engine lacks, repeated words,
    cut off."""
    if not sql or category not in _MALFORMED_FROM:
        return category
    if details.get("too_deep"):
        return Category.syntax_error
    message = info.message if info is not None else str(details.get("message") or "")
    found = malformed.placeholders(sql)
    if found:
        bare = (details.get("identifier") or details.get("near") or "").strip('"`').lower()
        bare = bare.lstrip("@:$%?")  # MySQL reads `$1` as a column name
        bound = {p.lstrip("@:$%?").lower() for p in found}
        if (
            category in (Category.syntax_error, Category.unknown, Category.type_mismatch)
            or bare in bound
            or re.search(r"binding|parameter", message, re.I)
        ):
            details["placeholders"] = found
            return Category.syntax_error
    if category in (Category.syntax_error, Category.unknown):
        lacking = malformed.unsupported(sql, dialect)
        if lacking is not None:
            details["unsupported"] = list(lacking)
            return Category.syntax_error
    repeated = malformed.degenerate(sql)
    if repeated is not None:
        details["repeated"] = repeated
        return Category.syntax_error
    cut = malformed.truncated(
        sql, _names_by_likelihood(schema, sql_context(sql, dialect)), schema.table_names()
    )
    named = str(details.get("identifier") or "").strip('"`').lower()
    if (
        cut is not None
        and not cut["completions"]
        and category in (Category.table_not_found, Category.column_not_found)
        and named == cut["tail"].lower()
    ):
        # The engine read the last word (a keyword elsewhere, such as ORDER) as a name: the
        # query ended where the model meant it to, and the name is what is wrong.
        cut = None
    if cut is not None:  # whatever the engine tripped on first, the query is unfinished
        details["truncated"] = cut
        details.pop("missing_join", None)  # nothing is missing but the rest of the query
        return Category.syntax_error
    return category


def _names_by_likelihood(schema: Schema, ctx: SqlContext) -> list[str]:
    """Real names, likeliest first for a query over ``ctx.tables``: the columns of its
    tables, then the other tables, then every other column (shorter names first in each)."""
    used = [t for name in ctx.tables if (t := schema.table(name)) is not None]
    first = sorted({c for t in used for c in t.column_names()}, key=len)
    tables = sorted(schema.table_names(), key=len)
    rest = sorted({c for t in schema.tables for c in t.column_names()}, key=len)
    return list(dict.fromkeys([*first, *tables, *rest]))


#: Categories a malformed reply can show up as.
_MALFORMED_FROM = frozenset(
    {
        Category.syntax_error,
        Category.unknown,
        Category.column_not_found,
        Category.table_not_found,
        Category.function_not_found,
        Category.type_mismatch,
        Category.join_error,
    }
)


def _case_only(
    category: Category,
    details: dict[str, Any],
    ctx: SqlContext,
    schema: Schema,
    dialect: str | None,
) -> str | None:
    """The real name when the written one differs from it only in case, on an engine where
    that matters, among the query's own tables (for a column) or the schema (for a table)."""
    if dialect_key(dialect) not in CASE_SENSITIVE or not schema.tables:
        return None
    ident = (details.get("identifier") or "").strip()
    if not ident:
        return None
    qualifier, _, name = ident.rpartition(".")
    name = name.strip('"')
    if category is Category.table_not_found:
        real = schema.table(name)
        return real.name if real is not None and real.name != name else None
    owner = ctx.resolve(qualifier) if qualifier else None
    tables = [owner] if owner else ctx.tables
    for tname in tables:
        table = schema.table(tname or "")
        if table is None:
            continue
        for col in table.column_names():
            if col.lower() == name.lower() and col != name:
                return f"{table.name}.{col}"
    return None


def _table_columns(
    ident: str, ctx: SqlContext, sql: str | None, dialect: str | None, schema: Schema
) -> list[str]:
    """The columns the query reads from the unknown table ``ident``: in each SELECT that
    reads it, those qualified by its name or alias, and the bare ones none of that SELECT's
    other tables has."""
    from sqlglot import exp

    tree = parse_tree(sql, dialect)
    if tree is None:
        return []
    out: list[str] = []
    for table in tree.find_all(exp.Table):
        if table.name.lower() != ident.lower():
            continue
        select = table.find_ancestor(exp.Select)
        if select is None:
            continue
        refs = {table.name.lower(), (table.alias or table.name).lower()}
        others = [
            schema.table(t.name)
            for t in select.find_all(exp.Table)
            if t.find_ancestor(exp.Select) is select and t.name.lower() != ident.lower()
        ]
        known = {c.lower() for t in others if t is not None for c in t.column_names()}
        for col in select.find_all(exp.Column):
            if not col.name or isinstance(col.this, exp.Star):
                continue
            if col.find_ancestor(exp.Select) is not select:
                continue
            if col.table and col.table.lower() not in refs:
                continue
            if not col.table and col.name.lower() in known:
                continue
            if col.name not in out:
                out.append(col.name)
    return out


def _suggestions(
    category: Category,
    details: dict[str, Any],
    info: ErrorInfo | None,
    ctx: SqlContext,
    sch: Schema,
    dialect: str | None,
    sql: str | None = None,
) -> list[str]:
    ident = details.get("identifier")
    engine = suggest.engine_candidates(info) if info is not None else []
    if details.get("truncated"):
        return _completions(details["truncated"]["completions"], ctx, sch, sql)
    if details.get("missing_join"):
        return _join_owners(details["missing_join"], sch)
    if category is Category.column_not_found and ident:
        return suggest.rank_columns(
            ident, sch, tables=ctx.tables, aliases=ctx.aliases, engine=engine
        )
    if category is Category.table_not_found and ident:
        columns = _table_columns(ident, ctx, sql, dialect, sch)
        return suggest.rank_tables(ident, sch, engine=engine, columns=columns)
    kind = details.get("aggregate_mistake", {}).get("kind")
    if category is Category.aggregation_error and kind in (
        "aggregate_in_where",
        "nested_aggregate",
    ):
        return []
    if category is Category.aggregation_error:
        return _aggregated_columns(details, ident, ctx, sch)
    if category is Category.join_error and ident:
        found = suggest.qualify(ident, sch, tables=ctx.tables, aliases=ctx.aliases)
        for cand in engine:
            q, _, c = cand.rpartition(".")
            for name in suggest.qualify(cand, sch, tables=ctx.tables, aliases=ctx.aliases):
                if name not in found and q:
                    found.append(name)
            del c
        return found
    if category is Category.function_not_found and ident:
        return suggest.rank_functions(ident, dialect, engine)
    return []


def _join_owners(mj: dict[str, Any], sch: Schema) -> list[str]:
    """The tables that have the column a missing join needs, and those the query has."""
    owners = [f"{t}.{mj['column']}" for t in mj["owners"]]
    in_query = mj.get("in_query", [])
    if mj.get("qualifier") and sch.table(mj["qualifier"]) is not None:
        # a real table outside the query: the model may have meant one it has
        ranked = [*owners[:1], *in_query[:2], *owners]
    else:  # an undefined alias: which table it meant is the question
        ranked = [*owners[:2], *in_query[:1], *owners]
    return list(dict.fromkeys(ranked))[:5]


def _aggregated_columns(
    details: dict[str, Any], ident: str | None, ctx: SqlContext, sch: Schema
) -> list[str]:
    """The columns of an aggregation mistake, qualified by their tables."""
    found: list[str] = []
    columns = details.get("aggregate_mistake", {}).get("columns") or []
    for col in [*([ident] if ident else []), *columns]:
        for name in suggest.qualify(col, sch, tables=ctx.tables, aliases=ctx.aliases)[:1]:
            if name not in found:
                found.append(name)
    return found or ([ident] if ident else [])


def _completions(names: list[str], ctx: SqlContext, sch: Schema, sql: str | None) -> list[str]:
    """The real names a cut-off identifier begins: tables as they are, columns qualified by
    the table its qualifier names (``T2.Templ``), else by the first of the query's tables
    that has them (else by any table)."""
    tail = (sql or "").rstrip()
    m = re.search(r"([\w\"`]+)\.[\w\"`]*$", tail)
    owner = sch.table(ctx.resolve(m.group(1)) or "") if m else None
    out: list[str] = []
    for name in names:
        table = sch.table(name)
        if table is not None:
            found = [table.name]
        elif owner is not None:
            col = next((c for c in owner.column_names() if c.lower() == name.lower()), None)
            found = [f"{owner.name}.{col}"] if col else []
        else:
            found = (
                suggest.qualify(name, sch, tables=ctx.tables, aliases=ctx.aliases)[:1]
                or [
                    f"{t.name}.{c}"
                    for t in sch.tables
                    for c in t.column_names()
                    if c.lower() == name.lower()
                ][:1]
            )
        out.extend(f for f in found if f not in out)
    return out[:5]
