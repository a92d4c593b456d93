"""The hostile corpus end to end: through ``ask()`` and through ``%%ask`` in a real IPython
shell, with a scripted model whose fallback reply is a hostile program.

For every program that passes the syntax-tree check: nothing happened outside the worker (the
marker file is absent), no canary (kernel environment, notebook variable, notebook DataFrame)
is in the answer or in any prompt sent to the model, the notebook's DataFrame is unchanged,
the kernel's memory did not grow materially, the time limit held, and a benign retry
afterwards answers.
"""

from __future__ import annotations

import sqlite3
import sys
import time

import pandas as pd
import pytest
from IPython.core.error import UsageError

from cadet_magic.api import ask
from cadet_magic.display import mimebundle
from tests.conftest import need
from tests.fallback.hostile_corpus import (
    DF_SECRET,
    ENV_NAME,
    ENV_SECRET,
    RSS_SLACK,
    TIME_SLACK,
    VAR_SECRET,
    leaked,
    names,
    programs,
    rss,
)
from tests.helpers import CountingModel, fake_model, sql_reply

SCHEMA = (
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer TEXT, amount REAL);"
    "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5), (3, 'ann', 7.5);"
)
QUESTION = "Total spent per customer?"
FAILED_SQL = [sql_reply("SELECT amout FROM orders"), sql_reply("SELECT amoutt FROM orders")]
SIMPLE = "SELECT customer, amount FROM orders"
BENIGN = "result = df.groupby('customer')['amount'].sum().sort_values(ascending=False)"
EXPECTED = [["bob", 32.5], ["ann", 17.5]]
#: Seconds the hostile code may run (each fallback attempt).
LIMIT = 2.0

CHECKED = names(only_checked=True)


@pytest.fixture(autouse=True)
def linux():
    need(sys.platform.startswith("linux"), "the confinement these programs meet is Linux's")


def fallback_reply(code: str) -> str:
    return f"```sql\n{SIMPLE}\n```\n```python\n{code}\n```"


@pytest.fixture
def canaries(monkeypatch):
    monkeypatch.setenv(ENV_NAME, ENV_SECRET)
    frame = pd.DataFrame({"secret": [DF_SECRET] * 3})
    main = sys.modules["__main__"].__dict__
    main["CANARY_VAR"], main["canary_df"] = VAR_SECRET, frame
    yield frame
    main.pop("CANARY_VAR", None)
    main.pop("canary_df", None)


def assert_contained(r, model, marker, frame, before_rss, elapsed, expect):
    fb = r.fallback
    assert fb is not None and fb.attempts, r.message
    first = fb.attempts[0]
    assert not marker.exists(), "a side effect happened outside the worker"
    assert not leaked(r.df) and not leaked(r.rows) and not leaked(r.message)
    for prompt in model.prompts:
        assert not leaked(prompt), "a canary reached the model"
    for attempt in fb.attempts:
        assert not leaked(attempt.error) and not leaked(attempt.feedback)
    assert frame["secret"].tolist() == [DF_SECRET] * 3
    assert rss() - before_rss < RSS_SLACK
    assert elapsed < 2 * LIMIT + TIME_SLACK
    if "ok" not in expect:
        assert first.outcome != "ok"


def sqlite_con():
    con = sqlite3.connect(":memory:")
    con.executescript(SCHEMA)
    return con


@pytest.mark.parametrize("index", range(len(CHECKED)), ids=CHECKED)
def test_hostile_fallback_through_ask(index, canaries, tmp_path):
    marker = tmp_path / "marker"
    program = programs(marker, only_checked=True)[index]
    con = sqlite_con()
    model = CountingModel(
        fake_model(*FAILED_SQL, fallback_reply(program.code), fallback_reply(BENIGN))
    )
    before = rss()
    t0 = time.monotonic()
    r = ask(QUESTION, con=con, model=model, max_attempts=2, timeout=LIMIT)
    elapsed = time.monotonic() - t0
    assert_contained(r, model, marker, canaries, before, elapsed, program.expect)
    if not r.fallback.attempts[0].outcome == "ok":  # the retry with benign code answered
        assert r.ok and r.df.values.tolist() == EXPECTED
    # and a new question afterwards answers through the same worker
    model = CountingModel(fake_model(*FAILED_SQL, fallback_reply(BENIGN)))
    r = ask(QUESTION, con=con, model=model, max_attempts=2, timeout=LIMIT)
    assert r.ok and r.answered_by == "fallback" and r.df.values.tolist() == EXPECTED


@pytest.fixture
def ip(ipython_shell, canaries):
    ipython_shell.run_line_magic("sql", "duckdb:// --alias hostile")
    ipython_shell.run_cell_magic("sql", "", SCHEMA.replace("REAL", "DOUBLE"))
    ipython_shell.user_ns["CANARY_VAR"] = VAR_SECRET
    ipython_shell.user_ns["canary_df"] = canaries
    ipython_shell.run_line_magic("config", f"AskMagic.timeout = {LIMIT}")
    yield ipython_shell
    ipython_shell.run_line_magic("config", "AskMagic.timeout = 30.0")
    ipython_shell.user_ns.pop("CANARY_VAR", None)
    ipython_shell.user_ns.pop("canary_df", None)
    ipython_shell.run_line_magic("sql", "--close hostile")


@pytest.mark.parametrize("index", range(len(CHECKED)), ids=CHECKED)
def test_hostile_fallback_through_the_magic(index, ip, tmp_path):
    marker = tmp_path / "marker"
    program = programs(marker, only_checked=True)[index]
    model = CountingModel(
        fake_model(*FAILED_SQL, fallback_reply(program.code), fallback_reply(BENIGN))
    )
    ip.user_ns["model"] = model
    before = rss()
    t0 = time.monotonic()
    ip.run_cell_magic("ask", "--model model --max-attempts 2", QUESTION)
    elapsed = time.monotonic() - t0
    r = ip.user_ns["_ask"]
    assert_contained(r, model, marker, ip.user_ns["canary_df"], before, elapsed, program.expect)
    assert not leaked(mimebundle(r))
    if not r.fallback.attempts[0].outcome == "ok":
        assert r.ok and r.df.values.tolist() == EXPECTED
    assert list(ip.run_line_magic("sql", "SELECT 1 AS one").dict()["one"]) == [1]


def test_fallback_memory_through_ask():
    con = sqlite_con()
    model = CountingModel(
        fake_model(
            *FAILED_SQL,
            fallback_reply("result = np.ones(10**8).sum()"),  # 800 MB
            fallback_reply(BENIGN),
        )
    )
    r = ask(QUESTION, con=con, model=model, max_attempts=2, fallback_memory=256 << 20)
    first = r.fallback.attempts[0]
    assert first.category == "code_memory" and "memory" in first.feedback
    assert r.ok and r.df.values.tolist() == EXPECTED  # the retry answered


def test_fallback_memory_through_the_magic(ip):
    ip.run_line_magic("config", f"AskMagic.fallback_memory = {256 << 20}")
    try:
        ip.user_ns["model"] = fake_model(
            *FAILED_SQL, fallback_reply("result = np.ones(10**8).sum()"), fallback_reply(BENIGN)
        )
        ip.run_cell_magic("ask", "--model model --max-attempts 2", QUESTION)
    finally:
        ip.run_line_magic("config", f"AskMagic.fallback_memory = {2 << 30}")
    r = ip.user_ns["_ask"]
    assert r.fallback.attempts[0].category == "code_memory"
    assert r.ok and r.df.values.tolist() == EXPECTED


def test_ctrl_c_during_the_fallback_through_the_magic(ip):
    import os
    import signal
    import threading

    from cadet_magic.fallback import warm

    warm.worker()  # warm, so the interrupt lands while the code runs
    ip.run_line_magic("config", "AskMagic.timeout = 60.0")
    ip.user_ns["model"] = fake_model(
        *FAILED_SQL, fallback_reply("n = 0\nwhile True:\n    n += 1"), fallback_reply(BENIGN)
    )
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t0 = time.monotonic()
        with pytest.raises(UsageError, match="Interrupted"):
            ip.run_cell_magic("ask", "--model model --max-attempts 2", QUESTION)
        elapsed = time.monotonic() - t0
    finally:
        signal.signal(signal.SIGINT, old)
    assert elapsed < 2.0 + TIME_SLACK
    assert warm._WORKER is None  # the worker and its child were killed
    ip.run_line_magic("config", f"AskMagic.timeout = {LIMIT}")
    ip.user_ns["model"] = fake_model(*FAILED_SQL, fallback_reply(BENIGN))
    ip.run_cell_magic("ask", "--model model --max-attempts 2", QUESTION)
    r = ip.user_ns["_ask"]
    assert r.ok and r.answered_by == "fallback" and r.df.values.tolist() == EXPECTED
