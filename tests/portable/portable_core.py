"""The portable core, end to end, as run inside Pyodide by ``run_pyodide.mjs``.

Not a pytest module: ``test_pyodide.py`` runs it under Node and reads ``SUMMARY`` (a JSON
string) back. It also runs under CPython (``python tests/portable/portable_core.py`` prints
the summary), which helps when a Pyodide run fails.

What it drives, with stdlib sqlite3 as the database and a scripted model (replies stored
here, not a real LLM):
- one question through a failed attempt (wrong column -> engine error -> diagnosis
  ``column_not_found`` with feedback) and a corrected one (-> answer);
- one question whose first reply is a DELETE (refused by the safety check, data untouched);
- the SQLite runner's timeout on a runaway query (a progress handler, no thread);
- ``validate_sql`` on hostile statements (refused);
- the fallback's code check on a legitimate and hostile pandas programs, and its code runner
  called directly (hostile code refused; clean code reported unrunnable without pandas);
- one question through two failed SQL attempts into the fallback phase: a refused fallback
  attempt (aggregating SELECT and an ``import``: SQL check and code check, one feedback), then
  a clean one whose SELECT runs and whose pandas step reports that pandas is unavailable (no
  pandas in Pyodide offline), ending the run cleanly.
Tripwires record any thread start, subprocess, signal handler or timer on the way.
"""

from __future__ import annotations

import _thread
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

# --- tripwires: installed before cadet_magic is imported ------------------------------------
TRIPPED: list[str] = []


def _tripwire(owner: object, name: str) -> None:
    original = getattr(owner, name, None)
    if original is None:
        return
    label = f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"

    def wrapper(*args, **kwargs):
        TRIPPED.append(label)
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


_tripwire(threading.Thread, "start")  # also covers threading.Timer
for _name in ("_start_new_thread", "_start_joinable_thread"):  # Python 3.11 / 3.13+
    _tripwire(threading, _name)
for _name in ("start_new_thread", "start_joinable_thread", "start_new"):
    _tripwire(_thread, _name)
_tripwire(subprocess, "Popen")
for _name in ("signal", "alarm", "setitimer", "pthread_kill"):
    _tripwire(signal, _name)
for _name in ("fork", "system", "posix_spawn"):
    _tripwire(os, _name)

# The edges of cadet_magic; the portable core must not import any of them.
EDGE_MODULES = (
    "IPython",
    "ipywidgets",
    "pandas",
    "numpy",
    "sqlalchemy",
    "sql",
    "duckdb",
    "langchain",
    "langchain_core",
    "psycopg",
    "psycopg2",
)

from cadet_magic.agent.inputs import RunInputs  # noqa: E402
from cadet_magic.agent.run import run_agent  # noqa: E402
from cadet_magic.db.sqlite import SQLiteRunner  # noqa: E402
from cadet_magic.errors import QueryTimeout  # noqa: E402
from cadet_magic.sql.validate import validate_sql  # noqa: E402


class ScriptedModel:
    """A scripted stand-in for the LLM: replays stored replies per question, records prompts.

    Labelled scripted everywhere (``cadet_scripted``, the model label); it is not a real model.
    """

    cadet_scripted = True
    label = "scripted stand-in (replies stored in advance, not a real LLM)"

    def __init__(self, replies: dict[str, list[str]]) -> None:
        self.replies = replies
        self.prompts: list[str] = []

    def invoke(self, messages):
        text = "\n".join(str(m[1] if isinstance(m, tuple) else m) for m in messages)
        self.prompts.append(text)
        for question, replies in self.replies.items():
            if question in text:
                n = sum(question in p for p in self.prompts) - 1
                return type("Reply", (), {"content": replies[min(n, len(replies) - 1)]})()
        raise KeyError("no scripted reply for this prompt")


def sql_block(sql: str) -> str:
    return f"Here is the query.\n\n```sql\n{sql}\n```"


def make_database() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.executescript(
        """
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
        CREATE TABLE orders (
            id INTEGER PRIMARY KEY,
            customer_id INTEGER REFERENCES customers(id),
            amount REAL NOT NULL,
            status TEXT NOT NULL
        );
        INSERT INTO customers VALUES (1, 'Ada', 'Paris'), (2, 'Bo', 'Oslo'), (3, 'Cy', 'Paris');
        INSERT INTO orders VALUES
            (1, 1, 10.0, 'paid'), (2, 1, 5.5, 'pending'), (3, 2, 7.0, 'paid'),
            (4, 3, 2.5, 'paid'), (5, 2, 1.0, 'pending');
        """
    )
    con.commit()
    return con


Q_CITY = "What is the total order amount per city?"
Q_PENDING = "How many orders are pending?"
WRONG_SQL = (
    "SELECT c.city, SUM(o.order_amount) AS total FROM orders o "
    "JOIN customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city"
)
RIGHT_SQL = (
    "SELECT c.city, SUM(o.amount) AS total FROM orders o "
    "JOIN customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY c.city"
)
REPLIES = {
    Q_CITY: [sql_block(WRONG_SQL), sql_block(RIGHT_SQL)],
    Q_PENDING: [
        sql_block("DELETE FROM orders WHERE status = 'pending'"),
        sql_block("SELECT count(*) AS n FROM orders WHERE status = 'pending'"),
    ],
}

# The fallback question: the SQL attempt fails (SQLite has no median), so the fallback starts at
# once; the product fetches the rows itself (orders joined to customers), the model's first code
# is hostile (refused, with feedback) and its second clean, which cannot run without pandas
# (Pyodide here).
Q_MEDIAN = "Which customer has the highest median order amount?"
FALLBACK_CODE = (
    'result = df.groupby("name", as_index=False)["amount"].median().nlargest(1, "amount")'
)
REPLIES[Q_MEDIAN] = [
    sql_block(
        "SELECT c.name, median(o.amount) AS m FROM orders o JOIN customers c "
        "ON c.id = o.customer_id GROUP BY c.name ORDER BY m DESC LIMIT 1"
    ),
    "```python\nimport os\nresult = os.listdir('/')\n```",
    f"```python\n{FALLBACK_CODE}\n```",
]

HOSTILE_SQL = [
    "SELECT * FROM orders; DROP TABLE orders",
    "DELETE FROM orders",
    "ATTACH DATABASE '/tmp/evil.db' AS evil",
    "SELECT load_extension('/tmp/evil.so')",
    "PRAGMA writable_schema = 1",
    "SELECT * FROM sqlite_master JOIN secrets ON 1 = 1",
]

LEGIT_CODE = """\
result = df.groupby("city", as_index=False)["amount"].sum().sort_values("city")
"""
HOSTILE_CODE = [
    "import os\nos.system('rm -rf /')\nresult = df",
    "result = __import__('subprocess').run(['ls'])",
    "result = open('/etc/passwd').read()",
    "result = df.to_csv('/tmp/out.csv')",
    "result = (lambda: 0).__globals__['__builtins__']",
]


def attempt_summary(a) -> dict:
    return {
        "number": a.number,
        "phase": a.phase,
        "outcome": a.outcome,
        "category": a.category,
        "error": a.error,
        "feedback": a.feedback,
        "suggestions": list(a.suggestions),
        "sql": a.sql,
    }


def result_summary(r, model: ScriptedModel) -> dict:
    return {
        "ok": r.ok,
        "rows": [list(row) for row in r.rows],
        "columns": list(r.columns),
        "sql": r.sql,
        "stop_reason": r.stop_reason,
        "scripted": r.scripted,
        "model": r.model,
        "attempts": [attempt_summary(a) for a in r.attempts],
        "prompts": list(model.prompts),
    }


def fallback_check() -> dict:
    """The fallback's code check, and its code runner, called directly."""
    try:
        from cadet_magic.fallback.code_check import check_code
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("cadet_magic.fallback"):
            return {"available": False, "reason": f"pending: {e}"}
        raise
    legit = check_code(LEGIT_CODE)
    hostile = [check_code(code) for code in HOSTILE_CODE]
    out = {
        "available": True,
        "legit": {"ok": legit.ok, "message": legit.message},
        "hostile": [
            {"code": code, "ok": c.ok, "message": c.message}
            for code, c in zip(HOSTILE_CODE, hostile, strict=True)
        ],
    }
    try:
        from cadet_magic.fallback.in_process import run_code
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("cadet_magic.fallback"):
            return out
        raise
    runs = {
        "legit": run_code(LEGIT_CODE, None, timeout=5),
        "hostile": run_code(HOSTILE_CODE[0], None, timeout=5),
    }
    out["run_code"] = {
        name: {"ok": r.ok, "kind": r.error.kind if r.error else None, "error": str(r.error)}
        for name, r in runs.items()
    }
    out["guards"] = fallback_guards()
    return out


def fallback_guards() -> dict:
    """The code runner's time limit and audit hook, without pandas (``execute_checked``, the
    layer of ``cadet_magic.fallback.in_process`` below ``run_code``)."""
    from cadet_magic.fallback import in_process

    needed = ("execute_checked", "install_audit_hook", "safe_builtins", "FILENAME", "USE_THREADS")
    missing = [n for n in needed if not hasattr(in_process, n)]
    if missing:
        return {"available": False, "missing": missing}

    def execute(code: str, extra: dict, timeout: float) -> tuple[str | None, float]:
        namespace = {"__builtins__": in_process.safe_builtins(), **extra}
        compiled = compile(code, in_process.FILENAME, "exec", dont_inherit=True)
        t = time.perf_counter()
        error = in_process.execute_checked(compiled, namespace, timeout)
        return (None if error is None else f"{error.kind}: {error}"), time.perf_counter() - t

    in_process.install_audit_hook()
    loop_error, loop_seconds = execute("n = 0\nwhile True:\n    n += 1", {}, 0.3)
    list_error, _ = execute("result = listdir('/')", {"listdir": os.listdir}, 5)
    return {
        "available": True,
        "use_threads": in_process.USE_THREADS,
        "loop": {"error": loop_error, "seconds": round(loop_seconds, 3)},
        "listdir": {"error": list_error},
        "listdir_after": bool(os.listdir("/")),  # the hook is active only while code runs
    }


def fallback_question(runner: SQLiteRunner, model: ScriptedModel, label: str) -> dict:
    """The fallback question through the agent, when the agent has a fallback phase."""
    from cadet_magic.agent import run as agent_run

    if "fallback" not in [spec.name for spec in agent_run.PHASES]:
        return {"available": False, "reason": "pending: the agent has no fallback phase yet"}
    r = run_agent(
        Q_MEDIAN,
        model=model,
        runner=runner,
        max_attempts=2,
        inputs=RunInputs(model_label=label, scripted=True),
    )
    fb = r.fallback
    return {
        "available": True,
        **result_summary(r, model),
        "message": r.message,
        "answered_by": getattr(r, "answered_by", None),
        "fallback": None
        if fb is None
        else {
            "ok": fb.ok,
            "sql": fb.sql,
            "code": fb.code,
            "attempts": [
                {**attempt_summary(a), "code": a.code, "reply": a.reply} for a in fb.attempts
            ],
        },
    }


def tripwire_control() -> dict:
    """Shows the tripwire works: starts a thread on purpose (Pyodide refuses; CPython runs it)."""
    before = len(TRIPPED)
    try:
        worker = threading.Thread(target=lambda: None)
        worker.start()
        worker.join()
        error = None
    except RuntimeError as e:
        error = f"{type(e).__name__}: {e}"
    seen = TRIPPED[before:]
    del TRIPPED[before:]
    return {"seen": seen, "error": error}


def main() -> dict:
    t0 = time.perf_counter()
    con = make_database()
    runner = SQLiteRunner(con, label="sqlite3 :memory: (Pyodide)")
    model = ScriptedModel(REPLIES)
    label = f"scripted: {ScriptedModel.label}"

    city = run_agent(
        Q_CITY, model=model, runner=runner, inputs=RunInputs(model_label=label, scripted=True)
    )
    city_prompts = list(model.prompts)
    model.prompts.clear()
    pending = run_agent(
        Q_PENDING, model=model, runner=runner, inputs=RunInputs(model_label=label, scripted=True)
    )
    pending_summary = result_summary(pending, model)
    city_summary = {**result_summary(city, model), "prompts": city_prompts}
    model.prompts.clear()
    median = fallback_question(runner, model, label)
    orders_after = con.execute("SELECT count(*) FROM orders").fetchone()[0]

    runaway = (
        "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r"
    )
    t_run = time.perf_counter()
    try:
        runner.run(runaway, limit=10, timeout=0.3)
        timeout = {"stopped": False}
    except QueryTimeout as e:
        timeout = {"stopped": True, "error": str(e)}
    timeout["seconds"] = round(time.perf_counter() - t_run, 3)
    timeout["usable_after"] = runner.run("SELECT 1", limit=1, timeout=5).rows == [(1,)]

    tables = ["customers", "orders"]
    hostile = []
    for sql in HOSTILE_SQL:
        v = validate_sql(sql, "sqlite", tables)
        hostile.append({"sql": sql, "ok": v.ok, "codes": [i.code for i in v.issues]})
    safe = validate_sql("SELECT name FROM customers -- fine", "sqlite", tables)

    import sqlglot
    import sqlparse

    return {
        "python": sys.version.split()[0],
        "platform": sys.platform,
        "sqlite": sqlite3.sqlite_version,
        "sqlglot": sqlglot.__version__,
        "sqlparse": sqlparse.__version__,
        "city": city_summary,
        "pending": pending_summary,
        "median": median,
        "pandas_installed": importlib.util.find_spec("pandas") is not None,
        "orders_after": orders_after,
        "timeout": timeout,
        "hostile_sql": hostile,
        "safe_sql": {"ok": safe.ok, "sql": safe.sql},
        "fallback_check": fallback_check(),
        "tripped": list(TRIPPED),
        "tripwire_control": tripwire_control(),
        "threads": threading.active_count(),
        "edge_modules": sorted(
            m for m in sys.modules if m.split(".")[0] in EDGE_MODULES or m == "cadet_magic.llm"
        ),
        "cadet_modules": sorted(m for m in sys.modules if m.startswith("cadet_magic")),
        "seconds": round(time.perf_counter() - t0, 3),
    }


SUMMARY = json.dumps(main(), default=str)

if __name__ == "__main__" and "pyodide" not in sys.modules:
    print(SUMMARY)
