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


def test_one_home_for_the_dialect_names():
    """The old names under sql/validate.py are gone: dialects are read from sql/dialect.py."""
    assert not any(hasattr(validate, n) for n in ("DIALECT_ALIASES", "_quiet_sqlglot"))
    assert set(validate.__all__) == {
        "CheckedQuery",
        "Issue",
        "Validation",
        "renamed_functions",
        "validate_sql",
    }


def test_quiet_restores_the_level():
    logger = logging.getLogger("sqlglot")
    before = logger.level
    with dialect.quiet_sqlglot():
        assert logger.level == logging.ERROR
    assert logger.level == before
