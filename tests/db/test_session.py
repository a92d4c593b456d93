"""Runners take their schema cache and watchdog from a DbSession, never from a module global."""

from __future__ import annotations

import sqlite3

import duckdb

from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.schema_cache import SCHEMA_CACHE
from cadet_magic.db.session import DEFAULT, DbSession, current, using
from cadet_magic.db.watchdog import WATCHDOG


def test_the_default_session_holds_the_process_objects() -> None:
    assert current() is DEFAULT
    assert DEFAULT.schema_cache is SCHEMA_CACHE and DEFAULT.watchdog is WATCHDOG


def test_runners_made_inside_using_keep_that_session() -> None:
    mine = DbSession()
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (x INT)")
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE u (y INT)")
    with using(mine):
        runners = [resolve_runner(duck), resolve_runner(lite)]
    outside = resolve_runner(duck)
    reads = SCHEMA_CACHE.reads
    for runner in runners:
        assert runner.session is mine
        runner.schema()
        assert runner.run("SELECT 1", limit=5, timeout=5).rows == [(1,)]
    assert mine.schema_cache.reads == 2 and SCHEMA_CACHE.reads == reads
    assert outside.session is DEFAULT


def test_an_explicit_session_wins() -> None:
    mine = DbSession()
    with using(DbSession()):
        from cadet_magic.db.duckdb import DuckDBRunner

        assert DuckDBRunner(duckdb.connect(), session=mine).session is mine
