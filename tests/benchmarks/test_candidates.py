"""The candidates benchmark's program (not its figures): the greedy first request is the
product's, the sampled ones carry a temperature and a seed each, candidates are grouped by
result as the vote groups them, and the offline replay follows the agent's stopping rules
(table-driven from ``data/candidate_replays.json``); the model is the scripted fake."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

from benchmarks import candidates, candidates_report, peer_runs
from cadet_magic.eval.data import Question
from cadet_magic.vote.stopping import BetaStop, FirstAgree

REPLAYS = json.loads((Path(__file__).parent / "data" / "candidate_replays.json").read_text())


@pytest.fixture
def spider(tmp_path):
    folder = tmp_path / "concert"
    folder.mkdir()
    con = sqlite3.connect(folder / "concert.sqlite")
    con.executescript(
        "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);"
        "INSERT INTO singer VALUES (1, 'Joe', 'France'), (2, 'Ann', 'Peru'), (3, 'Bo', NULL);"
    )
    con.commit()
    con.close()
    q = Question(0, "concert", "How many singers are there?", "SELECT count(*) FROM singer")
    return {"concert": (folder / "concert.sqlite", "sqlite")}, q


def test_candidates_are_drawn_seeded_and_grouped_by_result(spider, tmp_path):
    where, q = spider
    script = ["SELECT count(*) FROM singer", "SELECT COUNT(singer_id) FROM singer",
              "SELECT name FROM singer", "I cannot tell."]  # fmt: skip
    with FakeOpenAI(script) as srv:
        candidates.run_questions("t", [q], where, srv.base_url, count=3, temperature=0.7,
                                 replies=tmp_path / "r.jsonl", out_dir=tmp_path)  # fmt: skip
        requests = srv.requests
    line = peer_runs.read_lines(candidates.results_path("t", 0.7, tmp_path))[q.key]
    recs = line.extra["candidates"]
    assert [r["group"] for r in recs] == [0, 0, 2, None]
    assert [r["match"] for r in recs] == [True, True, False, False]
    assert (line.match, line.calls) == (True, 4)
    assert requests[0]["temperature"] == 0.0 and "seed" not in requests[0]
    assert [(r["temperature"], r["seed"]) for r in requests[1:]] == [(0.7, 1), (0.7, 2), (0.7, 3)]
    assert all(r["messages"] == requests[0]["messages"] for r in requests)
    body = candidates_report.report([candidates.results_path("t", 0.7, tmp_path)], None)
    assert "1 questions; greedy first attempt right on 1" in body


def test_the_fixed_sample_is_refused():
    with pytest.raises(SystemExit):
        candidates.main(["--set", "fixed", "--report-only"])


RULES = {"first2": FirstAgree(2), "first3": FirstAgree(3), "beta80": BetaStop(0.8)}


@pytest.mark.parametrize("case", REPLAYS["cases"], ids=[c["id"] for c in REPLAYS["cases"]])
def test_replay(case):
    records = [{"group": g, "match": m} for g, m in case["candidates"]]
    got = candidates_report.replay(records, RULES[case["rule"]], case["budget"])
    assert [got.right, got.drawn, got.split, got.contested] == case["expect"]


def _question(greedy: bool, samples: list[tuple[int, bool]]) -> list[dict]:
    first = {"group": 0, "match": greedy, "seconds": 0.1}
    return [first] + [{"group": g, "match": m, "seconds": 2.0} for g, m in samples]


def test_the_rules_choose_the_default_and_the_warning():
    # 12 questions the greedy answer gets wrong and two agreeing samples right; 28 all agree
    fixed = [_question(False, [(1, True), (1, True), (1, True), (1, True)])] * 12
    sure = [_question(True, [(0, True)] * 4)] * 28
    text = candidates_report.choice(fixed + sure, [])
    assert "the default `candidates` is 3" in text and "first 2 agree, at most 3" in text
    assert "'not all agree' recall 0%, false alarms 30% (too many)" in text
    # no gain: the default stays 1
    text = candidates_report.choice(sure, [])
    assert "the default stays 1" in text
