"""The real names a diagnosis suggests, per category (stdlib + sqlglot), as rules of the router
(:data:`cadet_magic.diagnose.router.RULES`): :func:`named` ranks columns and tables by
:mod:`.suggest`, the owners of a column a missing join needs, the columns of an aggregation
mistake, the completions of a cut-off name; :func:`listed` gives a missing table's feedback
the tables there are; :func:`aliased` speaks the query's own aliases; :func:`case_only` finds
a name that differs only in case where the engine compares case.
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.diagnose import suggest
from cadet_magic.diagnose.category import Category
from cadet_magic.diagnose.found import Found, MissingJoin
from cadet_magic.diagnose.sqlcontext import SqlContext, Where
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.target import Target


def case_only(f: Found, at: Where) -> Found:
    """A missing column or table whose written name differs from a real one only in case, on
    an engine where that matters: the real name, suggested first."""
    if f.category not in (Category.column_not_found, Category.table_not_found):
        return f
    real = _case_only(f, at.ctx, at.schema, at.target)
    if real is None:
        return f
    suggestions = (real, *[x for x in f.suggestions if x != real])
    return f.replace(case_sensitive=real, suggestions=suggestions)


def _case_only(f: Found, ctx: SqlContext, schema: Schema, target: Target) -> str | None:
    """The real name when the written one differs from it only in case, on an engine where
    that matters, among the query's own tables (for a column) or the schema (for a table)."""
    if not target.facts.case_sensitive or not schema.tables:
        return None
    ident = f.name.strip()
    if not ident:
        return None
    qualifier, _, name = ident.rpartition(".")
    name = name.strip('"')
    if f.category is Category.table_not_found:
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


def _table_columns(ident: str, at: Where) -> list[str]:
    """The columns the query reads from the unknown table ``ident``: in each SELECT that
    reads it, those qualified by its name or alias, and the bare ones none of that SELECT's
    other tables has."""
    from sqlglot import exp

    tree, schema = at.tree, at.schema
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


def named(f: Found, at: Where) -> Found:
    """The real names to suggest, best first."""
    return f.replace(suggestions=tuple(_names(f, at)))


def _names(f: Found, at: Where) -> list[str]:
    ident, ctx, sch = f.name, at.ctx, at.schema
    engine = [c.text for c in at.read.candidates] if at.read is not None else []
    truncated = getattr(f, "truncated", None)
    if truncated is not None:
        return _completions(list(truncated.completions), ctx, sch, at.sql)
    missing = getattr(f, "missing_join", None)
    if missing is not None:
        return _join_owners(missing, sch)
    if f.category is Category.column_not_found and ident:
        return suggest.rank_columns(
            ident, sch, tables=ctx.tables, aliases=ctx.aliases, engine=engine
        )
    if f.category is Category.table_not_found and ident:
        columns = _table_columns(ident, at)
        return suggest.rank_tables(ident, sch, engine=engine, columns=columns)
    mistake = getattr(f, "mistake", None)
    kind = mistake.kind if mistake is not None else None
    if f.category is Category.aggregation_error and kind in (
        "aggregate_in_where",
        "nested_aggregate",
    ):
        return []
    if f.category is Category.aggregation_error:
        columns = list(mistake.columns) if mistake is not None else []
        return _aggregated_columns(columns, ident, ctx, sch)
    if f.category is Category.join_error and ident:
        found = suggest.qualify(ident, sch, tables=ctx.tables, aliases=ctx.aliases)
        for cand in engine:
            q, _, _ = cand.rpartition(".")
            for name in suggest.qualify(cand, sch, tables=ctx.tables, aliases=ctx.aliases):
                if name not in found and q:
                    found.append(name)
        return found
    if f.category is Category.function_not_found and ident:
        return suggest.rank_functions(ident, at.target, engine)
    return []


def listed(f: Found, at: Where) -> Found:
    """A missing table's feedback lists the tables the query may use."""
    if f.category is not Category.table_not_found or not at.schema.tables:
        return f
    return f.replace(tables=tuple(at.schema.table_names()))


def _join_owners(mj: MissingJoin, sch: Schema) -> list[str]:
    """The tables that have the column a missing join needs, and those the query has."""
    owners = [f"{t}.{mj.column}" for t in mj.owners]
    in_query = list(mj.in_query)
    if mj.qualifier and sch.table(mj.qualifier) is not None:
        # a real table outside the query: the model may have meant one it has
        ranked = [*owners[:1], *in_query[:2], *owners]
    else:  # an undefined alias: which table it meant is the question
        ranked = [*owners[:2], *in_query[:1], *owners]
    return list(dict.fromkeys(ranked))[:5]


def _aggregated_columns(
    columns: list[str], ident: str | None, ctx: SqlContext, sch: Schema
) -> list[str]:
    """The columns of an aggregation mistake, qualified by their tables."""
    found: list[str] = []
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


def aliased(f: Found, at: Where) -> Found:
    """What a missing column's feedback needs to speak the query's own names: the table behind
    the qualifier the model wrote and its exact columns (``qualifier_table``,
    ``qualifier_columns``), and each suggested ``table.column`` as the query would write it
    (``as_written``: ``T1.Name`` when the query calls ``singer`` T1).

    Example:
        >>> from cadet_magic.diagnose.found import found
        >>> from cadet_magic.schema.structure import Schema
        >>> sch = Schema.coerce({"singer": ["Singer_ID", "Name"], "sic": ["Singer_ID", "cid"]})
        >>> at = Where("SELECT T2.Name FROM singer AS T1 JOIN sic AS T2 ON T1.Singer_ID = T2.Singer_ID",
        ...            schema=sch)
        >>> f = found(Category.column_not_found, identifier="T2.Name", suggestions=("singer.Name",))
        >>> g = aliased(f, at)
        >>> g.qualifier_table, g.qualifier_columns, dict(g.as_written)
        ('sic', ('Singer_ID', 'cid'), {'singer.Name': 'T1.Name'})
    """
    if f.category is not Category.column_not_found:
        return f
    ctx, schema = at.ctx, at.schema
    view: dict[str, Any] = {}
    qualifier, _, _ = f.name.rpartition(".")
    owner = schema.table(ctx.resolve(qualifier) or "") if qualifier else None
    if owner is not None and qualifier.strip('"`[]').lower() != owner.name.lower():
        view["qualifier_table"] = owner.name
        view["qualifier_columns"] = tuple(owner.column_names())
    alias_of: dict[str, str] = {}
    for alias, table in ctx.aliases.items():
        if alias != table.lower() and alias not in {d.lower() for d in ctx.derived}:
            alias_of.setdefault(table.lower(), ctx.spelling.get(alias, alias))
    written = {}
    for name in f.suggestions:
        table, _, column = name.rpartition(".")
        if table.lower() in alias_of:
            written[name] = f"{alias_of[table.lower()]}.{column}"
    if written:
        view["as_written"] = written
    return f.replace(**view) if view else f
