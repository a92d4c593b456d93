"""The Python API without IPython, and the portable core's imports."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from cadet_magic.display import mimebundle

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PLOOMBER_STATS_ENABLED": "false"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ask_without_ipython_on_duckdb_and_sqlite():
    got = run_python(
        """
        import json, sqlite3, sys
        import duckdb
        import cadet_magic
        from cadet_magic.llm import ScriptedModel
        q = "How many orders?"
        model = ScriptedModel({q: ["```sql\\nSELECT count(*) AS n FROM orders\\n```"]})
        d = duckdb.connect(); d.execute("CREATE TABLE orders (id INT); INSERT INTO orders VALUES (1), (2)")
        s = sqlite3.connect(":memory:"); s.execute("CREATE TABLE orders (id INT)")
        r1 = cadet_magic.ask(q, con=d, model=model, max_attempts=3)
        model.calls.clear()
        r2 = cadet_magic.ask(q, con=s, model=model)
        print(json.dumps({"duck": r1.df["n"].tolist(), "lite": r2.rows, "ipython": "IPython" in sys.modules,
                          "ok": [r1.ok, r2.ok], "scripted": r1.scripted}))
        """
    )
    assert got == {
        "duck": [2],
        "lite": [[0]],
        "ipython": False,
        "ok": [True, True],
        "scripted": True,
    }


def test_portable_core_imports_nothing_from_the_edges():
    got = run_python(
        """
        import json, sys
        BLOCKED = ("IPython", "ipywidgets", "pandas", "numpy", "sqlalchemy", "sql", "duckdb",
                   "langchain", "langchain_core", "psycopg", "psycopg2")
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"portable core imported {name}")
        sys.meta_path.insert(0, Block())
        for m in list(sys.modules):
            if m.split(".")[0] in BLOCKED:
                del sys.modules[m]
        import cadet_magic
        import cadet_magic.agent, cadet_magic.agent.run, cadet_magic.sql.validate, cadet_magic.sql.limit
        import cadet_magic.diagnose, cadet_magic.schema.render, cadet_magic.db.sqlite, cadet_magic.metrics
        import cadet_magic.display.static
        import cadet_magic.fallback, cadet_magic.fallback.code_check, cadet_magic.fallback.in_process
        import cadet_magic.diagnose.code_feedback, cadet_magic.sql.simple
        from cadet_magic.fallback.code_check import check_code
        import sqlite3
        con = sqlite3.connect(":memory:"); con.execute("CREATE TABLE t (x INT)")
        class M:
            cadet_scripted = True  # replies written in advance: a stand-in (it does not vote)
            def invoke(self, messages):
                return type("R", (), {"content": "SELECT count(*) FROM t"})()
        from cadet_magic.agent.run import run_agent
        from cadet_magic.db.sqlite import SQLiteRunner
        r = run_agent("n?", model=M(), runner=SQLiteRunner(con))
        # The fallback without pandas: a clear error, not a crash.
        class F:
            cadet_scripted = True
            replies = ["SELECT y FROM t", "SELECT z FROM t",
                       "```sql\\nSELECT x FROM t\\n```\\n```python\\nresult = df['x'].sum()\\n```"]
            def invoke(self, messages):
                return type("R", (), {"content": self.replies.pop(0)})()
        f = run_agent("sum?", model=F(), runner=SQLiteRunner(con), max_attempts=2)
        import threading  # stdlib modules may import it; no thread may be started
        print(json.dumps({"ok": r.ok, "rows": r.rows, "threads": threading.active_count(),
                          "check": [check_code("result = df.sum()").ok, check_code("import os").ok],
                          "fallback": [f.ok, f.fallback.attempts[0].category, "pandas" in f.message],
                          "blocked": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)}))
        """
    )
    assert got == {
        "ok": True,
        "rows": [[0]],
        "threads": 1,
        "check": [True, False],
        "fallback": [False, "unavailable", True],
        "blocked": [],
    }


def test_ask_answers_from_the_fallback_with_a_dataframe():
    import duckdb
    import pandas as pd

    import cadet_magic
    from tests.helpers import fake_model, sql_reply

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE orders (id INT, customer VARCHAR, amount DOUBLE);"
        "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5), (3, 'ann', 7.5)"
    )
    fallback = (
        "```sql\nSELECT customer, amount FROM orders\n```\n"
        "```python\nresult = df.groupby('customer')['amount'].sum()\n```"
    )
    model = fake_model(*(sql_reply(f"SELECT amout{i} FROM orders") for i in range(3)), fallback)
    r = cadet_magic.ask("Total per customer?", con=con, model=model)
    assert r.ok and r.answered_by == "fallback" and isinstance(r.df, pd.DataFrame)
    assert r.df.values.tolist() == [["ann", 17.5], ["bob", 32.5]]
    # The product writes the fallback's simple SELECT itself (the model's own block is not run)
    written = (
        "SELECT orders.id AS id, orders.customer AS customer, orders.amount AS amount FROM orders"
    )
    assert r.df is r.fallback.result and r.sql == r.fallback.sql == written
    assert len(r.attempts) == 3 and [a.phase for a in r.fallback.attempts] == ["fallback"]
    text = mimebundle(r)["text/plain"]
    assert "fallback" in text.lower() and "Traceback" not in text

    model = fake_model(*(sql_reply(f"SELECT amout{i} FROM orders") for i in range(3)), fallback)
    r = cadet_magic.ask("Total per customer?", con=con, model=model, fallback=False)
    assert not r.ok and r.fallback is None and r.df is None and r.model_calls == 3
