"""The schema the agent shows the model and checks names against (stdlib only).

Example:
    >>> s = Schema.from_mapping({"orders": ["order_id", "amount"]})
    >>> s.table_names()
    ['orders']
    >>> s.table("ORDERS").column_names()
    ['order_id', 'amount']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlglot

from cadet_magic.sql.dialect import dialect_of


@dataclass(frozen=True)
class Column:
    """A column: its name, declared type and what else the prompt may use."""

    name: str
    type: str = ""
    primary_key: bool = False
    comment: str | None = None
    samples: tuple[str, ...] = ()
    #: ``samples`` holds every distinct non-null value the column had when sampled.
    samples_complete: bool = False


@dataclass(frozen=True)
class ForeignKey:
    """``columns`` of the owning table reference ``ref_columns`` of ``ref_table``."""

    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table (or view) with its columns and foreign keys."""

    name: str
    columns: tuple[Column, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    comment: str | None = None
    schema: str | None = None
    #: A few of its rows, each value as text (None for NULL), in the order of ``columns``.
    rows: tuple[tuple[str | None, ...], ...] = ()
    #: Its ``CREATE`` statement as the engine keeps it, where the catalog read one.
    ddl: str | None = None

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


@dataclass(frozen=True)
class Schema:
    """The tables of one database, in catalog order."""

    tables: tuple[Table, ...] = ()
    dialect: str | None = None
    _index: dict = field(default_factory=dict, compare=False, repr=False)
    #: The functions the engine's catalog allows (a ``FunctionCatalog``), read with the
    #: tables; None when it was not read (the safety check then uses its fixed rules only).
    functions: Any = field(default=None, compare=False, repr=False)
    #: MySQL/MariaDB: the connection's ``sql_mode`` reads double quotes as names
    #: (``ANSI_QUOTES``), so the safety check reads ``"x"`` as a column, never a string.
    ansi_quotes: bool = field(default=False, compare=False, repr=False)
    #: Views left out because the safety check refuses what they read, each as
    #: ``"view NAME: why"`` (:mod:`cadet_magic.sql.views`).
    withheld: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({t.name.lower(): t for t in self.tables})

    @property
    def sqlglot_dialect(self) -> sqlglot.Dialect:
        """sqlglot's dialect object for :attr:`dialect`, whose style the prompt quotes names in
        (sqlglot's generic SQL, standard quoting, for a name sqlglot does not know).

        Example:
            >>> type(Schema(dialect="mysql").sqlglot_dialect).__name__
            'MySQL'
            >>> type(Schema(dialect="postgresql").sqlglot_dialect).__name__
            'Dialect'
        """
        try:
            return dialect_of(self.dialect)
        except ValueError:
            return dialect_of(None)

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, Iterable[str]], dialect: str | None = None
    ) -> Schema:
        """Builds a schema from a plain ``{table: [column, ...]}`` mapping."""
        return cls(
            tables=tuple(
                Table(name=t, columns=tuple(Column(name=c) for c in cols))
                for t, cols in mapping.items()
            ),
            dialect=dialect,
        )

    @classmethod
    def coerce(cls, value: Schema | Mapping[str, Iterable[str]] | None) -> Schema:
        """Accepts a Schema, a plain mapping or None (an empty schema)."""
        if value is None:
            return cls()
        if isinstance(value, Schema):
            return value
        return cls.from_mapping(value)

    def table(self, name: str) -> Table | None:
        """The table of that name, case-insensitively, or None."""
        return self._index.get(name.lower())

    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def linked(self, table: Table) -> list[tuple[str, list[tuple[str, str]]]]:
        """The tables ``table`` is joined to by a declared foreign key, either way:
        ``(other table, [(own column, other column), ...])``, in catalog order.

        Example:
            >>> s = Schema((Table("a", (Column("id"),)),
            ...             Table("b", (Column("a_id"),), (ForeignKey(("a_id",), "a", ("id",)),))))
            >>> s.linked(s.tables[0]), s.linked(s.tables[1])
            ([('b', [('id', 'a_id')])], [('a', [('a_id', 'id')])])
        """
        out: list[tuple[str, list[tuple[str, str]]]] = []
        for fk in table.foreign_keys:
            ref = self.table(fk.ref_table)
            if ref is not None and ref.name != table.name:
                out.append((ref.name, list(zip(fk.columns, fk.ref_columns, strict=False))))
        for other in self.tables:
            if other.name == table.name:
                continue
            for fk in other.foreign_keys:
                if fk.ref_table.lower() == table.name.lower():
                    out.append((other.name, list(zip(fk.ref_columns, fk.columns, strict=False))))
        return out
