"""The schema as ``CREATE TABLE`` statements, the form code models read most (stdlib + sqlglot).

One statement per table, rebuilt from the catalog (:class:`~cadet_magic.schema.structure.Table`) so
that every engine gets the same form: columns with their types and primary key, composite
primary keys and foreign keys as constraints, comments and a few values of a low-cardinality
text column as a ``--`` comment after the column, a table's comment above it; then, where the
representation asks for rows, a few of the table's rows in a comment under it. The ``engine``
form shows the engine's own statement instead where the catalog read one (SQLite, DuckDB), with
the catalog's comments and sample values as ``--`` lines around it.

Everything that comes from the database's content (comments, values, rows, the engine's own
statement) is made safe as in :mod:`cadet_magic.schema.render`: one line per value, nothing that
can close the schema's fence or the rows' comment, or open a Markdown code fence.

Example:
    >>> from cadet_magic.schema.structure import Column, ForeignKey, Table
    >>> from cadet_magic.schema.render import Representation
    >>> t = Table("orders", (Column("id", "INTEGER", primary_key=True),
    ...     Column("status", "TEXT", samples=("paid", "open"), comment="*/ state"),
    ...     Column("customer_id", "INTEGER")),
    ...     (ForeignKey(("customer_id",), "customers", ("id",)),), comment="one per order",
    ...     rows=(("1", "paid", "7"), ("2", None, "7")))
    >>> print(create_table(t, Representation("create", "both")).replace("\\t", " | "))
    -- one per order
    CREATE TABLE orders (
      id INTEGER PRIMARY KEY,
      status TEXT, -- * / state; e.g. 'paid', 'open'
      customer_id INTEGER,
      FOREIGN KEY (customer_id) REFERENCES customers (id)
    );
    /* 2 rows of orders:
    id | status | customer_id
    1 | paid | 7
    2 | NULL | 7
    */
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cadet_magic.schema.quoting import literal, neutralize, quote_name
from cadet_magic.schema.representation import FULL, NAMES, Representation
from cadet_magic.schema.structure import Column, Table

if TYPE_CHECKING:
    import sqlglot

#: Characters of one value in a row shown at most.
MAX_CELL_CHARS = 40


def _names(names: tuple[str, ...] | list[str], dialect: sqlglot.Dialect | None) -> str:
    return ", ".join(quote_name(n, dialect) for n in names)


def column_line(
    column: Column,
    rep: Representation,
    detail: int,
    key: bool,
    dialect: sqlglot.Dialect | None,
    single_pk: bool,
) -> tuple[str, str]:
    """A column's definition and its trailing comment (``''`` when none)."""
    text = quote_name(column.name, dialect)
    if column.type and detail < NAMES:
        text += " " + neutralize(column.type, 40)
    if column.primary_key and single_pk:
        text += " PRIMARY KEY"
    notes = []
    if detail == FULL:
        if column.comment and rep.comments:
            notes.append(neutralize(column.comment, 160))
        if (
            column.samples
            and rep.samples in ("columns", "both")
            and not (key or column.primary_key)
        ):
            notes.append("e.g. " + ", ".join(literal(v) for v in column.samples[:3]))
    return text, "; ".join(notes)


def _cell(value: str | None) -> str:
    return "NULL" if value is None else neutralize(value, MAX_CELL_CHARS).replace("\t", " ")


def rows_block(table: Table, dialect: sqlglot.Dialect | None = None) -> str:
    """The table's rows in a comment (tab-separated, a header of its column names)."""
    if not table.rows:
        return ""
    n = len(table.rows)
    lines = [f"/* {n} row{'s' if n != 1 else ''} of {quote_name(table.name, dialect, True)}:"]
    lines.append("\t".join(quote_name(c.name, dialect) for c in table.columns))
    lines += ["\t".join(_cell(v) for v in row) for row in table.rows]
    return "\n".join([*lines, "*/"])


def engine_statement(ddl: str) -> str:
    """The engine's own statement as it keeps it, safe inside the fence (it cannot open a code
    fence; the fence's tag is chosen around it).

    Example:
        >>> engine_statement("CREATE TABLE t (a INT) -- ```\\n")
        'CREATE TABLE t (a INT) -- ` ` `'
    """
    return ddl.strip().replace("```", "` ` `")


def _engine_table(
    table: Table, rep: Representation, dialect: sqlglot.Dialect | None, rows: bool
) -> str:
    """The engine's statement with what the catalog says besides (which an engine's statement
    may not carry, e.g. DuckDB's comments): the table's comment above it, each column's
    comment and sample values as a ``-- column: ...`` line under it, then the rows."""
    keys = {name for fk in table.foreign_keys for name in fk.columns}
    lines = []
    if table.comment and rep.comments:
        lines.append(f"-- {neutralize(table.comment, 160)}")
    lines.append(engine_statement(table.ddl or ""))
    for c in table.columns:
        _, note = column_line(c, rep, FULL, c.name in keys, dialect, False)
        if note:
            lines.append(f"-- {quote_name(c.name, dialect)}: {note}")
    block = rows_block(table, dialect) if rows else ""
    return "\n".join(lines + ([block] if block else []))


def create_table(
    table: Table, rep: Representation, detail: int = 0, dialect: sqlglot.Dialect | None = None
) -> str:
    """One table as its statement (and, at full detail, its rows) under ``rep``."""
    rows = rep.samples in ("rows", "both") and detail == FULL
    if rep.form == "engine" and table.ddl and detail == FULL:
        return _engine_table(table, rep, dialect, rows)
    keys = {name for fk in table.foreign_keys for name in fk.columns}
    pk = [c.name for c in table.columns if c.primary_key]
    parts = [
        column_line(c, rep, detail, c.name in keys, dialect, len(pk) == 1) for c in table.columns
    ]
    if len(pk) > 1:
        parts.append((f"PRIMARY KEY ({_names(pk, dialect)})", ""))
    if rep.keys:
        for fk in table.foreign_keys:
            ref = quote_name(fk.ref_table, dialect, qualified=True)
            parts.append(
                (
                    f"FOREIGN KEY ({_names(fk.columns, dialect)}) REFERENCES "
                    f"{ref} ({_names(fk.ref_columns, dialect)})",
                    "",
                )
            )
    lines = []
    if table.comment and detail == FULL and rep.comments:
        lines.append(f"-- {neutralize(table.comment, 160)}")
    lines.append(f"CREATE TABLE {quote_name(table.name, dialect, qualified=True)} (")
    for i, (text, note) in enumerate(parts):
        comma = "," if i < len(parts) - 1 else ""
        lines.append(f"  {text}{comma}" + (f" -- {note}" if note else ""))
    lines.append(");")
    block = rows_block(table, dialect) if rows else ""
    return "\n".join(lines) + ("\n" + block if block else "")
