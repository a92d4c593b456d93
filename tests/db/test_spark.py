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


def test_jupysql_loaded_without_pyspark_still_reads_spark(spark, monkeypatch):
    """jupysql loaded with pyspark kept out (cadet_magic.db.jupysql) holds stand-ins for the
    pyspark classes it took at import: its Spark path still runs a query and still recognises
    Spark's analysis errors, on classic and Connect sessions."""
    import sys

    import sql.run.sparkdataframe as frames
    import sql.util

    from cadet_magic.db.jupysql import JUPYSQL_PYSPARK, _later

    for module, name, source, cls in JUPYSQL_PYSPARK:
        monkeypatch.setattr(sys.modules[module], name, _later(source, cls))
    df = spark.sql("SELECT 1 AS one")
    assert isinstance(
        df, frames.CDataFrame if "connect" in type(df).__module__ else frames.DataFrame
    )
    assert not isinstance(42, frames.DataFrame)
    proxy = frames.handle_spark_dataframe(df)
    assert [tuple(r) for r in proxy.fetchall()] == [(1,)]
    with pytest.raises(Exception) as raised:
        spark.sql("SELECT * FROM no_such_table_here").collect()
    assert sql.util.is_non_sqlalchemy_error(raised.value)
    assert not sql.util.is_non_sqlalchemy_error(ValueError("not Spark's"))


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


#: A checked-looking query that collects 3 x 10^8 values into one buffer: it ended the local
#: JVM (the user's SparkSession) and the Connect server's SparkContext.
COLLECT_ALL = "SELECT size(collect_list(id)) AS n FROM range(300000000)"


@pytest.mark.parametrize(
    "sql",
    [
        COLLECT_ALL,
        "SELECT id % 2 AS k, collect_set(id) AS s FROM range(300000000) GROUP BY id % 2",
        "SELECT median(id) AS m FROM range(300000000)",
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY id) AS p FROM range(300000000)",
        "SELECT array_agg(id) AS a FROM range(300000000)",
    ],
    ids=["collect_list", "collect_set", "median", "percentile_cont", "array_agg"],
)
def test_collecting_aggregates_never_run(spark, runner, sql):
    """Refused by the check on the live catalog, and by the runner's own plan check when the
    check is bypassed; the session keeps working."""
    schema = runner.schema()
    v = validate_sql(sql, "spark", schema.table_names(), schema.functions)
    assert not v.ok and v.issues[0].code == "forbidden_function", v.issues
    assert "one JVM" in v.issues[0].message
    with pytest.raises(SparkPlanRefused, match="one JVM"):
        runner.run(sql, limit=5, timeout=30)
    assert runner.run("SELECT count(*) AS n FROM range(10)", limit=5, timeout=30).rows == [(10,)]


def test_ask_and_magic_refuse_collect_list_and_answer(ipython_shell, spark):
    """Through ``ask()`` and ``%%ask``: the collecting aggregate is refused naming it, the
    retry answers, and the user's session is alive afterwards."""
    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    replies = [f"```sql\n{COLLECT_ALL}\n```", "```sql\nSELECT count(*) AS n FROM range(3)\n```"]
    r = cadet_magic.ask("How many?", con=spark, model=ScriptedModel({"How many?": replies}))
    first = r.attempts[0]
    assert first.outcome == "refused" and "one JVM" in first.error, first.error
    assert r.ok and r.rows == [(3,)]
    ip = ipython_shell
    ip.user_ns["spark"] = spark
    ip.user_ns["model"] = ScriptedModel({"How many?": replies})
    r = ip.run_cell_magic("ask", "--model model --con spark --no-fallback", "How many?")
    assert r.attempts[0].outcome == "refused" and r.ok
    assert spark.sql("SELECT 1 AS x").collect()[0][0] == 1


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT size(sequence(1, 1000000000)) AS n",
        "SELECT explode(sequence(1, 1e9)) AS x",
        "SELECT length(repeat('x', 2000000000)) AS n",
        "SELECT size(array_repeat(1, 500000000)) AS n",
    ],
)
def test_one_huge_value_never_runs(runner, sql):
    """A literal size that would build one value larger than a JVM heap is refused in Spark's
    parsed plan; the same functions with small sizes run."""
    with pytest.raises(SparkPlanRefused, match="builds one value"):
        runner.run(sql, limit=5, timeout=30)
    r = runner.run("SELECT size(sequence(1, 5)) AS n, lpad('7', 3, '0') AS p", limit=5, timeout=30)
    assert r.rows == [(5, "007")]


#: Sizes computed from the data: a row of ``victim`` asks for a value of up to 3 * 10^8
#: characters or elements (each call passes the check and the plan check: no literal is
#: above 10^7).
DATA_SIZED = [
    "SELECT length(repeat(status, id * 10000000 * 10)) AS n FROM victim",
    "SELECT length(repeat(repeat(status, 10000), 10000)) AS n FROM victim",
    "SELECT length(space(id * 10000000 * 10)) AS n FROM victim",
    "SELECT length(lpad(status, id * 10000000 * 10, 'x')) AS n FROM victim",
    "SELECT size(array_repeat(status, id * 10000000 * 10)) AS n FROM victim",
]


@pytest.mark.parametrize("sql", DATA_SIZED, ids=["repeat", "nested", "space", "lpad", "array"])
def test_sizes_from_the_data_are_bounded_on_spark(spark, sql):
    """Through ask(): the guarded call fails on Spark before the value is built (one line),
    the same calls with small sizes from the data answer, and the session keeps working."""
    import cadet_magic
    from cadet_magic.llm import ScriptedModel

    _tables(spark)
    small = "SELECT repeat(status, id) AS r, lpad(status, id + 4, '-') AS p FROM victim ORDER BY id"
    model = ScriptedModel({"Q?": [f"```sql\n{sql}\n```", f"```sql\n{small}\n```"]})
    r = cadet_magic.ask("Q?", con=spark, model=model, fallback=False, timeout=60)
    first = r.attempts[0]
    assert first.outcome != "ok" and "10000000" in (first.error or ""), first
    assert "\n" not in first.error.strip()
    assert r.ok and r.rows[0] == ("open", "-open") and r.rows[2][0] == "openopenopen", r.rows
    assert spark.sql("SELECT 1 AS x").collect()[0][0] == 1
