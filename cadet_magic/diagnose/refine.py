"""Corrections the failed query itself makes possible, after the engine's reader has classed
its error (stdlib + sqlglot): each a rule of the router (:data:`cadet_magic.diagnose.router.RULES`)
that takes what was found so far and the failed attempt (:class:`~.sqlcontext.Where`) and
returns what is found then.

In order: nested too deeply (:func:`too_deep`), another reading of the name the engine missed
(:func:`renamed`: a date part read as a column, an alias of an outer query), marks for the
feedback (:func:`marked`: a string in double quotes, a derived table's alias), the aggregation
mistake (:func:`aggregation`), a missing join (:func:`missing_join`), a date function
(:func:`date_function`), the mismatched value (:func:`mismatched_value`), an unfinished or
malformed reply (:func:`malformed_reply`) and where in the query the error is
(:func:`positioned`). The rules that correct an engine's reading apply to an engine's error
only, and not once the query showed another reading of it (:attr:`Found.corrected`).
"""

from __future__ import annotations

import re

from cadet_magic.diagnose import malformed, suggest
from cadet_magic.diagnose.aggregates import aggregate_mistake
from cadet_magic.diagnose.category import Category
from cadet_magic.diagnose.found import AggregateMistake, Found, MissingJoin, recast, said
from cadet_magic.diagnose.joins import missing_join as find_missing_join
from cadet_magic.diagnose.sqlcontext import SqlContext, Where
from cadet_magic.errors import Fact
from cadet_magic.schema.structure import Schema

_DATE_PARTS = frozenset(
    "year years month months day days week weeks hour hours minute minutes second seconds "
    "quarter dd mm yy yyyy hh mi ss dw dy wk qq".split()
)
_DATE_FUNCTION_WORDS = ("date", "time", "year", "month", "day", "char", "strf", "format")


def _correcting(f: Found, at: Where) -> bool:
    """Whether the rules that correct an engine's reading apply: an engine's error whose
    reading the query has not corrected already, nor found nested too deeply."""
    return at.read is not None and not f.corrected and not getattr(f, "too_deep", False)


def too_deep(f: Found, at: Where) -> Found:
    """A query nested deeper than the engine's parser allows is a syntax error, whatever else
    the engine said."""
    if at.read is None or Fact.too_deep not in at.read.facts:
        return f
    return recast(f, Category.syntax_error, too_deep=True)


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


def renamed(f: Found, at: Where) -> Found:
    """Another category for the name the engine missed, when the query shows one."""
    if not _correcting(f, at) or not at.sql:
        return f
    assert at.read is not None
    ident = f.name.strip('"')  # as the engine named it
    if f.category is Category.column_not_found and ident.lower() in _DATE_PARTS:
        # DATEADD(day, ...) / DATEDIFF(day, ...): another dialect's function whose first
        # argument the engine read as a column.
        m = re.search(rf"\b(\w+)\s*\(\s*{re.escape(ident)}\s*,", at.sql, re.I)
        if m:
            return recast(
                f,
                Category.function_not_found,
                identifier=m.group(1),
                date_function=True,
                corrected=True,
            )
    if (
        f.category is Category.table_not_found
        and ident.lower() in at.ctx.aliases
        and Fact.qualifier in at.read.facts
    ):
        # A qualifier the engine did not find although the query defines it: in a subquery,
        # T1.bad_column is looked up in the outer query too and reported as a missing table
        # "T1" (DuckDB); the alias exists, the column does not.
        bad = _missing_qualified_column(ident, at.ctx, at.sql, at.schema)
        if bad:
            return recast(f, Category.column_not_found, identifier=bad, corrected=True)
    return f


def marked(f: Found, at: Where) -> Found:
    """Marks for the feedback: a string written in double quotes, a derived table's alias."""
    if not _correcting(f, at):
        return f
    assert at.read is not None
    ident, sql = f.name.strip('"'), at.sql
    marks = {}
    if f.category is Category.column_not_found and sql and ident and f'"{ident}"' in sql:
        if " " in ident or re.search(
            rf"(=|<>|!=|LIKE|IN\s*\(|,)\s*\"{re.escape(ident)}\"", sql, re.I
        ):
            marks["double_quoted_string"] = True
    derived = {d.lower() for d in at.ctx.derived}
    if (
        (f.category is Category.syntax_error and Fact.alias_required in at.read.facts)
        or (
            f.category is Category.column_not_found
            and "." in ident
            and ident.split(".")[0].lower() in derived
        )
        or (f.category is Category.table_not_found and ident.lower() in derived)
    ):
        marks["derived_alias"] = True
    return f.replace(**marks) if marks else f


def aggregation(f: Found, at: Where) -> Found:
    """Which aggregation mistake the query makes (unparsable: what the engine said)."""
    if f.category is not Category.aggregation_error or not _correcting(f, at):
        return f
    assert at.read is not None
    mistake = aggregate_mistake(None, tree=at.tree)
    if mistake is None:
        kind = (
            "nested_aggregate"
            if Fact.nested_aggregate in at.read.facts
            else "aggregate_in_where"
            if Fact.aggregate_in_where in at.read.facts
            else None
        )
        mistake = AggregateMistake(kind) if kind else None
    return f.replace(mistake=mistake) if mistake is not None else f


def missing_join(f: Found, at: Where) -> Found:
    """A column of a table the query does not join (a bare column none of the query's tables
    has, or one qualified by a table or alias the query does not have): a join error."""
    if f.category not in (Category.column_not_found, Category.table_not_found):
        return f
    if not _correcting(f, at) or not at.sql:
        return f
    if getattr(f, "double_quoted_string", False) or getattr(f, "derived_alias", False):
        return f
    found = _missing_join(f, at)
    return f if found is None else recast(f, Category.join_error, missing_join=found)


def _missing_join(f: Found, at: Where) -> MissingJoin | None:
    assert at.read is not None and at.sql is not None
    ident, ctx, schema = f.name.strip('"'), at.ctx, at.schema
    if not ident:
        return None
    if f.category is Category.table_not_found:
        # x.column was written, and x is not in FROM (the engine said so: a qualifier).
        if Fact.qualifier not in at.read.facts or ident.lower() in ctx.aliases:
            return None
        m = re.search(rf"(?<![\w.])\"?{re.escape(ident)}\"?\.(?:\"([^\"]+)\"|(\w+))", at.sql, re.I)
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
    found = find_missing_join(
        column, schema, tables=ctx.tables, aliases=ctx.aliases, qualifier=qualifier or None
    )
    if found is None:
        return None
    # a qualifier may simply name the wrong table: the query's own tables that have it
    in_query = suggest.qualify(column, schema, tables=ctx.tables, aliases={}) if qualifier else []
    return MissingJoin(
        found.column, found.table, found.joins, found.owners, found.qualifier, tuple(in_query)
    )


def date_function(f: Found, at: Where) -> Found:
    """A missing function that deals with dates (its feedback lists the dialect's own)."""
    if f.category is not Category.function_not_found or not _correcting(f, at):
        return f
    fn = f.name.lower()
    return f.replace(date_function=True) if any(w in fn for w in _DATE_FUNCTION_WORDS) else f


def mismatched_value(f: Found, at: Where) -> Found:
    """What a type or date/time error was about, as the engine quoted it."""
    if f.category not in (Category.type_mismatch, Category.datetime_format):
        return f
    if at.read is None or at.read.value is None:
        return f
    return f.replace(value=at.read.value)


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


def malformed_reply(f: Found, at: Where) -> Found:
    """Replies that are not a finished query of this engine, whatever the engine (or the
    safety check) made of them: nested too deeply, bind placeholders, syntax the engine lacks,
    repeated words, cut off."""
    sql = at.sql
    if not sql or f.category not in _MALFORMED_FROM or getattr(f, "too_deep", False):
        return f
    found = malformed.placeholders(sql)
    if found and _bound(f, at, found):
        return recast(f, Category.syntax_error, placeholders=tuple(found))
    if f.category in (Category.syntax_error, Category.unknown):
        lacking = malformed.unsupported(sql, at.target, at.tree)
        if lacking is not None:
            return recast(f, Category.syntax_error, unsupported=tuple(lacking))
    repeated = malformed.degenerate(sql)
    if repeated is not None:
        return recast(f, Category.syntax_error, degenerate=repeated)
    cut = malformed.truncated(sql, _names_by_likelihood(at.schema, at.ctx), at.schema.table_names())
    named = f.name.strip('"`').lower()
    if (
        cut is not None
        and not cut.completions
        and f.category in (Category.table_not_found, Category.column_not_found)
        and named == cut.tail.lower()
    ):
        # The engine read the last word (a keyword elsewhere, such as ORDER) as a name: the
        # query ended where the model meant it to, and the name is what is wrong.
        cut = None
    if cut is not None:  # whatever the engine tripped on first, the query is unfinished
        return recast(f, Category.syntax_error, truncated=cut)
    return f


def _bound(f: Found, at: Where, found: list[str]) -> bool:
    """Whether the placeholders of the query are what the error is about."""
    bare = (f.name or said(f.near)).strip('"`').lower()
    bare = bare.lstrip("@:$%?")  # MySQL reads `$1` as a column name
    bound = {p.lstrip("@:$%?").lower() for p in found}
    return (
        f.category in (Category.syntax_error, Category.unknown, Category.type_mismatch)
        or bare in bound
        or (at.read is not None and Fact.parameter in at.read.facts)
        or (at.read is None and re.search(r"binding|parameter", f.message, re.I) is not None)
    )


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


def positioned(f: Found, at: Where) -> Found:
    """Where in the query the engine's error is: the engine's position, else where the name
    it is about occurs, else its caret on a one-line query."""
    read, sql = at.read, at.sql
    if read is None:
        return f
    ident = f.name or said(f.near)
    position = read.position
    if not position and sql and ident:
        m = re.search(rf"(?<![\w.]){re.escape(ident)}(?!\w)", sql, re.I)
        position = m.start() + 1 if m else None
    if not position and read.caret and sql and "\n" not in sql:
        position = read.caret
    return f.replace(position=position) if position else f
