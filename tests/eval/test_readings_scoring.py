"""The evaluation's scoring of readings: a question that asks is scored with its leading reading
("right without choosing") and with the reading matching the gold ("right after choosing"),
table-driven from ``data/readings_scoring.json``; and a results line records ``asks`` and each
reading's ``sql``, ``votes`` and ``match``, end to end on a real SQLite database with a scripted
model (stored replies, not a real LLM) whose candidates split 2 to 1."""

from __future__ import annotations

import json
import sqlite3

from cadet_magic import ask
from cadet_magic.eval.data import Question
from cadet_magic.eval.figures import figures
from cadet_magic.eval.results import record_of
from cadet_magic.eval.rows import Database, gold_rows
from cadet_magic.eval.usage import Usage
from cadet_magic.llm import ScriptedModel
from tests.eval.conftest import DATA
from tests.helpers import sql_reply

SCORING = json.loads((DATA / "readings_scoring.json").read_text())


def test_a_question_that_asks_is_scored_twice():
    f = figures([{"error": None, "attempts": [], **line} for line in SCORING["lines"]])
    got = {
        "n": f.n,
        "asked": f.asked,
        "right_without": f.final.k,
        "right_after": f.after_choosing.k,
        "silent_wrong": f.silent_wrong,
        "right_flagged": f.right_flagged,
    }
    assert got == SCORING["expected"]


def test_a_results_line_records_the_readings_and_their_match(tmp_path):
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE t (g TEXT, v INTEGER); INSERT INTO t VALUES ('a', 1), ('b', 2), ('a', 3);"
    )
    con.commit()
    q = Question(0, "shop", "Total v per g, highest first?", "SELECT g, sum(v) FROM t GROUP BY g")
    top = "SELECT g, sum(v) AS s FROM t GROUP BY g ORDER BY s DESC LIMIT 1"
    every = "SELECT g, sum(v) AS s FROM t GROUP BY g ORDER BY s DESC"
    model = ScriptedModel({q.question: [sql_reply(s) for s in (top, every, top)]})
    result = ask(q.question, con=con, model=model, candidates=3)
    db = Database(path, "sqlite")
    gold = gold_rows(db, q.gold, 10)
    rec = record_of(q, result, gold_rows=gold, ordered=False, db=db, usage=Usage(),
                    seconds=0.1, error=None, timeout=10)  # fmt: skip
    assert rec["asks"] is True and not rec["final_match"]
    assert [(r["sql"], r["votes"], r["match"]) for r in rec["readings"]] == [
        (top, 2, False), (every, 1, True)]  # fmt: skip
    assert rec["warnings"] == result.warnings
    f = figures([rec])
    assert (f.asked, f.final.k, f.after_choosing.k, f.silent_wrong) == (1, 0, 1, 0)
    db.close()
    con.close()
