"""Spark SQL on a real local classic session and a real Spark Connect server (one of each per
test session): results bounded in rows, schema from the catalog and its cache, the hostile
corpus refused by the check and by Spark's own parse, settings and job groups restored,
time limit and Ctrl-C cancelling exactly the agent's work."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.session import DbSession
from cadet_magic.db.spark import SparkPlanRefused, SparkRunner
from cadet_magic.errors import QueryTimeout
from cadet_magic.sql.validate import validate_sql
from tests.helpers import TIME_SLACK

pytestmark = pytest.mark.spark

HOSTILE = json.loads((Path(__file__).parent / "spark_hostile.json").read_text())["cases"]
RUNAWAY = "SELECT count(*) AS n FROM range(1000000000) a CROSS JOIN range(1000000000) b"
_READY: set[int] = set()


def _tables(spark) -> None:
    """``victim`` (a parquet table, 3 rows, comments) and ``items`` (a temporary view)."""
    if id(spark) in _READY:
        return
    spark.sql("DROP TABLE IF EXISTS victim")
    spark.sql(
        "CREATE TABLE victim (id INT COMMENT 'row key', status STRING) USING parquet "
        "COMMENT 'things to keep'"
    )
    spark.sql("INSERT INTO victim VALUES (1, 'open'), (2, 'paid'), (3, 'open')")
    spark.sql(
        "CREATE OR REPLACE TEMP VIEW items AS SELECT id, concat('item', id) AS name FROM range(5)"
    )
    _READY.add(id(spark))


@pytest.fixture
def runner(spark):
    _tables(spark)
    return SparkRunner(spark, session=DbSession())


def _error_of(runner, sql: str) -> BaseException | None:
    try:
        runner.run(sql, limit=5, timeout=60)
    except Exception as e:  # noqa: BLE001 - the error is what the test looks at
        return e
    return None


def _victim_intact(spark) -> None:
    """``victim``'s rows and columns, ``items``, no new table, nothing cached (one query)."""
    row = spark.sql(
        "SELECT (SELECT to_json(sort_array(collect_list(struct(*)))) FROM victim) AS v, "
        "(SELECT count(*) FROM items) AS n"
    ).collect()[0]
    assert row[0] == '[{"id":1,"status":"open"},{"id":2,"status":"paid"},{"id":3,"status":"open"}]'
    assert row[1] == 5
    names = {t.name for t in spark.catalog.listTables()}
    assert {"victim", "items"} <= names and "pwn" not in names
    assert not spark.catalog.isCached("victim")


def test_resolves_a_spark_session(spark):
    r = resolve_runner(spark)
    assert isinstance(r, SparkRunner) and r.dialect == "spark"
    assert r.connect == ("connect" in type(spark).__module__)


def test_rows_are_bounded_and_typed(runner):
    r = runner.run("SELECT id, id * 2 AS twice FROM range(100000)", limit=5, timeout=60)
    assert r.columns == ["id", "twice"] and len(r.rows) == 5
    assert r.truncated and r.truncation == "rows" and r.rows[1] == (1, 2)
    r = runner.run("SELECT status, count(*) AS n FROM victim GROUP BY status ORDER BY n DESC", limit=5, timeout=60)  # fmt: skip
    assert r.rows == [("open", 2), ("paid", 1)] and not r.truncated


def test_byte_budget_cuts_the_rows(runner):
    r = runner.run(
        "SELECT repeat('x', 1000) AS s FROM range(50)", limit=40, timeout=60, max_bytes=5000
    )
    assert r.truncated and r.truncation == "bytes" and 0 < len(r.rows) < 40


def test_schema_from_the_catalog_cached_and_invalidated(spark, runner, monkeypatch):
    # This test is about what the catalog gives; the sampling budget (a few seconds) is cut by
    # a loaded machine, where the Connect server answers the sample query late.
    monkeypatch.setattr("cadet_magic.db.spark.SAMPLE_BUDGET", 60.0)
    s = runner.schema()
    victim = s.table("victim")
    assert victim.comment == "things to keep"
    assert [(c.name, c.type, c.comment) for c in victim.columns] == [
        ("id", "int", "row key"),
        ("status", "string", None),
    ]
    assert victim.columns[1].samples == ("open", "paid")
    assert s.table("items").column_names() == ["id", "name"]
    assert s.dialect == "spark" and s.functions is not None
    assert "upper" in s.functions.allowed and "reflect" not in s.functions.allowed
    cache = runner.session.schema_cache
    assert runner.schema() is s and cache.reads == 1
    spark.sql("CREATE OR REPLACE TEMP VIEW items AS SELECT id, id AS price FROM range(5)")
    try:
        assert runner.schema().table("items").column_names() == ["id", "price"]
        assert cache.reads == 2
    finally:
        spark.sql(
            "CREATE OR REPLACE TEMP VIEW items AS SELECT id, concat('item', id) AS name FROM range(5)"
        )


_SCHEMAS: dict[int, object] = {}


@pytest.mark.parametrize("case", HOSTILE, ids=[c["id"] for c in HOSTILE])
def test_hostile_refused_by_the_check(spark_classic, case):
    """The check with the session's own catalog (tables, functions) refuses every case."""
    spark = spark_classic
    _tables(spark)
    schema = _SCHEMAS.get(id(spark)) or _SCHEMAS.setdefault(
        id(spark), SparkRunner(spark, session=DbSession()).schema()
    )
    v = validate_sql(case["sql"], "spark", [t.name for t in schema.tables], schema.functions)
    assert not v.ok and v.issues[0].code == case["check"], (case, v.issues)


@pytest.mark.parametrize("case", HOSTILE, ids=[c["id"] for c in HOSTILE])
def test_hostile_stopped_by_spark_itself(spark, runner, case):
    """The runner alone, with no sqlglot check in front: Spark's parse stops every case."""
    before = dict(spark.conf.getAll)
    try:
        if case["engine"] == "literal":
            r = runner.run(case["sql"], limit=5, timeout=60)
            assert r.rows == [(case["sql"].split("'")[1],)]
        else:
            error = _error_of(runner, case["sql"])
            assert error is not None, case
            if case["engine"] == "refused" and not runner.connect:
                # classic: the parser's plan names a command. Connect parses the wrapped form
                # only, where a command is a syntax error (or, for a bare word, a table name).
                assert isinstance(error, SparkPlanRefused), error
    finally:
        after = dict(spark.conf.getAll)
    assert after == before  # no setting changed, pinned ones restored
    assert spark.catalog.currentDatabase() == "default"
    _victim_intact(spark)
    assert not Path("/tmp/cadet_spark_pwn").exists()


def test_user_settings_restored_exactly(spark, runner):
    spark.conf.set("spark.sql.runSQLOnFiles", "true")
    spark.conf.unset("spark.sql.variable.substitute")
    try:
        runner.run("SELECT 1 AS one", limit=5, timeout=60)
        settings = dict(spark.conf.getAll)
        assert settings["spark.sql.runSQLOnFiles"] == "true"
        assert "spark.sql.variable.substitute" not in settings
        assert "spark.sql.scripting.enabled" not in settings
    finally:
        spark.conf.unset("spark.sql.runSQLOnFiles")


def test_reserved_words_stay_reserved(runner):
    assert "PARSE_SYNTAX_ERROR" in str(_error_of(runner, "SELECT id FROM victim WHERE"))


def test_timeout_cancels_only_our_work(spark, runner):
    t0 = time.monotonic()
    with pytest.raises(QueryTimeout):
        runner.run(RUNAWAY, limit=5, timeout=2.0)
    assert time.monotonic() - t0 < 2.0 + TIME_SLACK
    assert runner.run("SELECT count(*) AS n FROM victim", limit=5, timeout=60).rows == [(3,)]
    if not runner.connect:
        _nothing_running(spark)
        assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


def test_job_group_of_the_user_is_kept(spark_classic):
    _tables(spark_classic)
    sc = spark_classic.sparkContext
    sc.setJobGroup("users-group", "mine")
    try:
        SparkRunner(spark_classic, session=DbSession()).run("SELECT 1", limit=5, timeout=60)
        assert sc.getLocalProperty("spark.jobGroup.id") == "users-group"
        assert sc.getLocalProperty("spark.job.description") == "mine"
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
        sc.setLocalProperty("spark.job.interruptOnCancel", None)


def test_ctrl_c_cancels_the_query(spark, runner):
    # a real SIGINT, as the kernel sends it (it interrupts the blocked client call)
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run(RUNAWAY, limit=5, timeout=120)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 1.5 + TIME_SLACK
    assert runner.run("SELECT count(*) AS n FROM victim", limit=5, timeout=60).rows == [(3,)]
    if not runner.connect:
        _nothing_running(spark)


def _nothing_running(spark) -> None:
    """No job of the session is still active (cancelled tasks wind down within seconds)."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 30
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tracker.getActiveJobsIds() == []


def test_jupysql_spark_connection_is_used(ipython_shell, spark):
    _tables(spark)
    ipython_shell.user_ns["spark_session"] = spark
    ipython_shell.run_line_magic("sql", "spark_session --alias cadet_spark")
    try:
        r = resolve_runner(None)
        assert isinstance(r, SparkRunner) and r.spark is spark
    finally:
        ipython_shell.run_line_magic("sql", "--close cadet_spark")


def test_ask_magic_with_con_spark(ipython_shell, spark):
    """``%%ask --con spark`` end to end with a scripted model: a misspelt column first (Spark's
    proposal becomes the feedback), then the right query. (A wrong name that is the beginning
    of a real one at the end of the query, ``GROUP BY stat``, reads as a cut-off reply.)"""
    from tests.helpers import fake_model, sql_reply

    _tables(spark)
    ip = ipython_shell
    ip.user_ns["spark"] = spark
    ip.user_ns["model"] = fake_model(
        sql_reply("SELECT stauts, count(*) AS n FROM victim GROUP BY stauts"),
        sql_reply("SELECT status, count(*) AS n FROM victim GROUP BY status ORDER BY n DESC"),
    )
    r = ip.run_cell_magic("ask", "--model model --con spark --no-fallback", "Victims per status?")
    assert r.ok and r.df.values.tolist() == [["open", 2], ["paid", 1]], r.attempts
    first = r.attempts[0]
    assert first.category == "column_not_found" and "victim.status" in first.suggestions[:3]
    assert "status" in (first.feedback or "")
