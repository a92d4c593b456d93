"""The database the agent answers from, as the check and the diagnosis need it: one frozen
:class:`Target`, built once when the schema is read and passed down whole (stdlib + sqlglot).

It holds the engine's name (whose reader reads its errors), the name of the SQL dialect it
speaks, that dialect resolved once into sqlglot's dialect object, the tables a query may read,
each table's columns, the engine's function catalog and whether a MySQL session reads double
quotes as names. The steps that parse, write, check or diagnose SQL take it, never a dialect's
name nor an argument list assembled again; an entry point that takes a dialect's name
resolves it once (:func:`as_target`), as sqlglot's optimizer rules resolve theirs.

Example:
    >>> t = Target.named("postgresql")
    >>> t.engine, t.name, type(t.dialect).__name__, t.tables
    ('postgres', 'postgres', 'Postgres', None)
    >>> u = Target.named("nonsense")  # a name sqlglot does not know: its generic SQL
    >>> u.name, u.read, type(u.dialect).__name__
    ('nonsense', None, 'Dialect')
    >>> t.with_names(["orders"], {"orders": ["id", "amount"]}).columns["orders"]
    ('id', 'amount')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import sqlglot

from cadet_magic.sql.dialect import dialect_key, dialect_of, resolve_dialect
from cadet_magic.sql.engine_facts import EngineFacts, facts_for
from cadet_magic.sql.functions import FunctionCatalog

__all__ = ["KnownSchema", "Target", "as_target"]


class _KnownTable(Protocol):
    @property
    def name(self) -> str: ...

    def column_names(self) -> list[str]: ...


class KnownSchema(Protocol):
    """What a :class:`Target` reads of a schema (a :class:`~cadet_magic.schema.structure.Schema`
    is one): the dialect layer declares it, so that it imports nothing of ``schema/``, which
    builds on it."""

    @property
    def tables(self) -> Sequence[_KnownTable]: ...

    @property
    def functions(self) -> Any: ...

    @property
    def ansi_quotes(self) -> bool: ...

    def table_names(self) -> list[str]: ...


@dataclass(frozen=True, eq=False)
class Target:
    """The database a query is checked for, runs on and is diagnosed against.

    Attributes:
        engine: the engine's name, under which its error table is registered (``duckdb``,
            ``postgres``; the dialect's name unless the runner names another).
        name: the dialect's name, resolved to sqlglot's when sqlglot knows it (``postgres``
            for ``postgresql``), as given otherwise; None: generic SQL. Tables keyed by
            dialect (function equivalents, the prompt's wording) are read with it.
        read: sqlglot's name of the dialect (None: sqlglot's generic SQL).
        dialect: sqlglot's dialect object for ``read``, made once and handed to sqlglot
            wherever SQL is parsed or written.
        tables: the tables a query may read (None: no allow-list, the schema is not known).
        columns: each table's columns; given, the check writes a double-quoted token the
            engine reads as a string in single quotes (None: not known, left as written).
        functions: the engine's function catalog (the allow-list), or None.
        ansi_quotes: the MySQL/MariaDB session's ``sql_mode`` has ``ANSI_QUOTES``: double
            quotes are names, never strings.
    """

    engine: str
    name: str | None
    read: str | None
    dialect: sqlglot.Dialect = field(repr=False)
    tables: tuple[str, ...] | None = None
    columns: Mapping[str, tuple[str, ...]] | None = field(default=None, repr=False)
    functions: FunctionCatalog | None = field(default=None, repr=False)
    ansi_quotes: bool = False

    @classmethod
    def named(cls, dialect: str | None, engine: str | None = None) -> Target:
        """The target of a dialect's name, resolved once, with nothing known of its schema.

        Example:
            >>> Target.named("sqlite3").read, Target.named(None).name
            ('sqlite', None)
        """
        read = resolve_dialect(dialect)
        name = read or (dialect_key(dialect) or None)
        return cls(engine or name or "", name, read, dialect_of(read))

    def with_names(
        self,
        tables: Iterable[str] | None,
        columns: Mapping[str, Iterable[str]] | None = None,
        functions: FunctionCatalog | None = None,
        ansi_quotes: bool = False,
    ) -> Target:
        """A copy knowing the schema's names: the tables a query may read (None: any), their
        columns (None: not known), the function catalog and how the session reads double
        quotes."""
        if isinstance(tables, str):
            tables = [tables]
        return dataclasses.replace(
            self,
            tables=None if tables is None else tuple(tables),
            columns=None
            if columns is None
            else MappingProxyType({t: tuple(c) for t, c in columns.items()}),
            functions=functions,
            ansi_quotes=ansi_quotes,
        )

    def with_schema(self, schema: KnownSchema) -> Target:
        """A copy knowing ``schema``'s names: its tables (None when it has none: the schema
        could not be read), their columns, its function catalog and its ``ansi_quotes``.

        Example:
            >>> from cadet_magic.schema.structure import Schema
            >>> t = Target.named("sqlite").with_schema(Schema.from_mapping({"t": ["a"]}))
            >>> t.tables, dict(t.columns), t.functions
            (('t',), {'t': ('a',)}, None)
        """
        return self.with_names(
            tuple(schema.table_names()) if schema.tables else None,
            {t.name: t.column_names() for t in schema.tables},
            schema.functions,
            schema.ansi_quotes,
        )

    @property
    def key(self) -> str:
        """The dialect's name as tables keyed by dialect spell it (``""`` for generic SQL)."""
        return dialect_key(self.name)

    @property
    def facts(self) -> EngineFacts:
        """What the diagnosis needs to know of the dialect's engine (its date functions, its
        function equivalents, the constructs it lacks, how it compares names' case).

        Example:
            >>> Target.named("postgresql").facts.case_sensitive, Target.named(None).facts.unsupported
            (True, ())
        """
        return facts_for(self.key)


def as_target(dialect: Target | str | None, engine: str | None = None) -> Target:
    """``dialect`` as a :class:`Target`: itself, or the target of a dialect's name resolved
    once (the entry points that take a name call this once, then pass the target down).

    Example:
        >>> t = as_target("duckdb")
        >>> as_target(t) is t, t.engine
        (True, 'duckdb')
    """
    if isinstance(dialect, Target):
        return dialect
    return Target.named(dialect, engine)
