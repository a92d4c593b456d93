"""Which of the schema's tables a query reads, from its syntax tree (stdlib + sqlglot).

Each attempt's checked tree is read once, when the attempt closes (the run's state keeps the
names); the fallback joins the tables the SQL attempts read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlglot import exp

from cadet_magic.schema.structure import Schema

__all__ = ["tables_in", "tables_read"]


def tables_in(tree: exp.Expression | None, schema: Schema) -> tuple[str, ...]:
    """The schema's tables a query's tree reads (CTE names aside), each once, in the schema's
    spelling, in the order the query names them.

    >>> import sqlglot
    >>> s = Schema.from_mapping({"a": ["x"], "b": ["y"]})
    >>> tables_in(sqlglot.parse_one("WITH c AS (SELECT y FROM B) SELECT x FROM a, c"), s)
    ('a', 'b')
    """
    if tree is None:
        return ()
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    found: list[str] = []
    for t in tree.find_all(exp.Table):
        table = schema.table(t.name) if t.name.lower() not in ctes else None
        if table is not None and table.name not in found:
            found.append(table.name)
    return tuple(found)


def tables_read(reads: Iterable[Sequence[str]]) -> list[str]:
    """The tables several queries read (:func:`tables_in` of each, oldest first): the latest
    query's first, then the earlier ones' (each once).

    >>> tables_read([("a",), ("b", "a"), ()])
    ['b', 'a']
    """
    found: list[str] = []
    for names in reversed(list(reads)):
        found += [n for n in names if n not in found]
    return found
