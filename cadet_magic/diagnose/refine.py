"""Corrections the failed query itself makes possible, after the engine's reader has classed
its error (stdlib + sqlglot): another reading of the name the engine missed (a date part read
as a column, an alias of an outer query), marks for the feedback (a string in double quotes,
a derived table's alias), the aggregation mistake, a missing join, and an unfinished or
malformed reply (:func:`read_malformed`). Used by :mod:`.router`.
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.diagnose import malformed, suggest
from cadet_magic.diagnose.aggregates import aggregate_mistake
from cadet_magic.diagnose.joins import missing_join
from cadet_magic.diagnose.model import Category
from cadet_magic.diagnose.sqlcontext import SqlContext, sql_context
from cadet_magic.errors import EngineError, Fact
from cadet_magic.schema.model import Schema

_DATE_PARTS = frozenset(
    "year years month months day days week weeks hour hours minute minutes second seconds "
    "quarter dd mm yy yyyy hh mi ss dw dy wk qq".split()
)
_DATE_FUNCTION_WORDS = ("date", "time", "year", "month", "day", "char", "strf", "format")


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


def refine(
    category: Category,
    details: dict[str, Any],
    info: EngineError,
    ctx: SqlContext,
    sql: str | None,
    schema: Schema,
    dialect: str | None = None,
) -> Category:
    """Corrections the query itself makes possible, in order: nesting too deep, another
    reading of the missing name (:func:`_renamed`), marks for the feedback (:func:`_mark`),
    the aggregation mistake, a missing join, a date function."""
    if Fact.too_deep in info.facts:
        details["too_deep"] = True
        return Category.syntax_error
    ident = (details.get("identifier") or "").strip('"')  # as the engine named it
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


def _renamed(
    category: Category,
    details: dict[str, Any],
    info: EngineError,
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
        and Fact.qualifier in info.facts
    ):
        # A qualifier the engine did not find although the query defines it: in a subquery,
        # T1.bad_column is looked up in the outer query too and reported as a missing table
        # "T1" (DuckDB); the alias exists, the column does not.
        bad = _missing_qualified_column(ident, ctx, sql, schema)
        if bad:
            details["identifier"] = bad
            return Category.column_not_found
    return None


def _mark(
    category: Category,
    details: dict[str, Any],
    info: EngineError,
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
        (category is Category.syntax_error and Fact.alias_required in info.facts)
        or (
            category is Category.column_not_found
            and "." in ident
            and ident.split(".")[0].lower() in derived
        )
        or (category is Category.table_not_found and ident.lower() in derived)
    ):
        details["derived_alias"] = True


def _aggregation(
    details: dict[str, Any], info: EngineError, sql: str | None, dialect: str | None
) -> None:
    """Which aggregation mistake the query makes (unparsable: what the engine said)."""
    mistake = aggregate_mistake(sql, dialect)
    if mistake is None:
        kind = (
            "nested_aggregate"
            if Fact.nested_aggregate in info.facts
            else "aggregate_in_where"
            if Fact.aggregate_in_where in info.facts
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
    info: EngineError,
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
        # x.column was written, and x is not in FROM (the engine said so: a qualifier).
        if Fact.qualifier not in info.facts:
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


def read_malformed(
    category: Category,
    details: dict[str, Any],
    info: EngineError | None,
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
    found = malformed.placeholders(sql)
    if found:
        bare = (details.get("identifier") or details.get("near") or "").strip('"`').lower()
        bare = bare.lstrip("@:$%?")  # MySQL reads `$1` as a column name
        bound = {p.lstrip("@:$%?").lower() for p in found}
        if (
            category in (Category.syntax_error, Category.unknown, Category.type_mismatch)
            or bare in bound
            or (info is not None and Fact.parameter in info.facts)
            or (info is None and re.search(r"binding|parameter", details.get("message", ""), re.I))
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
    first = sorted({c for t in used for c in t.column_names()}, key=_by_length)
    tables = sorted(schema.table_names(), key=_by_length)
    rest = sorted({c for t in schema.tables for c in t.column_names()}, key=_by_length)
    return list(dict.fromkeys([*first, *tables, *rest]))


def _by_length(name: str) -> tuple[int, str]:
    """Shorter names first, names of one length in their order (never the order of a set,
    which changes from one process to the next)."""
    return len(name), name


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
