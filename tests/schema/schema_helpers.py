"""Tables and schemas from plain JSON for the schema tests."""

from __future__ import annotations

from cadet_magic.schema.structure import Column, ForeignKey, Schema, Table


def table_from(data: dict) -> Table:
    return Table(
        name=data["name"],
        columns=tuple(
            Column(
                name=c["name"],
                type=c.get("type", ""),
                primary_key=c.get("primary_key", False),
                comment=c.get("comment"),
                samples=tuple(c.get("samples", ())),
            )
            for c in data.get("columns", ())
        ),
        foreign_keys=tuple(
            ForeignKey(tuple(f["columns"]), f["ref_table"], tuple(f["ref_columns"]))
            for f in data.get("foreign_keys", ())
        ),
        comment=data.get("comment"),
        schema=data.get("schema"),
        rows=tuple(tuple(r) for r in data.get("rows", ())),
        ddl=data.get("ddl"),
    )


def schema_from(tables: list[dict]) -> Schema:
    return Schema(tables=tuple(table_from(t) for t in tables))
