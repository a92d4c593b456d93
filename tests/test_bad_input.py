"""Bad input, through the real IPython shell: one clear line each, no traceback, the kernel and
the user's connection as before."""

from __future__ import annotations

import importlib.util
import json
import logging
import warnings
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from cadet_magic.display import mimebundle
from tests.helpers import fake_model, sql_reply, usage_error

CASES = json.loads((Path(__file__).with_name("bad_input_cases.json")).read_text())


@pytest.fixture
def shell(ipython_shell, tmp_path):
    ip = ipython_shell
    (tmp_path / "not_json.json").write_text("{replies: nope")
    (tmp_path / "not_a_list.json").write_text(json.dumps({"replies": {"q": "SELECT 1"}}))
    (tmp_path / "numbers.json").write_text(json.dumps({"q": [1, 2]}))
    (tmp_path / "replies.json").write_text(
        json.dumps({"Another question?": [sql_reply("SELECT 1")]})
    )
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x INT); INSERT INTO t VALUES (1)")
    ip.user_ns.update(
        duck=con,
        model=fake_model(sql_reply("SELECT x FROM t")),
        unreachable=sa.create_engine("postgresql+psycopg://nobody@127.0.0.1:9/none"),
        not_a_connection=42,
        a_name="orders",
    )
    yield ip
    con.close()


def _line(case: dict, tmp_path: Path, monkeypatch) -> str:
    if case.get("absent") and importlib.util.find_spec(case["absent"]) is not None:
        pytest.skip(f"{case['absent']} is installed here: the case needs it absent")
    for var in case.get("unset_env", []):
        monkeypatch.delenv(var, raising=False)
    model = case.get("model", "model").replace("{tmp}", str(tmp_path))
    return f"--model {model} --con {case.get('con', 'duck')} {case.get('options', '')}"


def _says(case: dict, text: str) -> None:
    for fragment in case["says"]:
        assert fragment in text, text
    for fragment in case.get("says_not", []):
        assert fragment not in text, text


@pytest.mark.parametrize("case", CASES["ask"], ids=lambda c: c["id"])
def test_ask_options(shell, tmp_path: Path, monkeypatch, case: dict) -> None:
    text = usage_error(shell, "ask", _line(case, tmp_path, monkeypatch), "How many rows?")
    _says(case, text)
    assert shell.user_ns["duck"].execute("SELECT count(*) FROM t").fetchall() == [(1,)]


@pytest.mark.parametrize("case", CASES["answered"], ids=lambda c: c["id"])
def test_answered_with_a_message(shell, tmp_path: Path, monkeypatch, case: dict) -> None:
    result = shell.run_cell_magic("ask", _line(case, tmp_path, monkeypatch), "How many rows?")
    assert not result.ok and result.stop_reason == "model_error"
    _says(case, result.message)
    assert "Traceback" not in mimebundle(result)["text/plain"]


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
