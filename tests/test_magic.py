"""%%ask in a real IPython shell with jupysql, on real engines, with scripted models."""

from __future__ import annotations

import duckdb
import pytest

from cadet_magic.display import mimebundle, render_text
from tests.helpers import fake_model, sql_reply, usage_error

ORDERS = (
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer VARCHAR, amount DOUBLE);"
    "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5), (3, 'ann', 7.5);"
)


@pytest.fixture
def ip(ipython_shell):
    return ipython_shell


@pytest.fixture
def duck(sql_duckdb):
    return sql_duckdb("duck", ORDERS)


def ask(ip, *replies, options="", question="Total spent per customer?"):
    ip.user_ns["model"] = fake_model(*replies)
    out = ip.run_cell_magic("ask", f"--model model {options}", question)
    return out, ip.user_ns.get("_ask")


def sql_still_works(ip):
    assert list(ip.run_line_magic("sql", "SELECT 1 AS one").dict()["one"]) == [1]


def test_first_try(duck):
    out, r = ask(duck, sql_reply("SELECT sum(amount) AS total FROM orders"))
    assert out is r and r.ok and r.df["total"].tolist() == [50.0] and len(r.attempts) == 1
    assert r.scripted and "scripted" in r.model
    bundle = mimebundle(r)
    assert "scripted" in bundle["text/plain"].lower() and "scripted" in bundle["text/html"].lower()
    sql_still_works(duck)


def test_misspelled_column_corrected_on_second_attempt(duck):
    out, r = ask(
        duck,
        sql_reply("SELECT customer, sum(amout) AS total FROM orders GROUP BY customer"),
        sql_reply(
            "SELECT customer, sum(amount) AS total FROM orders GROUP BY customer ORDER BY total DESC"
        ),
        options="-o totals",
    )
    assert r.ok and [a.outcome for a in r.attempts] == ["error", "ok"]
    assert r.attempts[0].category == "column_not_found" and r.attempts[0].feedback
    assert r.df.values.tolist() == [["bob", 32.5], ["ann", 17.5]]
    assert duck.user_ns["totals"] is r.df
    assert r.sql == r.attempts[1].sql
    sql_still_works(duck)  # DuckDB 2.0's aborted transaction was cleared


def test_three_failures_end_with_summary(duck):
    out, r = ask(
        duck,
        sql_reply("SELECT a FROM orders"),
        sql_reply("SELECT b FROM orders"),
        sql_reply("SELECT c FROM orders"),
        options="--no-fallback",
    )
    assert not r.ok and len(r.attempts) == 3 and r.stop_reason == "max_attempts"
    text = mimebundle(r)["text/plain"]
    assert "No answer" in text and "Traceback" not in text
    sql_still_works(duck)


def test_unchanged_sql_is_told_then_stops(duck):
    _, r = ask(
        duck,
        sql_reply("SELECT nope FROM orders"),
        sql_reply("SELECT nope FROM orders;"),
        sql_reply("SELECT nope FROM orders"),
        options="--no-fallback",
    )
    assert r.stop_reason == "max_attempts" and len(r.attempts) == 3
    assert "again" in r.attempts[1].feedback
    sql_still_works(duck)


def test_non_retryable_error_stops(duck):
    closed = duckdb.connect()
    closed.close()
    duck.user_ns["closed"] = closed
    _, r = ask(duck, sql_reply("SELECT 1"), sql_reply("SELECT 2"), options="--con closed")
    assert not r.ok and r.stop_reason == "not_retryable" and len(r.attempts) == 1
    assert r.attempts[0].category == "connection_error"
    sql_still_works(duck)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_attempts_never_exceed_max(duck, n):
    replies = [sql_reply(f"SELECT col{i} FROM orders") for i in range(n + 2)]
    _, r = ask(duck, *replies, options=f"--max-attempts {n} --no-fallback")
    assert len(r.attempts) == n
    sql_still_works(duck)


def test_line_magic_and_native_duckdb_connection(ip):
    con = duckdb.connect()
    con.execute(ORDERS)
    ip.user_ns["con"] = con
    ip.user_ns["model"] = fake_model(sql_reply("SELECT count(*) AS n FROM orders"))
    r = ip.run_line_magic("ask", "--model model --con con How many orders are there?")
    assert r.ok and r.df["n"].tolist() == [3] and r.question == "How many orders are there?"


def test_native_duckdb_connection_through_jupysql(ip):
    con = duckdb.connect()
    con.execute(ORDERS)
    ip.user_ns["native"] = con
    ip.run_line_magic("sql", "native --alias native")
    try:
        _, r = ask(
            ip,
            sql_reply("SELECT max(amount) AS m FROM orderz"),
            sql_reply("SELECT max(amount) AS m FROM orders"),
        )
        assert r.ok and r.df["m"].tolist() == [32.5] and r.attempts[0].category == "table_not_found"
        assert con.execute("SELECT count(*) FROM orders").fetchone() == (3,)
    finally:
        ip.run_line_magic("sql", "--close native")


def test_sqlite_through_jupysql(ip, tmp_path):
    ip.run_line_magic("sql", f"sqlite:///{tmp_path / 'shop.db'} --alias lite")
    try:
        ip.run_cell_magic("sql", "", ORDERS.replace("VARCHAR", "TEXT").replace("DOUBLE", "REAL"))
        _, r = ask(ip, sql_reply("SELECT customer FROM orders WHERE amount > 9 ORDER BY customer"))
        assert r.ok and r.df["customer"].tolist() == ["ann", "bob"] and r.dialect == "sqlite"
        sql_still_works(ip)
    finally:
        ip.run_line_magic("sql", "--close lite")


def test_postgres_through_jupysql(ip, pg_url):
    ip.run_line_magic("sql", f"{pg_url} --alias pg")
    try:
        ip.run_cell_magic(
            "sql",
            "",
            "DROP TABLE IF EXISTS orders; " + ORDERS.replace("DOUBLE", "DOUBLE PRECISION"),
        )
        _, r = ask(
            ip,
            sql_reply("SELECT customer, sum(amount) FROM orders"),
            sql_reply(
                "SELECT customer, sum(amount) AS total FROM orders GROUP BY customer ORDER BY customer"
            ),
        )
        assert r.ok, render_text(r)
        assert r.dialect == "postgres" and r.attempts[0].category == "aggregation_error"
        assert r.df.values.tolist() == [["ann", 17.5], ["bob", 32.5]]
        sql_still_works(ip)
    finally:
        ip.run_line_magic("sql", "--close pg")


def test_no_model_says_how_to_set_one(duck, monkeypatch):
    monkeypatch.delenv("CADET_MODEL", raising=False)
    text = usage_error(duck, "ask", "", "How many orders?")
    assert "--model" in text and "CADET_MODEL" in text


def test_no_connection_says_how_to_connect(ip):
    from sql.connection import ConnectionManager

    saved = ConnectionManager.current
    ConnectionManager.current = None
    try:
        ip.user_ns["model"] = fake_model(sql_reply("SELECT 1"))
        text = usage_error(ip, "ask", "--model model", "How many orders?")
    finally:
        ConnectionManager.current = saved
    assert "%sql" in text and "--con" in text


def test_config_and_env_var(duck, monkeypatch, tmp_path):
    replies = tmp_path / "replies.json"
    replies.write_text('{"How many orders?": ["```sql\\nSELECT count(*) AS n FROM orders\\n```"]}')
    monkeypatch.setenv("CADET_MODEL", f"scripted:{replies}")
    out = duck.run_cell_magic("ask", "", "How many orders?")
    assert out.ok and out.df["n"].tolist() == [3] and "scripted" in out.model
    duck.run_line_magic("config", "AskMagic.max_attempts = 2")
    try:
        assert duck.run_line_magic("config", "AskMagic.max_attempts") in (None, 2)
        magic = duck.magics_manager.registry["AskMagic"]
        assert magic.max_attempts == 2
    finally:
        duck.run_line_magic("config", "AskMagic.max_attempts = 3")


def test_config_never_prints_the_api_key(ip, capsys):
    """``%config AskMagic`` lists every option's current value: the key shows as a mask, while
    the model client still gets the key itself."""
    magic = ip.magics_manager.registry["AskMagic"]
    ip.run_line_magic("config", "AskMagic.api_key = 'sk-canary-4711'")
    try:
        capsys.readouterr()
        ip.run_line_magic("config", "AskMagic")
        shown = capsys.readouterr().out
        assert "api_key" in shown and "sk-canary-4711" not in shown and "***" in shown
        assert "sk-canary-4711" not in repr(magic.api_key) and magic.api_key == "sk-canary-4711"
    finally:
        ip.run_line_magic("config", "AskMagic.api_key = None")
    assert magic.api_key is None


def test_help_and_stats(ip):
    from cadet_magic.magic import AskMagic

    doc = AskMagic.ask.__doc__
    assert (
        "--model" in doc and "--con" in doc and "--no-fallback" in doc and "--max-attempts" in doc
    )
    assert "in %%ask it is the cell body" in " ".join(doc.split())  # argparse kept the %%
    stats = ip.run_line_magic("cadet", "stats")
    assert "Answered at the first attempt" in stats.text and "Average SQL attempts" in stats.text
    assert "unknown command" in usage_error(ip, "cadet", "nonsense")


def test_stats_is_a_table(duck):
    """%cadet stats: one row per figure in an HTML table (not newlines in a div), the same
    rows as the text."""
    from html.parser import HTMLParser

    bad = sql_reply("SELECT nope FROM orders")
    duck.user_ns["model"] = fake_model(bad, sql_reply("SELECT count(*) AS n FROM orders"))
    duck.run_line_magic("cadet", "reset")
    duck.run_cell_magic("ask", "--model model", "How many orders?")
    stats = duck.run_line_magic("cadet", "stats")
    bundle = stats._repr_mimebundle_()

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tables, self.rows, self.cells, self.inside = 0, [], [], False

        def handle_starttag(self, tag, attrs):
            self.tables += tag == "table"
            if tag == "tr":
                self.rows.append([])
            self.inside = tag in ("th", "td")

        def handle_data(self, data):
            if self.inside and self.rows:
                self.rows[-1].append(data)

        def handle_endtag(self, tag):
            self.inside = False

    cells = Cells()
    cells.feed(bundle["text/html"])
    rows = {r[0]: r[1:] for r in cells.rows if r}
    assert cells.tables == 2  # the figures, and the error categories met
    assert rows["Questions asked"] == ["1"] and rows["Answered after a correction"] == ["1"]
    assert rows["column_not_found"] == ["1", "1", "100%"]
    text = bundle["text/plain"].splitlines()
    assert len([label for label in rows if label in bundle["text/plain"]]) == len(rows)
    assert text[0].startswith("Questions asked:") and text[0].endswith(" 1")


@pytest.mark.parametrize(
    ("line", "cell", "says"),
    [
        ("--model model", "   ", "needs a question"),
        ("--model model --con nowhere", "How many?", "no such variable"),
        ("--model model --max-attempts", "How many?", "expected one argument"),
        ("--model 'model", "How many?", "%ask"),
    ],
)
def test_usage_errors_fail_the_cell(duck, line, cell, says):
    duck.user_ns["model"] = fake_model(sql_reply("SELECT 1"))
    assert says in usage_error(duck, "ask", line, cell)
    sql_still_works(duck)


def test_a_question_without_an_answer_is_a_result_not_an_error(duck):
    bad = sql_reply("SELECT nope FROM orders")
    duck.user_ns["model"] = fake_model(bad, bad, bad, bad, bad, bad, bad, bad)
    ran = duck.run_cell("%%ask --model model --max-attempts 1 --no-fallback\nTotal?")
    assert ran.success and ran.error_in_exec is None
    assert duck.user_ns["_ask"].ok is False


_LAZY_SCRIPT = """
import sys
from IPython.core.interactiveshell import InteractiveShell
sh = InteractiveShell.instance()
sh.run_line_magic("load_ext", "cadet_magic")
print("jupysql_loaded", "sql.magic" in sys.modules)
if sys.argv[1] == "config-first":
    sh.run_line_magic("config", "SqlMagic.autopandas = True")
sh.run_line_magic("sql", "duckdb://")
if sys.argv[1] == "sql-first":
    sh.run_line_magic("config", "SqlMagic.autopandas = True")
df = sh.run_line_magic("sql", "SELECT 1 AS one")
print("result", type(df).__name__, df["one"].tolist())
sh.run_cell_magic("sql", "", "CREATE TABLE t AS SELECT 42 AS x")
print("cell", sh.run_cell_magic("sql", "", "SELECT x FROM t")["x"].tolist())
"""


@pytest.mark.parametrize("order", ["config-first", "sql-first"])
def test_load_ext_defers_jupysql_until_first_use(order):
    """%load_ext cadet_magic does not import jupysql; %sql and %config SqlMagic still work."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PLOOMBER_STATS_ENABLED": "false"}
    out = subprocess.run(
        [sys.executable, "-c", _LAZY_SCRIPT, order],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "jupysql_loaded False" in out.stdout
    assert "result DataFrame [1]" in out.stdout and "cell [42]" in out.stdout


_FALLBACK_REPLY = (
    "```sql\nSELECT customer, amount FROM orders\n```\n"
    "```python\nresult = df.groupby('customer')['amount'].sum().sort_values(ascending=False)\n```"
)


def test_fallback_answers_when_sql_keeps_failing(duck, model_writes_select):
    failing = [sql_reply(f"SELECT amout{i} FROM orders") for i in range(3)]
    out, r = ask(duck, *failing, _FALLBACK_REPLY, options="-o spent")
    assert r.ok and r.answered_by == "fallback" and len(r.attempts) == 3
    fb = r.fallback
    assert fb.ok and fb.sql == "SELECT customer, amount FROM orders" and "groupby" in fb.code
    assert fb.result.values.tolist() == [["bob", 32.5], ["ann", 17.5]]
    assert [(a.number, a.phase, a.outcome) for a in fb.attempts] == [(1, "fallback", "ok")]
    assert r.df is fb.result and duck.user_ns["spent"] is r.df and r.sql == fb.sql
    bundle = mimebundle(r)
    assert "fallback" in bundle["text/plain"].lower() and "fallback" in bundle["text/html"].lower()
    assert "Traceback" not in bundle["text/plain"]
    sql_still_works(duck)


def test_no_fallback_option_stops_after_the_sql_attempts(duck):
    failing = [sql_reply(f"SELECT amout{i} FROM orders") for i in range(3)]
    _, r = ask(duck, *failing, _FALLBACK_REPLY, options="--no-fallback")
    assert not r.ok and r.fallback is None and r.model_calls == 3 and r.df is None
    sql_still_works(duck)


def test_schema_read_once_per_jupysql_connection(duck):
    """Two asks on %sql's connection read the schema once; a table created with %%sql is seen.
    The cache is the magic's own (its DbSession), not a module-level one."""
    from cadet_magic.db.schema_cache import SCHEMA_CACHE

    SCHEMA_CACHE.clear()
    cache = duck.magics_manager.registry["AskMagic"].db.schema_cache
    cache.clear()
    for _ in range(2):
        out, r = ask(duck, sql_reply("SELECT count(*) AS n FROM orders"), question="How many?")
        assert r.ok and r.df["n"].tolist() == [3]
    assert cache.reads == 1 and SCHEMA_CACHE.reads == 0
    duck.run_cell_magic("sql", "", "CREATE TABLE refunds AS SELECT 1 AS order_id")
    try:
        out, r = ask(duck, sql_reply("SELECT count(*) AS n FROM refunds"), question="Refunds?")
        assert r.ok and r.df["n"].tolist() == [1] and cache.reads == 2
    finally:
        duck.run_cell_magic("sql", "", "DROP TABLE refunds")


def test_result_bytes_config_truncates_and_says_why(duck):
    """%config AskMagic.result_bytes bounds the answer; the displays say the budget cut it."""
    duck.run_line_magic("config", "AskMagic.result_bytes = 2097152")
    try:
        assert duck.magics_manager.registry["AskMagic"].result_bytes == 2 * 2**20
        out, r = ask(duck, sql_reply("SELECT repeat('x', 1000000) AS blob FROM range(10)"))
        assert r.ok and r.truncated and len(r.rows) <= 2
        note = "truncated at the 2 MiB result budget (AskMagic.result_bytes)"
        assert r.truncation_note.startswith(note)
        bundle = mimebundle(r)
        assert note in bundle["text/plain"] and note in bundle["text/html"]
    finally:
        duck.run_line_magic("config", f"AskMagic.result_bytes = {64 * 2**20}")
    sql_still_works(duck)
