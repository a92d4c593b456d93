"""Schema linking: the tables a question is about, within a character budget (stdlib only).

A large catalog does not fit in a prompt. :func:`link_schema` ranks the tables
(:mod:`cadet_magic.schema.rank`) by lexical evidence in the question and packs as many
as the budget allows (this module). The evidence:

* words of table names, column names, comments and sample values, split from
  snake_case/camelCase and stemmed (plurals), weighted by how rare they are in
  the catalog (IDF), and matched exactly, by prefix, by shared stem or as an
  abbreviation (``dept`` for "department");
* compound names split into words the catalog itself uses (``countrylanguage``
  into ``country`` + ``language``) and adjacent question words joined
  ("high schooler" for ``Highschooler``);
* foreign-key neighbours of matched tables (the join tables a question rarely
  names) and, more weakly, tables of the same namespace (``sales.*``).

The ranked tables are then packed greedily: in full detail while they fit, then
without samples and comments, then column names only, so that every table that
is shown is complete enough to query. A schema whose full text fits the budget
is returned whole and unchanged.

Example:
    >>> from cadet_magic.schema.structure import Schema
    >>> s = Schema.from_mapping({
    ...     "singer": ["singer_id", "name", "country"],
    ...     "concert": ["concert_id", "concert_name", "year"],
    ...     "singer_in_concert": ["concert_id", "singer_id"],
    ...     "stadium": ["stadium_id", "location", "capacity"],
    ... })
    >>> [name for name, _ in rank_tables(s, "Which singers performed in a concert in 2014?")]
    ['singer_in_concert', 'singer', 'concert', 'stadium']
    >>> link_schema(s, "Which singers performed in a concert?", budget=210).table_names()
    ['singer', 'concert', 'singer_in_concert']
    >>> print(schema_context(s, "Which singers performed in a concert?", budget=210))
    CREATE TABLE singer (
      singer_id,
      name,
      country
    );
    <BLANKLINE>
    CREATE TABLE concert (
      concert_id,
      concert_name,
      year
    );
    <BLANKLINE>
    CREATE TABLE singer_in_concert (
      concert_id,
      singer_id
    );
    -- 1 more table not shown
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cadet_magic.schema import render
from cadet_magic.schema.rank import (  # noqa: F401 - ranking names stay importable here
    SchemaIndex,
    _namespace,
    index_for,
    rank_tables,
)
from cadet_magic.schema.render import (
    FULL,
    NAMES,
    TYPED,
    Representation,
    render_column,
    render_schema,
    render_table,
)
from cadet_magic.schema.structure import Column, Schema, Table

if TYPE_CHECKING:
    import sqlglot

#: The default character budget of the schema text in the prompt.
DEFAULT_BUDGET = 6000

# Fewer characters than this left over: no list of the tables not shown.
_MIN_TRAILER = 24


def _shown(idx: SchemaIndex, index: int, detail: int, rep: Representation) -> tuple[Table, int]:
    """Table ``index`` as shown at ``detail``, and the length of its text (memoized on the index)."""
    key = ("shown", index, detail, rep)
    hit = idx.layout.get(key)
    if hit is None:
        table = _strip(idx.schema.tables[index], detail)
        text = render_table(table, dialect=idx.schema.sqlglot_dialect, representation=rep)
        hit = idx.layout[key] = (table, len(text))
    return hit  # type: ignore[return-value]


def _full_length(idx: SchemaIndex, rep: Representation) -> int:
    """The length of the whole schema's text (``len(render_schema(schema))``), memoized."""
    hit = idx.layout.get(("full", rep))
    if hit is None:
        hit = idx.layout[("full", rep)] = len(render_schema(idx.schema, rep))
    return hit  # type: ignore[return-value]


def _separator(rep: Representation) -> int:
    """Characters between two tables' texts (:func:`render_schema`)."""
    return 1 if rep.form == "compact" else 2


def _strip(table: Table, detail: int) -> Table:
    """The table as shown at ``detail``: what is not shown is dropped from the copy."""
    if detail == FULL:
        return table
    cols = tuple(
        Column(c.name, c.type if detail == TYPED else "", c.primary_key) for c in table.columns
    )
    return replace(table, columns=cols, comment=None, rows=(), ddl=None)


def _trim(
    table: Table,
    scores: list[float],
    room: int,
    detail: int = TYPED,
    dialect: sqlglot.Dialect | None = None,
    rep: Representation | None = None,
) -> Table | None:
    """The table with its least relevant non-key columns dropped until it fits ``room``.

    Keys (primary and foreign) stay; a comment says how many columns are not shown.
    """
    rep = rep or render.REPRESENTATION
    keys = {c for fk in table.foreign_keys for c in fk.columns}
    base = _strip(table, detail)
    removable = sorted(
        (i for i, c in enumerate(base.columns) if not c.primary_key and c.name not in keys),
        key=lambda i: (scores[i], -i),
    )
    extra = 2 if rep.form == "compact" else 4  # ", " or "  " ... ",\n"
    cost = [
        len(render_column(c, detail, c.name in keys, dialect, rep)) + extra for c in base.columns
    ]
    over = len(render_table(base, dialect=dialect, representation=rep)) - room
    dropped: set[int] = set()
    for i in removable:
        if over <= 0:
            break
        dropped.add(i)
        over -= cost[i]
    while True:
        note = f"{len(dropped)} more columns not shown" if dropped else None
        columns = tuple(c for i, c in enumerate(base.columns) if i not in dropped)
        cand = replace(base, columns=columns, comment=note)
        if len(render_table(cand, dialect=dialect, representation=rep)) <= room:
            return cand
        rest = [i for i in removable if i not in dropped]
        if not rest:
            return None
        dropped.add(rest[0])


def _only_shown_keys(table: Table, shown: set[str], namespace: str | None) -> Table:
    """Drops foreign keys to tables that are not shown."""
    fks = tuple(
        fk
        for fk in table.foreign_keys
        if fk.ref_table.lower() in shown or f"{namespace}.{fk.ref_table}".lower() in shown
    )
    return table if fks == table.foreign_keys else replace(table, foreign_keys=fks)


def _pack(
    schema: Schema, question: str, budget: int, rep: Representation
) -> tuple[Schema, list[str]]:
    idx = index_for(schema)
    scores = idx.scores(question)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    chosen: dict[int, Table] = {}
    used = 0
    for rank, i in enumerate(order):
        for detail in (FULL, TYPED, NAMES):
            table, length = _shown(idx, i, detail, rep)
            cost = length + (_separator(rep) if chosen else 0)
            if used + cost <= budget:
                chosen[i] = table
                used += cost
                break
        else:
            if rank == 0:
                # The best table is too wide even by name: its most relevant columns,
                # in at most half the budget when other tables could use the rest.
                room = budget if len(order) == 1 else budget // 2
                scores_i = idx.column_scores(i, question)
                for detail in (TYPED, NAMES):
                    trimmed = _trim(
                        schema.tables[i], scores_i, room, detail, schema.sqlglot_dialect, rep
                    )
                    if trimmed is not None:
                        chosen[i] = trimmed
                        used += len(
                            render_table(
                                trimmed, dialect=schema.sqlglot_dialect, representation=rep
                            )
                        )
                        break
    names = {schema.tables[i].name.lower() for i in chosen}
    tables = tuple(
        _only_shown_keys(chosen[i], names, _namespace(chosen[i])[0]) for i in sorted(chosen)
    )
    left = [schema.tables[i].name for i in order if i not in chosen]
    return Schema(tables=tables, dialect=schema.dialect), left


def _reserve(budget: int) -> int:
    """Room kept for the line about the tables that are not shown."""
    return min(max(_MIN_TRAILER, budget // 20), budget // 2)


def _trailer(left: Iterable[str], room: int) -> str:
    left = list(left)
    if not left:
        return ""
    s = "s" if len(left) > 1 else ""
    head = f"-- {len(left)} more table{s} not shown"
    if room < len(head):
        return ""
    text = head
    names: list[str] = []
    for name in left:
        cand = head + ": " + ", ".join([*names, name])
        if len(cand) + len(", …") > room:
            break
        names.append(name)
        text = cand
    if names and len(names) < len(left):
        text += ", …"
    return text


@dataclass(frozen=True)
class Linked:
    """What :func:`link` chose: the shown ``schema``, its prompt ``text`` and the names left out."""

    schema: Schema
    text: str
    left_out: tuple[str, ...] = ()


def link(
    schema: Schema,
    question: str,
    budget: int | None = DEFAULT_BUDGET,
    representation: Representation | None = None,
) -> Linked:
    """Links the question to the schema within ``budget`` characters of prompt text.

    A schema whose full text fits is kept whole and unchanged. Otherwise the
    best-ranked tables are kept (listed in catalog order), the first in full
    detail and later ones possibly without samples and comments, or with names
    only: the returned ``schema`` holds exactly what the text shows, with
    foreign keys only to tables that are shown. A last line of ``text`` says how
    many tables are left out and names as many of them (best first) as fit.

    Args:
        schema: the whole catalog.
        question: the user's question in plain language.
        budget: the most characters of ``text`` (None: no limit).
        representation: how the tables are written (default
            :data:`~cadet_magic.schema.render.REPRESENTATION`).

    Returns:
        A :class:`Linked` with ``len(text) <= budget``.

    Example:
        >>> from cadet_magic.schema.structure import Schema
        >>> s = Schema.from_mapping(
        ...     {"orders": ["id", "amount"], "users": ["id", "name"], "events": ["id", "kind"]}
        ... )
        >>> r = link(s, "total amount of orders", budget=70)
        >>> r.schema.table_names(), r.left_out
        (['orders'], ('users', 'events'))
        >>> print(r.text)
        CREATE TABLE orders (
          id,
          amount
        );
        -- 2 more tables not shown
    """
    rep = representation or render.REPRESENTATION
    if budget is None or _full_length(index_for(schema), rep) <= budget:
        return Linked(schema, render_schema(schema, rep))
    linked, left = _pack(schema, question, budget - _reserve(budget), rep)
    text = render_schema(linked, rep)
    room = budget - len(text) - (1 if text else 0)
    trailer = _trailer(left, room)
    if trailer:
        text = f"{text}\n{trailer}" if text else trailer
    return Linked(linked, text, tuple(left))


def link_schema(schema: Schema, question: str, budget: int | None = DEFAULT_BUDGET) -> Schema:
    """The part of ``schema`` the question needs (``link(...).schema``).

    Returns ``schema`` itself when its full text fits the budget.

    Example:
        >>> from cadet_magic.schema.structure import Schema
        >>> s = Schema.from_mapping(
        ...     {"orders": ["id", "amount"], "users": ["id", "name"], "events": ["id", "kind"]}
        ... )
        >>> link_schema(s, "total amount of orders", budget=1000) is s
        True
        >>> link_schema(s, "total amount of orders", budget=65).table_names()
        ['orders']
    """
    return link(schema, question, budget).schema


def schema_context(schema: Schema, question: str, budget: int | None = DEFAULT_BUDGET) -> str:
    """The schema text for the prompt (``link(...).text``): never over ``budget``.

    Example:
        >>> from cadet_magic.schema.structure import Schema
        >>> s = Schema.from_mapping(
        ...     {"orders": ["id", "amount"], "users": ["id", "name"], "events": ["id", "kind"]}
        ... )
        >>> print(schema_context(s, "names of users", budget=65))
        CREATE TABLE users (
          id,
          name
        );
        -- 2 more tables not shown
    """
    return link(schema, question, budget).text
