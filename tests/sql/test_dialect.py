"""sql/dialect.py: one home for dialect names, parsing and sqlglot's logger."""

import doctest
import logging

import pytest

import cadet_magic.sql.dialect as dialect
from cadet_magic.sql import validate


def test_doctests():
    assert doctest.testmod(dialect).failed == 0


@pytest.mark.parametrize(("name", "key", "resolved"), [
    ("postgresql", "postgres", "postgres"), ("PG", "postgres", "postgres"),
    ("mssql", "tsql", "tsql"), ("sqlite3", "sqlite", "sqlite"), ("MariaDB", "mysql", "mysql"),
    ("duckdb", "duckdb", "duckdb"), ("nosuch", "nosuch", None), (None, "", None),
])  # fmt: skip
def test_names(name, key, resolved):
    assert dialect.dialect_key(name) == key
    assert dialect.resolve_dialect(name) == resolved


def test_still_importable_from_validate():
    assert validate.resolve_dialect is dialect.resolve_dialect
    assert validate.parse_statements is dialect.parse_statements
    assert validate.DIALECT_ALIASES is dialect.DIALECT_ALIASES


def test_quiet_restores_the_level():
    logger = logging.getLogger("sqlglot")
    before = logger.level
    with dialect.quiet_sqlglot():
        assert logger.level == logging.ERROR
    assert logger.level == before
