"""Comparing two results has a hard bound on its work (``vote/execution_match.py``): wide results whose
columns all look interchangeable (``data/wide_results.json``, answers a **scripted** model
writes) are compared by a search that counts the orders it tries and the rows it examines,
never timed; the search gives the answers every order of their columns would (checked against
all of them on small results); and through the vote on DuckDB, two such 12-column candidates
are compared within the bound."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from cadet_magic.vote import execution_match as match_module
from cadet_magic.vote.execution_match import MAX_WORK, column_order, execution_match

WIDE = json.loads((Path(__file__).parent / "data" / "wide_results.json").read_text())["cases"]
#: Orders the search may try on a 12-column, 2- or 3-row comparison (a few per column).
FEW = 100


def rows(data) -> list[tuple]:
    return [tuple(r) for r in data]


@pytest.mark.parametrize("case", WIDE, ids=[c["name"] for c in WIDE])
def test_wide_results_are_compared_with_bounded_work(case):
    gold, answer = rows(case["gold"]), rows(case["answer"])
    assert execution_match(gold, answer, ordered=False) is case["match"]
    search = column_order(gold, answer, ordered=False)
    assert (search.order is not None) is case["match"] and not search.bounded
    assert search.tried <= FEW and search.work <= FEW * len(gold)
    if search.order is not None:
        turned = [tuple(r[j] for j in search.order) for r in answer]
        assert Counter(turned) == Counter(gold)


def _any_order(gold: list[tuple], answer: list[tuple]) -> bool:
    """Every column order, one after the other (small results only)."""
    return any(
        Counter(gold) == Counter(tuple(r[j] for j in order) for r in answer)
        for order in itertools.permutations(range(len(gold[0])))
    )


def test_the_search_finds_an_order_exactly_when_one_exists():
    """2,000 small random results, half of them a shuffle of the other (some then changed in
    one row): the search says what trying every column order says."""
    rng = random.Random(53)
    for _ in range(2000):
        width, height, values = rng.randint(2, 6), rng.randint(1, 5), rng.randint(1, 3)
        gold = [tuple(rng.randint(0, values) for _ in range(width)) for _ in range(height)]
        if rng.random() < 0.5:
            order = rng.sample(range(width), width)
            answer = rng.sample([tuple(r[j] for j in order) for r in gold], height)
            if rng.random() < 0.5:
                answer[0] = tuple(rng.randint(0, values) for _ in range(width))
        else:
            answer = [tuple(rng.randint(0, values) for _ in range(width)) for _ in range(height)]
        search = column_order(gold, answer, ordered=False)
        assert (search.order is not None) is _any_order(gold, answer), (gold, answer)
        assert execution_match(gold, answer, ordered=True) is (
            gold == answer or column_order(gold, answer, ordered=True).order is not None
        )


def test_the_search_stops_at_its_bound():
    """A search given less work than it needs stops there, having examined no more rows, and
    the answers then count as different."""
    gold = [tuple(range(40))]
    answer = [tuple(reversed(range(40)))]
    full = column_order(gold, answer, ordered=False)
    assert full.order is not None and full.work == 40
    cut = column_order(gold, answer, ordered=False, max_work=10)
    assert cut.bounded and cut.order is None and cut.work <= 10 + len(gold)


def test_thousands_of_columns_need_no_recursion():
    gold = [tuple(range(3000)), tuple(range(3000, 6000))]
    answer = [tuple(reversed(r)) for r in gold]
    search = column_order(gold, answer, ordered=False)
    assert search.order == tuple(reversed(range(3000))) and search.work <= MAX_WORK


def test_two_wide_candidates_of_the_vote_are_compared_within_the_bound(monkeypatch):
    """The vote on DuckDB with a **scripted** model: three candidates of 12 columns and two
    rows, each column 0 over 1, one with half its columns turned over; every comparison the
    vote makes is counted."""
    from cadet_magic.agent.run import run_agent
    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.llm.spec import ScriptedModel
    from tests.helpers import connect_with, sql_reply

    def query(first: list[int], second: list[int]) -> str:
        top = ", ".join(f"{v} AS c{i}" for i, v in enumerate(first))
        return f"SELECT {top} UNION ALL SELECT {', '.join(map(str, second))} ORDER BY c0"

    same = query([0] * 12, [1] * 12)
    turned = query([0] * 6 + [1] * 6, [1] * 6 + [0] * 6)
    searches = []
    counted = match_module.column_order

    def spy(*args, **kwargs):
        searches.append(counted(*args, **kwargs))
        return searches[-1]

    monkeypatch.setattr(match_module, "column_order", spy)
    question = "Which flags?"
    model = ScriptedModel({question: [sql_reply(q) for q in (same, turned, turned, same)]})
    con = connect_with("duckdb", ["CREATE TABLE flags (id INTEGER)"])
    r = run_agent(question, model=model, runner=resolve_runner(con), candidates=3)
    assert r.ok and r.agreement is not None
    assert searches and all(s.tried <= FEW and not s.bounded for s in searches)
