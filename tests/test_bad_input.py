"""Bad input, through the real IPython shell: one clear line each, no traceback, the kernel and
the user's connection as before."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from tests.helpers import fake_model, sql_reply, usage_error

CASES = json.loads((Path(__file__).with_name("bad_input_cases.json")).read_text())


@pytest.fixture
def shell(ipython_shell, tmp_path):
    ip = ipython_shell
    (tmp_path / "not_json.json").write_text("{replies: nope")
    (tmp_path / "not_a_list.json").write_text(json.dumps({"replies": {"q": "SELECT 1"}}))
    (tmp_path / "numbers.json").write_text(json.dumps({"q": [1, 2]}))
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x INT); INSERT INTO t VALUES (1)")
    ip.user_ns.update(
        duck=con,
        model=fake_model(sql_reply("SELECT x FROM t")),
        unreachable=sa.create_engine("postgresql+psycopg://nobody@127.0.0.1:9/none"),
        not_a_connection=42,
    )
    yield ip
    con.close()


@pytest.mark.parametrize("case", CASES["ask"], ids=lambda c: c["id"])
def test_ask_options(shell, tmp_path: Path, case: dict) -> None:
    model = case.get("model", "model").replace("{tmp}", str(tmp_path))
    con = case.get("con", "duck")
    line = f"--model {model} --con {con} {case.get('options', '')}"
    text = usage_error(shell, "ask", line, "How many rows?")
    for fragment in case["says"]:
        assert fragment in text, text
    assert shell.user_ns["duck"].execute("SELECT count(*) FROM t").fetchall() == [(1,)]


@pytest.mark.parametrize("case", CASES["config"], ids=lambda c: c["id"])
def test_config_values(shell, caplog, capsys, case: dict) -> None:
    magic = shell.magics_manager.registry["AskMagic"]
    before = getattr(magic, case["option"])
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        result = shell.run_cell(f"%config {case['statement']}")
    assert result.error_in_exec is None and result.error_before_exec is None
    captured = capsys.readouterr()
    shown = [r.getMessage() for r in caplog.records] + [captured.out, captured.err]
    shown += [str(w.message) for w in warned]
    text = "\n".join(s for s in shown if s)
    assert "Traceback" not in text
    for fragment in case["says"]:
        assert fragment in text, text
    assert getattr(magic, case["option"]) == before
    out = shell.run_cell_magic("ask", "--model model --con duck", "How many rows?")
    assert out.ok
