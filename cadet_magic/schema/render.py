"""The schema as compact prompt text (stdlib only).

Example:
    >>> from cadet_magic.schema.model import Schema
    >>> print(render_schema(Schema.from_mapping({"orders": ["order_id", "amount"]})))
    orders(order_id, amount)
"""

from __future__ import annotations

from cadet_magic.schema.model import Schema, Table


def render_table(table: Table) -> str:
    cols = []
    for c in table.columns:
        text = c.name
        if c.type:
            text += f" {c.type}"
        if c.primary_key:
            text += " PK"
        if c.samples:
            text += " e.g. " + "|".join(c.samples)
        cols.append(text)
    line = f"{table.name}({', '.join(cols)})"
    for fk in table.foreign_keys:
        line += f"\n  FK ({', '.join(fk.columns)}) -> {fk.ref_table}({', '.join(fk.ref_columns)})"
    if table.comment:
        line += f"  -- {table.comment}"
    return line


def render_schema(schema: Schema) -> str:
    """One line per table with its columns (type, PK, samples) and foreign keys."""
    return "\n".join(render_table(t) for t in schema.tables)
