"""Replies the real local model wrote that tripped the agent once, replayed by a scripted model.

Each case in ``data/real_replies.json`` holds a question, the database it was asked on, and the
replies Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, temperature 0, through llama.cpp's server) wrote
for it, one per attempt, exactly as it wrote them (prose around the SQL, another dialect, the
same SQL again, feedback ignored), with ``broke``: what the reply exposed. A
:class:`~cadet_magic.llm.ScriptedModel` replays them (labelled scripted), so they run in every
test run without the model, and the loop must treat each the way the case records: the SQL read
from the reply, each attempt's outcome and category, feedback sent after every failed attempt
but the last, and how the question ended.

The Spider cases run on Spider dev's SQLite files and skip (fail under CI) without the shared
data; the shop cases run on the sample shop.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cadet_magic.agent.reply import extract_sql
from cadet_magic.api import ask
from cadet_magic.examples.shop import create_shop
from cadet_magic.llm import ScriptedModel

CASES = json.loads((Path(__file__).parent / "data" / "real_replies.json").read_text())["cases"]


def connect(database: str, shared_data):
    """The case's database: ``shop`` (DuckDB, in memory) or ``spider:<db_id>`` (SQLite)."""
    if database == "shop":
        return create_shop()
    kind, _, db_id = database.partition(":")
    assert kind == "spider", database
    path = shared_data / "spider-dev" / "database" / db_id / f"{db_id}.sqlite"
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_real_reply_replayed(case, request):
    shared = request.getfixturevalue("shared_data") if case["database"] != "shop" else None
    con = connect(case["database"], shared)
    replies = case["replies"]
    model = ScriptedModel({case["question"]: replies}, name=f"real-replies:{case['id']}")
    try:
        result = ask(case["question"], con=con, model=model, fallback=case.get("fallback", False))
    finally:
        con.close()
    assert result.scripted  # replayed, never presented as the real model
    attempts = result.attempts
    expected = case["attempts"]
    assert len(attempts) == len(expected), [(a.outcome, a.category) for a in attempts]
    for attempt, reply, want in zip(attempts, replies, expected, strict=False):
        assert attempt.reply == reply
        assert attempt.sql == extract_sql(reply)
        if "sql" in want:
            assert attempt.sql == want["sql"]
        assert (attempt.outcome, attempt.category) == (want["outcome"], want["category"]), (
            attempt.error
        )
        for text in want.get("feedback_mentions", []):
            assert text in (attempt.feedback or ""), attempt.feedback
    assert all(a.feedback for a in attempts[:-1])
    assert result.ok == case["ok"]
    assert result.stop_reason == case["stop_reason"]
