"""A request to change data is answered read-only and says so in one line: the questions that
ask for a change (table-driven from ``data/read_only_cases.json``), then end to end on real
DuckDB and SQLite with a scripted model (stored replies, not a real LLM) whose first reply
deletes: the data is unchanged and the answer carries the note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic import ask
from cadet_magic.agent.read_only import READ_ONLY_NOTE, asks_for_a_change
from cadet_magic.answer_record import answer_text
from cadet_magic.display import mimebundle, render_text
from cadet_magic.llm import ScriptedModel
from tests.helpers import connect_with, sql_reply

CASES = json.loads((Path(__file__).parent / "data" / "read_only_cases.json").read_text())["cases"]
SETUP = [
    "CREATE TABLE orders (id INTEGER, status TEXT)",
    "INSERT INTO orders VALUES (1, 'shipped'), (2, 'cancelled'), (3, 'shipped')",
]


@pytest.mark.parametrize("case", CASES, ids=[c["question"] for c in CASES])
def test_which_questions_ask_for_a_change(case):
    assert asks_for_a_change(case["question"]) is case["change"]


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_the_readme_request_is_answered_read_only_and_says_so(engine):
    con = connect_with(engine, SETUP)
    q = "Remove the cancelled orders, then show how many orders are left."
    model = ScriptedModel({q: [sql_reply("DELETE FROM orders WHERE status = 'cancelled'"),
                               sql_reply("SELECT count(*) AS n FROM orders WHERE status <> 'cancelled'")]})  # fmt: skip
    r = ask(q, con=con, model=model, candidates=1)
    assert r.ok and r.rows == [(2,)] and r.notice == READ_ONLY_NOTE
    assert con.execute("SELECT count(*) FROM orders").fetchone()[0] == 3  # nothing removed
    assert READ_ONLY_NOTE in render_text(r) and READ_ONLY_NOTE in mimebundle(r)["text/html"]
    assert f"Note: {READ_ONLY_NOTE}" in answer_text(r)


def test_a_model_that_writes_for_a_plain_question_gets_the_note_too():
    con = connect_with("sqlite", SETUP)
    q = "Orders shipped?"
    model = ScriptedModel({q: [sql_reply("UPDATE orders SET status = 'shipped'"),
                               sql_reply("SELECT count(*) AS n FROM orders WHERE status = 'shipped'")]})  # fmt: skip
    r = ask(q, con=con, model=model, candidates=1)
    assert r.rows == [(2,)] and r.notice == READ_ONLY_NOTE
    plain = ask(q, con=con, model=ScriptedModel({q: [sql_reply("SELECT 1 AS n")]}), candidates=1)
    assert plain.notice is None
