"""Real names to suggest: the engine's own candidates merged with a similarity search.

Engines name candidates themselves (their readers put them in
:attr:`~cadet_magic.errors.EngineError.candidates`), often with the query's aliases; here
they are resolved to real tables, merged with a similarity search over the schema (favouring
the tables the query uses) and ranked (stdlib only).

Example:
    >>> from cadet_magic.schema.structure import Schema
    >>> s = Schema.from_mapping({"orders": ["order_id", "amount"], "customers": ["name"]})
    >>> rank_columns("amout", s, tables=["orders"])
    ['orders.amount']
    >>> rank_tables("order", s)[:1]
    ['orders']
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from cadet_magic.schema.structure import Schema

if TYPE_CHECKING:
    from cadet_magic.sql.target import Target

_WORDS = re.compile(r"[a-z]+|\d+")
_ENGINE_BONUS = 0.12
_MIN_SCORE = 0.5


def _tokens(name: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()
    return {t.rstrip("s") or t for t in _WORDS.findall(spaced)}


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower()).rstrip("s")


def similarity(a: str, b: str) -> float:
    """How alike two identifiers are, 0..1 (typos, affixes, snake/camel case, plurals).

    Example:
        >>> similarity("amout", "amount") > similarity("amout", "status")
        True
        >>> similarity("singer_name", "name") > similarity("singer_name", "singer_id")
        True
    """
    la, lb = a.lower(), b.lower()
    if la == lb:
        return 1.0
    if _squash(la) == _squash(lb):
        return 0.97
    score = SequenceMatcher(None, la, lb).ratio()
    ta, tb = _tokens(a), _tokens(b)
    common = ta & tb
    if common:
        jaccard = len(common) / len(ta | tb)
        score = max(score, 0.45 + 0.45 * jaccard + 0.02 * max(len(t) for t in common) / 10)
    short, long_ = sorted((_squash(la), _squash(lb)), key=len)
    if len(short) >= 2 and short in long_:
        score = max(score, 0.7 + 0.25 * len(short) / len(long_))
    return min(score, 0.99)


def _split(name: str) -> tuple[str | None, str]:
    parts = [p.strip('"`[]') for p in name.split(".")]
    return (parts[-2] if len(parts) > 1 else None), parts[-1]


def rank_columns(
    identifier: str,
    schema: Schema,
    *,
    tables: list[str] | None = None,
    aliases: dict[str, str] | None = None,
    engine: list[str] | None = None,
    limit: int = 5,
) -> list[str]:
    """Real ``table.column`` names for a column the engine could not find, best first.

    Args:
        identifier: the offending column, bare or qualified (``o.amout``).
        schema: the live schema.
        tables: the tables the query uses (favoured).
        aliases: alias -> table of the query.
        engine: the engine's own candidates (favoured, in their order).
        limit: how many to return.

    Returns:
        ``table.column`` names; the engine's candidates as given if the schema is empty.
    """
    tables = tables or []
    aliases = {k.lower(): v for k, v in (aliases or {}).items()}
    engine = engine or []
    qualifier, column = _split(identifier)
    wanted_table = aliases.get((qualifier or "").lower(), qualifier)
    in_query = {t.lower() for t in tables}
    if not schema.tables:
        return engine[:limit]
    scores: dict[str, float] = {}
    for table in schema.tables:
        for col in table.column_names():
            score = similarity(column, col)
            if table.name.lower() in in_query:
                score += 0.12
            if wanted_table and table.name.lower() == wanted_table.lower():
                score += 0.1
            key = f"{table.name}.{col}"
            scores[key] = max(scores.get(key, 0.0), score)
    for rank, cand in enumerate(engine):
        cq, cc = _split(cand)
        ct = aliases.get((cq or "").lower(), cq) if cq else None
        owners = [
            t
            for t in schema.tables
            if any(c.lower() == cc.lower() for c in t.column_names())
            and (ct is None or t.name.lower() == ct.lower())
        ]
        owners.sort(
            key=lambda t: (
                t.name.lower() not in in_query,
                tables.index(t.name) if t.name in tables else 0,
            )
        )
        for t in owners[:2]:
            col = next(c for c in t.column_names() if c.lower() == cc.lower())
            key = f"{t.name}.{col}"
            scores[key] = scores.get(key, 0.0) + _ENGINE_BONUS - 0.02 * rank
    ranked = sorted((k for k, v in scores.items() if v >= _MIN_SCORE), key=lambda k: -scores[k])
    return ranked[:limit]


def rank_tables(
    identifier: str,
    schema: Schema,
    *,
    engine: list[str] | None = None,
    columns: list[str] | None = None,
    limit: int = 5,
) -> list[str]:
    """Real table names for a table the engine could not find, best first: by name, and by
    how many of the columns the query reads from it each table holds (rare columns count
    more than ones every table has), so that a table invented from another database still
    finds the table that has its columns.

    Example:
        >>> s = Schema.from_mapping({"singer": ["id"], "concert": ["id"], "stadium": ["id"]})
        >>> rank_tables("singers", s)[0]
        'singer'
        >>> s = Schema.from_mapping({"Ref_Shipping_Agents": ["shipping_agent_code", "name"],
        ...                          "Documents": ["document_id", "name"]})
        >>> rank_tables("carriers", s, columns=["shipping_agent_code", "name"])[0]
        'Ref_Shipping_Agents'
    """
    engine = engine or []
    _, name = _split(identifier)
    if not schema.tables:
        return engine[:limit]
    scores = {t.name: similarity(name, t.name) for t in schema.tables}
    wanted = {c.lower() for c in columns or []}
    if wanted:
        holders = {
            c: [t.name for t in schema.tables if c in {x.lower() for x in t.column_names()}]
            for c in wanted
        }
        weights = {c: 1.0 / len(h) if h else 0.0 for c, h in holders.items()}
        total = sum(weights.values())
        if total:
            for table in schema.tables:
                has = {x.lower() for x in table.column_names()}
                cover = sum(w for c, w in weights.items() if c in has) / total
                sim = scores[table.name]
                scores[table.name] = 0.3 * sim + 0.35 + 0.35 * cover if cover else sim - 0.3
    for rank, cand in enumerate(engine):
        real = schema.table(_split(cand)[1])
        if real is not None:
            scores[real.name] += _ENGINE_BONUS - 0.02 * rank
    ranked = sorted((k for k, v in scores.items() if v >= _MIN_SCORE), key=lambda k: -scores[k])
    return ranked[:limit]


def qualify(
    column: str, schema: Schema, *, tables: list[str], aliases: dict[str, str]
) -> list[str]:
    """``table.column`` for each table of the query that has ``column`` (alias resolved).

    Example:
        >>> s = Schema.from_mapping({"a": ["id", "x"], "b": ["id"], "c": ["id"]})
        >>> qualify("id", s, tables=["a", "b"], aliases={})
        ['a.id', 'b.id']
    """
    qualifier, name = _split(column)
    lowered = {k.lower(): v for k, v in aliases.items()}
    if qualifier:
        real = lowered.get(qualifier.lower(), qualifier)
        t = schema.table(real)
        if t is not None:
            col = next((c for c in t.column_names() if c.lower() == name.lower()), name)
            return [f"{t.name}.{col}"]
        return [f"{qualifier}.{name}"]
    out = []
    for tname in tables:
        t = schema.table(tname)
        if t is None:
            continue
        found = next((c for c in t.column_names() if c.lower() == name.lower()), None)
        if found is not None:
            out.append(f"{t.name}.{found}")
    return out


def rank_functions(name: str, target: Target, engine: list[str] | None = None) -> list[str]:
    """The target dialect's equivalent of a foreign function, then the engine's own proposals.

    Example:
        >>> from cadet_magic.sql.target import Target
        >>> rank_functions("NVL", Target.named("postgresql"))
        ['coalesce']
    """
    out: list[str] = []
    equiv = target.facts.function_equivalents.get(name.lower())
    if equiv:
        out.append(equiv)
    for cand in engine or []:
        if cand not in out and cand.lower() != name.lower():
            out.append(cand)
    return out
