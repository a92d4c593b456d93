"""Missing joins: which table holds a column the query cannot see, and how to join it.

A query that uses a column of a table it never joined (a bare name, a qualifier naming a
table of the schema that is not in FROM, an alias nobody defined) fails with a "no such
column" or "missing FROM-clause entry" error. The fix is a JOIN, not another column: this
module finds the tables of the schema that hold the column, ranks them by how directly
they join the query's tables, and writes the join path from the schema's foreign keys (or,
where there are none, from the column names the tables share). Standard library only.

Example:
    >>> from cadet_magic.schema.structure import ForeignKey, Schema, Table, Column
    >>> s = Schema((
    ...     Table("products", (Column("product_id"), Column("category"))),
    ...     Table("order_items", (Column("order_id"), Column("product_id")),
    ...           (ForeignKey(("product_id",), "products", ("product_id",)),)),
    ... ))
    >>> m = missing_join("category", s, tables=["order_items"], aliases={})
    >>> m.table, m.joins
    ('products', ('JOIN products ON products.product_id = order_items.product_id',))
"""

from __future__ import annotations

import re
from collections import deque

from cadet_magic.diagnose.found import MissingJoin
from cadet_magic.diagnose.suggest import similarity
from cadet_magic.schema.structure import Schema, Table

#: Column names that look like keys: preferred when tables are joined on shared names.
_KEYISH = re.compile(r"(^|_)(id|key|code|no|num|number)$|id$", re.I)
_MAX_HOPS = 3


def _has(table: Table, column: str) -> str | None:
    return next((c for c in table.column_names() if c.lower() == column.lower()), None)


def _shared(a: Table, b: Table) -> list[tuple[str, str]]:
    """Column names two tables share (key-like ones only, when there are any)."""
    pairs = [(c, found) for c in a.column_names() if (found := _has(b, c)) is not None]
    keys = [p for p in pairs if _KEYISH.search(p[0])]
    return keys[:1] or pairs[:1]


def _path(
    schema: Schema, start: list[str], target: str, *, by_keys: bool
) -> list[tuple[str, str, list[tuple[str, str]]]] | None:
    """Shortest chain (from table, to table, column pairs) from one of ``start`` to ``target``."""
    begin = [t.name for s in start if (t := schema.table(s)) is not None]
    seen = {b.lower() for b in begin}
    queue: deque = deque((b, []) for b in begin)
    while queue:
        name, path = queue.popleft()
        if name.lower() == target.lower():
            return path
        if len(path) >= _MAX_HOPS:
            continue
        table = schema.table(name)
        if table is None:
            continue
        if by_keys:
            neighbours = schema.linked(table)
        else:
            neighbours = [
                (o.name, pairs)
                for o in schema.tables
                if o.name != name and (pairs := _shared(table, o))
            ]
        for other, pairs in neighbours:
            if other.lower() in seen or not pairs:
                continue
            seen.add(other.lower())
            queue.append((other, [*path, (name, other, pairs)]))
    return None


def join_path(
    schema: Schema, tables: list[str], target: str, aliases: dict[str, str] | None = None
) -> list[str]:
    """The JOIN clauses that bring ``target`` into a query over ``tables``: along foreign
    keys, else along shared column names; [] when the tables are not connected.

    Example:
        >>> s = Schema.from_mapping({"singer": ["singer_id", "name"],
        ...                          "singer_in_concert": ["singer_id", "concert_id"]})
        >>> join_path(s, ["singer_in_concert"], "singer", {"t1": "singer_in_concert"})
        ['JOIN singer ON singer.singer_id = t1.singer_id']
    """
    path = _path(schema, tables, target, by_keys=True)
    if path is None:
        path = _path(schema, tables, target, by_keys=False)
    if not path:
        return []
    shown = _alias_of(tables, aliases or {})
    out = []
    for src, dst, pairs in path:
        left = shown.get(src.lower(), src)
        cond = " AND ".join(f"{dst}.{b} = {left}.{a}" for a, b in pairs)
        out.append(f"JOIN {dst} ON {cond}")
    return out


def _alias_of(tables: list[str], aliases: dict[str, str]) -> dict[str, str]:
    """Real table (lower-cased) -> the name the query refers to it by (its alias, if any)."""
    out: dict[str, str] = {}
    for alias, real in aliases.items():
        if alias.lower() != real.lower():
            out.setdefault(real.lower(), alias)
    return out


def owners(
    column: str, schema: Schema, *, tables: list[str], qualifier: str | None = None
) -> list[str]:
    """Tables holding ``column`` that the query does not use, best first: those joinable in
    fewest steps (foreign keys before shared names), then those whose name resembles the
    qualifier the query wrote.

    Example:
        >>> s = Schema.from_mapping({"a": ["id", "x"], "b": ["a_id", "name"], "c": ["name"]})
        >>> owners("name", s, tables=["a"], qualifier="b")
        ['b', 'c']
    """
    used = {t.lower() for t in tables}
    found = [t for t in schema.tables if t.name.lower() not in used and _has(t, column)]

    def rank(t: Table) -> tuple:
        keyed = _path(schema, tables, t.name, by_keys=True)
        shared = None if keyed is not None else _path(schema, tables, t.name, by_keys=False)
        hops = len(keyed) if keyed is not None else 10 + len(shared) if shared is not None else 99
        named = similarity(qualifier, t.name) if qualifier and len(qualifier) > 2 else 0.0
        initials = (
            qualifier and len(qualifier) <= 2 and _initials(t.name).startswith(qualifier.lower())
        )
        return (-round(named, 1), not initials, hops, schema.tables.index(t))

    return [t.name for t in sorted(found, key=rank)]


def _initials(name: str) -> str:
    return "".join(w[0] for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name) if w).lower()


def missing_join(
    column: str,
    schema: Schema,
    *,
    tables: list[str],
    aliases: dict[str, str],
    qualifier: str | None = None,
) -> MissingJoin | None:
    """The missing join behind a column the query cannot see, or None when no table the
    query leaves out holds it (then it is an invented or misspelled column).

    Args:
        column: the column name (bare).
        schema: the live schema.
        tables: the real tables the query uses.
        aliases: alias (and table name) -> table of the query.
        qualifier: the table name or alias the query wrote before the column, if any.
    """
    if not schema.tables:
        return None
    if qualifier:
        real = schema.table(qualifier)
        if (
            real is not None
            and real.name.lower() not in {t.lower() for t in tables}
            and _has(real, column)
        ):
            ranked = [real.name] + [
                o for o in owners(column, schema, tables=tables) if o != real.name
            ]
        else:
            ranked = owners(column, schema, tables=tables, qualifier=qualifier)
    else:
        ranked = owners(column, schema, tables=tables)
    if not ranked:
        return None
    best = schema.table(ranked[0])
    assert best is not None
    name = _has(best, column) or column
    return MissingJoin(
        column=name,
        table=best.name,
        joins=tuple(join_path(schema, tables, best.name, aliases)) if tables else (),
        owners=tuple(ranked),
        qualifier=qualifier,
    )
