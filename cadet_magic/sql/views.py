"""Views read as what they read (portable: stdlib + sqlglot).

A query that names a view runs the view's own query: on DuckDB a view in a file someone sent
can call ``read_text('~/.ssh/id_ed25519')``, and ``SELECT note FROM notes`` passes every rule of
the check, which sees only a table name. So each view's definition, read from the engine's own
catalog with the schema, passes the same safety check as a query (the same dialect and function
catalog; any table may be named there). A view whose definition the check refuses, cannot
read, or that reads such a view, is **withheld**: left out of the schema, so the model is not
shown it, the ``stats`` level reads no figure from it, and a query naming it is refused as one
naming an unknown table. The user's own queries are untouched.

Example:
    >>> reasons = withheld_views({
    ...     "totals": "CREATE VIEW totals AS SELECT sum(amount) AS s FROM orders",
    ...     "notes": "CREATE VIEW notes AS SELECT content FROM read_text('/home/u/.ssh/key')",
    ...     "more": "CREATE VIEW more AS SELECT * FROM notes",
    ... }, Target.named("duckdb"))
    >>> sorted(reasons)
    ['more', 'notes']
    >>> reasons["more"]
    'it reads the withheld view notes'
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sqlglot import exp

from cadet_magic.sql.dialect import parse_statements, quiet_sqlglot
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import validate_sql

log = logging.getLogger("cadet_magic")


def view_query(definition: str, target: Target) -> exp.Expression | None:
    """The query a view runs: the body of its ``CREATE VIEW`` statement, or the definition
    itself when the catalog keeps only the query (PostgreSQL, MySQL); None when it cannot be
    read as one query."""
    with quiet_sqlglot():
        try:
            statements = parse_statements(definition, target.dialect)
        except Exception:  # noqa: BLE001 - unreadable: withheld
            return None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        return None
    tree = statements[0]
    if isinstance(tree, exp.Create):
        tree = tree.expression
    return tree if isinstance(tree, exp.Query) else None


def _names(tree: exp.Expression) -> set[str]:
    """Lowercased names a query reads from (bare and schema-qualified), CTE names included
    (harmless: a CTE is never a withheld view's name in its own query)."""
    found = set()
    for table in tree.find_all(exp.Table):
        if table.name:
            found.add(table.name.lower())
            if table.db:
                found.add(f"{table.db}.{table.name}".lower())
    return found


def withheld_views(
    definitions: Mapping[str, str], target: Target, already: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Which of the views ``definitions`` (name as the schema writes it -> definition from the
    catalog) are withheld, each with why (a short phrase); each definition is checked against
    ``target`` (its dialect and function catalog; any table may be named). ``already``: the
    relations withheld for reasons of their own (lower-cased name -> why), whose readers are
    withheld too."""
    reasons: dict[str, str] = dict(already or {})
    reads: dict[str, set[str]] = {}
    target = target.with_names(None, functions=target.functions)
    for name, definition in definitions.items():
        if name.lower() in reasons:
            continue
        query = view_query(definition or "", target)
        if query is None:
            reasons[name.lower()] = "its definition could not be read as one query"
            continue
        verdict = validate_sql(query.sql(dialect=target.dialect), target)
        if not verdict.ok:
            issue = verdict.issues[0] if verdict.issues else None
            detail = getattr(issue, "message", "") or "refused"
            reasons[name.lower()] = f"the safety check refuses its definition ({detail})"
            continue
        reads[name.lower()] = _names(query)
    changed = True
    while changed:  # a view that reads a withheld view is withheld too
        changed = False
        for name, names in reads.items():
            if name in reasons:
                continue
            bad = sorted(n for n in names if n in reasons and n != name)
            if bad:
                reasons[name] = f"it reads the withheld view {bad[0]}"
                changed = True
    return reasons


def without_withheld(
    schema: Any, definitions: Mapping[str, str], also: Mapping[str, str] | None = None
) -> Any:
    """``schema`` (a :class:`~cadet_magic.schema.structure.Schema` carrying its function catalog)
    without the views :func:`withheld_views` withholds, nor the relations of ``also`` (name ->
    why: a foreign table reading files); ``schema.withheld`` says which, why."""
    reasons = {k.lower(): v for k, v in (also or {}).items()}
    target = Target.named(schema.dialect).with_names(None, functions=schema.functions)
    reasons = withheld_views(definitions, target, reasons)
    if not reasons:
        return schema
    kept = tuple(t for t in schema.tables if t.name.lower() not in reasons)
    said = tuple(
        f"{'view' if t.name.lower() in definitions else 'relation'} {t.name}: "
        f"{reasons[t.name.lower()]}"
        for t in schema.tables
        if t.name.lower() in reasons
    )
    for line in said:
        log.warning("[schema] %s: withheld from the model and from the agent's queries", line)
    return replace(schema, tables=kept, withheld=said)
