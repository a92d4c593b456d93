"""A driver's exception (or the text it prints) as an :class:`~cadet_magic.errors.EngineError`
read through its engine's table, and :func:`diagnose_error`, the diagnosis of one (edge: no
driver is imported here; stdlib only, so it runs in Pyodide too).

The runners read their own errors (each run's failure goes through its
:meth:`~cadet_magic.db.base.BaseRunner.engine_error` and its engine's table); this is for
code that holds a driver's error without a runner: a query run directly on a connection, a
logged message.

Example:
    >>> import sqlite3
    >>> try:
    ...     sqlite3.connect(":memory:").execute("SELECT amout")
    ... except sqlite3.Error as e:
    ...     err = engine_error(e)
    >>> err.code, err.message, err.kind.value, err.engine
    ('SQLITE_ERROR', 'no such column: amout', 'column_not_found', 'sqlite')
    >>> engine_error('(pymysql.err.OperationalError) (1054, "Unknown column \\'amout\\' in \\'SELECT\\'")').sqlstate
    '42703'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cadet_magic.db.base import read_exception
from cadet_magic.db.error_reader import ENGINES, JUPYSQL_MARK, read, table_for
from cadet_magic.errors import EngineError, exception_chain

if TYPE_CHECKING:
    from cadet_magic.diagnose.model import Diagnosis

__all__ = ["JUPYSQL_MARK", "diagnose_error", "engine_error", "read_error"]

_MYSQL_MODULES = ("pymysql", "MySQLdb", "mysql.connector", "_mysql", "mariadb")
#: Driver modules -> the engine whose reader knows their errors (the first that matches).
_DRIVERS: tuple[tuple[str | tuple[str, ...], str], ...] = (
    ("pyspark", "spark"),
    (_MYSQL_MODULES, "mysql"),
    ("psycopg", "postgres"),
    ("sqlite3", "sqlite"),
    (("_duckdb", "duckdb"), "duckdb"),
)


def engine_error(
    error: BaseException | str, engine: str | None = None, *, sql: str | None = None
) -> EngineError:
    """The :class:`EngineError` of ``error`` read through ``engine``'s table: a driver's
    exception (raw, SQLAlchemy- or jupysql-wrapped; its engine known by its driver when
    ``engine`` is not given), or a message as a driver printed it (read by every known table
    when ``engine`` is not given). ``sql``, the failed query as the model wrote it, lets the
    error name functions as written there (see :func:`~cadet_magic.db.error_table.read`).

    Example:
        >>> engine_error('Binder Error: Referenced table "o" not found!', "duckdb").kind.value
        'table_not_found'
    """
    if isinstance(error, EngineError):
        if error.engine is not None and sql is None:
            return error  # read by its engine's runner already
        return read_error(error, engine or error.engine, sql)
    if isinstance(error, str):
        base, found = _from_text(error, engine)
        return read_error(base, found, sql)
    base, found = _from_exception(error, engine)
    read = read_error(base, found, sql)
    read.__cause__ = error  # the driver's exception, as when a runner raises it
    return read


def read_error(error: EngineError, engine: str | None, sql: str | None = None) -> EngineError:
    """``error`` read through ``engine``'s table, naming functions as ``sql`` writes them."""
    table = table_for(engine)
    renamed: Mapping[str, str] = {}
    if sql:
        from cadet_magic.sql.target import Target
        from cadet_magic.sql.validate import renamed_functions

        renamed = renamed_functions(sql, Target.named(table.dialect or engine))
    return read(error, table, renamed=renamed, written=sql)


def diagnose_error(
    error: BaseException | str,
    *,
    engine: str | None = None,
    sql: str | None = None,
    schema: Any = None,
) -> Diagnosis:
    """The diagnosis of an engine's error: ``error`` (a driver's exception, or its message as
    printed) read through ``engine``'s own reader (``duckdb``, ``sqlite``, ``postgresql``,
    ``mysql``, ``spark``; a message of an engine not named is read by all of them), then
    diagnosed against the failed ``sql`` and the ``schema`` (a ``{table: [column, ...]}``
    mapping or a :class:`~cadet_magic.schema.structure.Schema`).

    Example:
        >>> d = diagnose_error("no such column: amout", engine="sqlite",
        ...                    sql="SELECT amout FROM orders", schema={"orders": ["amount"]})
        >>> d.category.value, d.suggestions
        ('column_not_found', ['orders.amount'])
    """
    from cadet_magic.diagnose.failures import diagnose
    from cadet_magic.sql.target import Target

    read = engine_error(error, engine, sql=sql)
    target = Target.named(table_for(engine).dialect or engine) if engine else None
    return diagnose(read, sql=sql, target=target, schema=schema)


def _engine_of(modules: Iterable[str]) -> str | None:
    modules = list(modules)
    for prefixes, engine in _DRIVERS:
        if any(m.startswith(prefixes) for m in modules):
            return engine
    return None


def _from_exception(error: BaseException, engine: str | None) -> tuple[EngineError, str | None]:
    """The facts a driver's exception carries, read by its engine's driver reader (the engine
    named, else the one its driver's module tells), and that engine."""
    modules = [type(e).__module__ for e in exception_chain(error)]
    engine = engine or _engine_of(modules)
    driver = table_for(engine).driver if engine else None
    if driver is not None:
        return driver(error), engine
    if JUPYSQL_MARK in str(error) and not any(
        m.startswith(("sqlalchemy", "_duckdb")) for m in modules
    ):
        return read_exception(error, plain=str(error)), engine
    return read_exception(error), engine


def _from_text(text: str, engine: str | None) -> tuple[EngineError, str | None]:
    """A message as a driver printed it, read by the named engine's reader of printed errors
    (by each engine's, when none is named: MySQL's ``(1054, "...")``); else the text as is."""
    names = [engine] if engine else list(ENGINES)
    for name in names:
        printed = table_for(name).printed
        found = printed(text) if printed is not None else None
        if found is not None:
            return found, engine or name
    return EngineError(text), engine
