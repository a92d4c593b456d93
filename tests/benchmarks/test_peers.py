"""The peers' benchmark program (not its figures): each peer asks the scripted OpenAI-compatible
fake (never the real model), its answer is scored by the evaluation's rule, a rerun resumes,
and the scripted replies stay out of the real model's reply store."""

from __future__ import annotations

import json
import sqlite3

import pytest
from fake_openai import FakeOpenAI

from benchmarks import peer_runs, peers
from cadet_magic.eval.data import Question
from tests.conftest import need


def _langchain_sql() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("langchain_community", "langchain_classic"))


@pytest.fixture
def langchain_sql():
    need(_langchain_sql(), "the peers extra is not installed (pip install -e '.[peers]')")


GOLD = "SELECT count(*) FROM singer"


@pytest.fixture
def spider(tmp_path):
    """A one-database data folder in Spider's layout and its question."""
    folder = tmp_path / "database" / "concert"
    folder.mkdir(parents=True)
    con = sqlite3.connect(folder / "concert.sqlite")
    con.executescript(
        "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);"
        "INSERT INTO singer VALUES (1, 'Joe', 'France'), (2, 'Ann', 'Peru'), (3, 'Bo', NULL);"
        "CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER "
        "REFERENCES singer (singer_id), year INTEGER);"
    )
    con.commit()
    con.close()
    q = Question(0, "concert", "How many singers are there?", GOLD)
    return {"concert": (folder / "concert.sqlite", "sqlite")}, q


def run_peer(peer, script, spider, tmp_path):
    where, q = spider
    store = tmp_path / "replies.jsonl"
    with FakeOpenAI(script) as srv:
        peers.run([peer], [q], where, srv.base_url, store, out_dir=tmp_path / "out")
        requests = srv.requests
    line = peer_runs.read_lines(peers.results_path(peer, tmp_path / "out"))[q.key]
    return line, requests


def test_oneshot_sends_the_statements_and_rows_once_and_scores_the_sql(spider, tmp_path):
    line, requests = run_peer(
        "oneshot", ["```sql\nSELECT COUNT(*) FROM singer;\n```"], spider, tmp_path
    )
    assert (line.ran, line.match, line.calls, line.sql) == (
        True,
        True,
        1,
        "SELECT COUNT(*) FROM singer;",
    )
    [request] = requests
    [message] = request["messages"]
    text = message["content"]
    assert message["role"] == "user" and request["temperature"] == 0
    assert "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY" in text
    assert "3 rows from singer table:\nsinger_id\tname\tcountry\n1\tJoe\tFrance" in text
    assert "3\tBo\tNULL" in text and "How many singers are there?" in text


def test_a_wrong_or_missing_answer_is_scored_as_such(spider, tmp_path):
    line, _ = run_peer("oneshot", ["SELECT count(*) FROM concert"], spider, tmp_path)
    assert (line.ran, line.match) == (True, False)
    line2, _ = run_peer("oneshot", ["I cannot answer that."], spider, tmp_path / "b")
    assert (line2.ran, line2.match, line2.error) == (False, False, "no SQL in the reply")


def test_the_chain_is_scored_as_returned_and_with_its_sql_taken_out(
    spider, tmp_path, langchain_sql
):
    line, requests = run_peer(
        "chain", ['SQLQuery: SELECT count(*) FROM "singer"'], spider, tmp_path
    )
    assert (line.ran, line.match) == (True, True)
    assert line.extra["as_returned"] == {"ran": False, "match": False}
    assert "SQLQuery:" in requests[0]["messages"][0]["content"]


def test_the_agent_is_scored_by_its_last_query_call_that_ran(spider, tmp_path, langchain_sql):
    script = [
        "Thought: look\nAction: sql_db_query\nAction Input: SELECT nme FROM singer",
        "Thought: fix\nAction: sql_db_query\nAction Input: SELECT count(*) FROM singer",
        "Thought: I now know the final answer\nFinal Answer: 3",
    ]
    line, requests = run_peer("agent", script, spider, tmp_path)
    assert (line.sql, line.ran, line.match) == ("SELECT count(*) FROM singer", True, True)
    assert line.calls == 3 and line.extra["query_calls"] == 2 and line.extra["query_calls_ran"] == 1
    assert len(requests) == 3


def test_an_agent_that_never_queries_has_no_answer(spider, tmp_path, langchain_sql):
    line, _ = run_peer("agent", ["I think there are 3 singers."], spider, tmp_path)
    assert (line.sql, line.ran, line.match) == (None, False, False)
    assert line.error  # why: the parse failure that ended the run


def test_a_rerun_resumes_and_scripted_replies_stay_out_of_the_real_store(spider, tmp_path):
    run_peer("oneshot", ["SELECT count(*) FROM singer"], spider, tmp_path)
    _, requests = run_peer("oneshot", [], spider, tmp_path)  # nothing left to ask
    assert requests == []
    assert not peer_runs.REPLIES.is_file() or all(
        "How many singers are there?" not in json.loads(x)["body"]
        for x in peer_runs.REPLIES.read_text().splitlines()
    )


def test_the_section_pairs_each_peer_with_the_products_final_answers(tmp_path, monkeypatch):
    from benchmarks import peers_report
    from cadet_magic.eval import KEYS

    qs = [Question(i, "db", f"q{i}?", f"SELECT {i}") for i in range(4)]
    evals = tmp_path / "eval"
    evals.mkdir()
    for mode, right in (("targeted", [1, 1, 1, 0]), ("raw", [1, 0, 0, 0]), ("none", [1, 0, 0, 0])):
        recs = [
            dict.fromkeys(KEYS)
            | {
                "db_id": "db",
                "question": q.question,
                "gold": q.gold,
                "final_match": bool(r),
                "first_match": bool(r) and i < 2,
                "calls": 1,
                "seconds": 1.0,
                "attempts": [{"input_tokens": 100, "model_seconds": 1.0}],
            }  # fmt: skip
            for i, (q, r) in enumerate(zip(qs, right, strict=True))
        ]
        (evals / f"spider.{mode}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "peers"
    for i, q in enumerate(qs):
        peer_runs.append_line(
            out / "spider.oneshot.jsonl",
            peer_runs.Line(
                *q.key, sql="SELECT 1", ran=True, match=i == 0, calls=1, input_tokens=50
            ),
        )
    text, rows = peers_report.figures(qs, out, evals)
    assert "| the product, targeted, final answer | 3/4 (75.0%" in text
    assert "| the product, targeted, first attempt | 2/4 (50.0%" in text
    assert "| one-shot prompt (CREATE TABLE + 3 rows) | 1/4 (25.0%" in text
    assert "+2 / -0: +50.0 pts" in text  # the product's final answers against the one-shot
    assert "final answers (shipped defaults) against one-shot prompt" in text
    # the goals are rows of BENCHMARKS.md too, each held to its budget
    first, final, *others = rows
    assert "first attempt against the one-shot" in first.figure
    assert final.value.startswith("3/4 against 1/4: +50.0 pts") and final.budget.startswith("≥ +5")
    assert [r.figure.rsplit(" ", 2)[-2] for r in others] == ["raw", "none"]
    assert "LangChain" not in text  # peers that have not run have no row
    peer_runs.append_line(  # a tool-calling agent that saw no call: a row, and no goal
        out / "spider.agent-tools.jsonl",
        peer_runs.Line(*qs[0].key, sql=None, ran=False, match=False, calls=1, input_tokens=50),
    )
    text, rows = peers_report.figures(qs, out, evals)
    assert f"| {peers_report.TOOL_CALLING} | 0/1" in text
    assert not any(peers_report.TOOL_CALLING in r.figure for r in rows)
    assert f"Not a goal: {peers_report.TOOL_CALLING}" in text
