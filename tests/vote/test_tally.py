"""The execution vote: grouping by result, the winner (greedy first on a tie), the agreement,
and when to stop drawing candidates; table-driven from ``data/tally_cases.json`` and
``data/stopping_cases.json`` (no model: candidates are given as results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.vote.answers import Agreement
from cadet_magic.vote.stopping import BetaStop, FirstAgree, leads, settled, stop
from cadet_magic.vote.tally import Ballot, tally

DATA = Path(__file__).parent / "data"
TALLY = json.loads((DATA / "tally_cases.json").read_text())["cases"]
STOPPING = json.loads((DATA / "stopping_cases.json").read_text())["cases"]
RULES = {"first2": FirstAgree(2), "first3": FirstAgree(3), "beta95": BetaStop(0.95),
         "beta80": BetaStop(0.80)}  # fmt: skip


def ballots(candidates):
    return [
        None
        if c is None
        else Ballot(i, c["sql"], tuple(map(tuple, c["rows"])), truncated=c.get("truncated", False))
        for i, c in enumerate(candidates)
    ]


@pytest.mark.parametrize("case", TALLY, ids=[c["id"] for c in TALLY])
def test_tally(case):
    t = tally(ballots(case["candidates"]))
    assert [[g.first.sql, g.votes] for g in t.groups] == case["groups"]
    want = case["agreement"]
    assert t.agreement == (Agreement(*want) if want else None)
    assert (t.split, t.contested) == (case["split"], case["contested"])
    assert t.drawn == len(case["candidates"])


def test_the_tally_grows_one_candidate_at_a_time_to_the_same_result():
    cands = TALLY[3]["candidates"]
    t = tally([])
    for b in ballots(cands):
        t = t.add(b)
    assert t == tally(ballots(cands))


def drawn(letters: str):
    rows = {ch: ((ord(ch),),) for ch in letters if ch != "-"}
    return tally([None if ch == "-" else Ballot(i, ch, rows[ch]) for i, ch in enumerate(letters)])


@pytest.mark.parametrize("case", STOPPING, ids=[c["id"] for c in STOPPING])
@pytest.mark.parametrize("rule", list(RULES))
def test_stop(case, rule):
    assert stop(RULES[rule], drawn(case["drawn"]), case["budget"]) is case[rule]


@pytest.mark.parametrize(
    ("a", "b", "p"), [(0, 0, 0.5), (1, 0, 0.75), (2, 0, 0.875), (3, 0, 0.9375), (2, 1, 0.6875)]
)
def test_leads_is_the_beta_tail(a, b, p):
    assert leads(a, b) == pytest.approx(p)


def test_settled_only_when_no_other_answer_can_catch_up():
    assert not settled(drawn("ab"), 5)
    assert settled(drawn("aaa"), 5)  # 3 > 0 + 2 and 3 > 2
    assert not settled(drawn("aa"), 5)  # three more could give another answer 3 votes
