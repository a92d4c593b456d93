"""Dialect names, parsing and sqlglot's logger: the one home for all three.

The notebook world names dialects its own way (SQLAlchemy's ``postgresql``, ``mssql``, a
driver's ``sqlite3``); sqlglot has its own names. :func:`dialect_key` maps a name without
asking sqlglot (for tables keyed by dialect), :func:`resolve_dialect` also checks that sqlglot
knows it, and :func:`dialect_of` is sqlglot's dialect object for a resolved name (each made
once per name; a :class:`~cadet_magic.sql.target.Target` and a
:class:`~cadet_magic.sql.query.CheckedQuery` carry it, and the functions here take it). :func:`quiet_sqlglot` silences sqlglot's parse warnings during one block.

Example:
    >>> dialect_key("PostgreSQL"), resolve_dialect("sqlite3"), resolve_dialect("nonsense")
    ('postgres', 'sqlite', None)
    >>> [type(t).__name__ for t in parse_statements("SELECT 1; SELECT 2;", dialect_of("duckdb"))]
    ['Select', 'Select']
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import cast

import sqlglot
from sqlglot import exp

#: Names the notebook world uses for dialects, mapped to sqlglot's names.
DIALECT_ALIASES = {
    "postgresql": "postgres",
    "pg": "postgres",
    "psycopg": "postgres",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "sqlite3": "sqlite",
    "mariadb": "mysql",
    "googlesql": "bigquery",
    "databricks": "databricks",
}


def dialect_key(dialect: str | None) -> str:
    """``dialect`` lower-cased and mapped to sqlglot's name ("" for None), unchecked.

    Example:
        >>> dialect_key(None), dialect_key("DuckDB"), dialect_key("mssql")
        ('', 'duckdb', 'tsql')
    """
    name = (dialect or "").lower()
    return DIALECT_ALIASES.get(name, name)


@lru_cache(maxsize=64)
def resolve_dialect(dialect: str | None) -> str | None:
    """The sqlglot dialect name for ``dialect`` (None when sqlglot does not know it): the one
    function that resolves a dialect name, once per name.

    Example:
        >>> resolve_dialect("postgresql"), resolve_dialect(None)
        ('postgres', None)
    """
    if not dialect:
        return None
    name = dialect_key(dialect)
    try:
        dialect_of(name)
    except ValueError:
        return None
    return name


@lru_cache(maxsize=64)
def dialect_of(read: str | None) -> sqlglot.Dialect:
    """The sqlglot dialect object for the resolved name ``read`` (None: sqlglot's generic SQL),
    made once per name and handed to sqlglot wherever it parses or writes SQL (sqlglot would
    otherwise look the name up and build a new dialect object on every call).

    Raises:
        ValueError: when sqlglot does not know ``read``.

    Example:
        >>> dialect_of("duckdb") is dialect_of("duckdb"), type(dialect_of(None)).__name__
        (True, 'Dialect')
    """
    return sqlglot.Dialect.get_or_raise(read)


@contextmanager
def quiet_sqlglot() -> Iterator[None]:
    """Silences sqlglot's warnings (e.g. 'falling back to Command') during one block.

    Example:
        >>> with quiet_sqlglot():
        ...     logging.getLogger("sqlglot").level == logging.ERROR
        True
    """
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parse_statements(sql: str, dialect: sqlglot.Dialect) -> list[exp.Expression]:
    """The statements of ``sql`` read in ``dialect`` (sqlglot's dialect object), without the
    empty ones a trailing ``;`` or comment leaves.

    Raises:
        sqlglot.errors.SqlglotError: when the SQL does not tokenize or parse.

    Example:
        >>> len(parse_statements("SELECT 1;  -- done", dialect_of(None)))
        1
    """
    with quiet_sqlglot():
        trees = sqlglot.parse(sql, read=dialect)
    return [
        cast(exp.Expression, t) for t in trees if t is not None and not isinstance(t, exp.Semicolon)
    ]


_MYSQL_GENERATOR: type | None = None


def _mysql_generator() -> type:
    """sqlglot's MySQL generator, writing only what both MySQL and MariaDB run: ``a REGEXP b``
    (MariaDB has no ``REGEXP_LIKE``) and a bare ``FROM DUAL`` (not the table `` `DUAL` ``)."""
    global _MYSQL_GENERATOR
    if _MYSQL_GENERATOR is None:
        generator = dialect_of("mysql").generator_class

        def regexp(self: sqlglot.Generator, node: exp.RegexpLike) -> str:
            if node.args.get("flag") is not None:  # no operator form: MySQL's function
                return self.function_fallback_sql(node)
            return self.binary(node, "REGEXP")

        class Generator(generator):  # type: ignore[misc, valid-type]
            TRANSFORMS = {**generator.TRANSFORMS, exp.RegexpLike: regexp}

            def from_sql(self, node: exp.From) -> str:
                table = node.this
                if (
                    isinstance(table, exp.Table)
                    and not table.args.get("db")
                    and not table.alias
                    and isinstance(table.this, exp.Identifier)
                    and not table.this.quoted
                    and table.name.lower() == "dual"
                ):
                    return f"{self.seg('FROM')} DUAL"
                return super().from_sql(node)

        _MYSQL_GENERATOR = Generator
    return _MYSQL_GENERATOR


def generate(tree: exp.Expression, dialect: sqlglot.Dialect) -> str:
    """The SQL text of ``tree`` in ``dialect`` (sqlglot's dialect object), comments dropped:
    what runs on the engine.

    For MySQL/MariaDB the text keeps the spellings both servers accept (sqlglot alone writes
    ``REGEXP`` as ``REGEXP_LIKE(...)``, which MariaDB lacks, and quotes ``DUAL`` as a table).

    Example:
        >>> mysql = dialect_of("mysql")
        >>> generate(parse_statements("SELECT 1 FROM DUAL WHERE 'a' RLIKE 'b'", mysql)[0], mysql)
        "SELECT 1 FROM DUAL WHERE 'a' REGEXP 'b'"
    """
    with quiet_sqlglot():
        if type(dialect) is type(dialect_of("mysql")):
            return _mysql_generator()(dialect=dialect, comments=False).generate(tree, copy=True)
        return tree.sql(dialect=dialect, comments=False)
