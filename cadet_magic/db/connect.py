"""From whatever the user has to a runner (edge: drivers and jupysql imported lazily).

Accepted: a SQLAlchemy Engine or Connection, a native ``duckdb`` connection, a
``sqlite3`` connection, a ``SparkSession`` (classic or Spark Connect), a jupysql connection
object, an existing runner, or None for jupysql's current connection (``%sql ...``); and
DataFrames as tables: a pandas or polars DataFrame or an Arrow table (the table ``df``), or a
mapping of table names to them (:mod:`cadet_magic.db.frames`).

MySQL/MariaDB: a raw PyMySQL connection is accepted too (its runner opens connections of its
own with the same parameters).
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Mapping
from typing import Any

from cadet_magic.db.frames import is_frame
from cadet_magic.errors import NoConnectionError, UnsupportedConnectionError
from cadet_magic.runner import Runner


def _is_duckdb(obj: Any) -> bool:
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(obj, duckdb.DuckDBPyConnection)


def _is_sqlalchemy(obj: Any) -> bool:
    sa = sys.modules.get("sqlalchemy")
    return sa is not None and isinstance(obj, sa.engine.Engine | sa.engine.Connection)


def jupysql_current() -> Any:
    """jupysql's current connection object, or None (when jupysql is absent or unconnected)."""
    if "sql" not in sys.modules and "sql.connection" not in sys.modules:
        return None
    try:
        from sql.connection import ConnectionManager
    except Exception:  # noqa: BLE001 - not jupysql, or a broken install
        return None
    return ConnectionManager.current


def _from_jupysql(conn: Any) -> Runner:
    """A runner for jupysql's SQLAlchemyConnection or DBAPIConnection."""
    if getattr(conn, "is_dbapi_connection", False):
        return resolve_runner(getattr(conn, "_connection", None) or conn.connection)
    try:
        sa_conn = conn.connection_sqlalchemy
    except NotImplementedError:
        return resolve_runner(conn._connection)
    return resolve_runner(sa_conn)


def resolve_runner(con: Any = None) -> Runner:
    """The runner for ``con``; raises :class:`NoConnectionError` saying what to do, also when
    the database server cannot be reached."""
    try:
        return _resolve(con)
    except NoConnectionError:
        raise
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise NoConnectionError(
            f"Cannot connect to the database ({type(e).__name__}): {first}. Check that the "
            "server is running and reachable and the connection settings are right, then run "
            "the cell again."
        ) from e


def _resolve(con: Any = None) -> Runner:
    if con is None:
        current = jupysql_current()
        if current is None:
            raise NoConnectionError()
        return _from_jupysql(current)
    if isinstance(con, sqlite3.Connection):
        from cadet_magic.db.sqlite import SQLiteRunner

        return SQLiteRunner(con)
    if _is_duckdb(con):
        from cadet_magic.db.duckdb import DuckDBRunner

        return DuckDBRunner(con)
    if isinstance(con, Mapping) or is_frame(con):  # DataFrames asked as tables
        from cadet_magic.db.frames import frames_runner

        return frames_runner(con)
    if _is_sqlalchemy(con):
        from cadet_magic.db.sqlalchemy import runner_for_sqlalchemy

        return runner_for_sqlalchemy(con)
    if type(con).__module__.startswith("pymysql"):
        from cadet_magic.db.mysql import is_pymysql, runner_for_pymysql

        if is_pymysql(con):
            return runner_for_pymysql(con)
    # Spark: a classic or Spark Connect SparkSession (also jupysql's Spark connection's own)
    from cadet_magic.db.spark import is_spark_session

    if is_spark_session(con):
        from cadet_magic.db.spark import SparkRunner

        return SparkRunner(con)
    if hasattr(con, "connection_sqlalchemy") or getattr(con, "is_dbapi_connection", False):
        return _from_jupysql(con)
    if hasattr(con, "run") and hasattr(con, "schema") and hasattr(con, "dialect"):
        return con  # already a runner
    raise UnsupportedConnectionError(con)
