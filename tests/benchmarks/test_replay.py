"""The replay check (``python -m benchmarks.replay``) on a small made-up data set whose recorded
run is written here (scripted replies, no model): the product gets the recorded reply of each
(question, attempt, mode) and of each of the vote's candidates, two replays of the same code
write the same folder, a changed request is reported, and the replay never writes among the
real model's records."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks import replay
from cadet_magic.options import AskOptions

#: The replays without a vote (the recorded run below drew no candidates).
ONE = AskOptions(candidates=1, model_timeout=60.0)

QUESTIONS = [
    ("How many orders are there?", "SELECT count(*) FROM orders"),
    (
        "What is the total amount per customer?",
        "SELECT customer, sum(amount) FROM orders GROUP BY customer",
    ),
    ("Which customer ordered most?", "SELECT customer FROM orders ORDER BY amount DESC LIMIT 1"),
]

RECORDED = {
    "targeted": [
        ["SELECT count(*) FROM orders"],
        [
            "SELECT customer, sum(amount) FROM orders GROUP BY custmer",
            "SELECT customer, sum(amount) FROM orders GROUP BY customer",
        ],
        # (two different failed queries: the fallback follows; after the same one three
        # times it would not)
        ["SELECT custmer FROM orders", "SELECT customr FROM orders"],
    ],
    "none": [
        ["SELECT count(*) FROM orders"],
        ["SELECT customer, sum(amount) FROM orders GROUP BY custmer"],
        ["SELECT custmer FROM orders"],
    ],
}
#: The vote's candidates the recorded run drew for the first question (targeted mode), in the
#: order drawn: the first disagrees with the first attempt, the second agrees with it.
CANDIDATES = [
    {"sql": "SELECT count(*) FROM orders WHERE amount > 2"},
    {"sql": "SELECT count(id) FROM orders"},
]
FALLBACK = {
    "sql": "SELECT customer, amount FROM orders",
    "code": "result = df.sort_values('amount').iloc[-1:]['customer']",
}


def spider(root: Path) -> Path:
    db = root / "database" / "shop" / "shop.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, amount REAL)")
    con.executemany(
        "INSERT INTO orders VALUES (?, ?, ?)", [(1, "ann", 5.0), (2, "bob", 7.5), (3, "ann", 1.0)]
    )
    con.commit()
    con.close()
    dev = [{"db_id": "shop", "question": q, "query": gold} for q, gold in QUESTIONS]
    (root / "dev.json").write_text(json.dumps(dev))
    return root


def recorded(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for mode, runs in RECORDED.items():
        lines = []
        for (question, gold), sqls in zip(QUESTIONS, runs, strict=True):
            rec = {
                "db_id": "shop",
                "question": question,
                "gold": gold,
                "attempts": [{"sql": s} for s in sqls],
                "fallback_attempts": [FALLBACK] if question.startswith("Which") else [],
            }
            if mode == "targeted" and question.startswith("How many"):
                rec["candidates"] = CANDIDATES
            lines.append(json.dumps(rec))
        (folder / f"spider.{mode}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    return spider(tmp_path / "spider"), recorded(tmp_path / "recorded")


def results(out: Path, mode: str) -> list[dict]:
    return [json.loads(line) for line in (out / f"results.{mode}.jsonl").read_text().splitlines()]


def test_each_request_gets_the_recorded_reply_and_two_replays_agree(folders, tmp_path):
    data, rec = folders
    modes = ("targeted", "none")
    figures = replay.replay(tmp_path / "a", data, rec, modes, options=ONE)
    # targeted: 1 + 2 + (3 SQL attempts, the last recorded one again, and the fallback);
    # none: 1 + (1 and a fallback none was recorded for) + (1 and the fallback); the recorded
    # lines hold no final SQL
    assert figures == {"targeted": (7, 3, 3, 0), "none": (5, 3, 2, 0)}
    for mode in modes:
        got = [[a["sql"] for a in r["attempts"]] for r in results(tmp_path / "a", mode)]
        want = [
            sqls + sqls[-1:] * (len(g) - len(sqls))
            for sqls, g in zip(RECORDED[mode], got, strict=True)
        ]
        assert got == want
    last = results(tmp_path / "a", "targeted")[-1]
    assert last["fallback"] and last["fallback_attempts"][0]["code"] == FALLBACK["code"]
    assert "seconds" not in last and "model_seconds" not in last["attempts"][0]
    requests = (tmp_path / "a" / "requests.targeted.jsonl").read_bytes().splitlines()
    assert all(json.loads(r)["model"] == replay.MODEL for r in requests)  # labelled as replayed
    matched = (tmp_path / "a" / "matched.targeted.txt").read_text().splitlines()
    assert matched[-1] == "Which customer ordered most? fallback 1"

    replay.replay(tmp_path / "b", data, rec, modes, options=ONE)
    assert replay.compare(tmp_path / "a", tmp_path / "b") == []


def test_a_changed_request_is_reported(folders, tmp_path):
    data, rec = folders
    replay.replay(tmp_path / "a", data, rec, ("none",), limit=1, options=ONE)
    replay.replay(tmp_path / "b", data, rec, ("none",), limit=1, options=ONE)
    path = tmp_path / "b" / "requests.none.jsonl"
    path.write_bytes(path.read_bytes().replace(b"orders", b"ordres", 1))
    assert replay.main(["--compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    (problem,) = replay.compare(tmp_path / "a", tmp_path / "b")
    assert problem.startswith("requests.none.jsonl: line 1")


def test_each_candidate_of_the_vote_gets_the_recorded_candidate_of_its_number(folders, tmp_path):
    """Candidate k is sampled with seed k: it gets the recorded candidate k, so the vote
    replays as it ran (the first candidate disagrees, the second breaks the tie)."""
    data, rec = folders
    vote = AskOptions(candidates=3, model_timeout=60.0)
    replay.replay(tmp_path / "a", data, rec, ("targeted",), limit=1, options=vote)
    matched = (tmp_path / "a" / "matched.targeted.txt").read_text().splitlines()
    question = QUESTIONS[0][0]
    assert matched == [f"{question} sql 1", f"{question} candidate 1", f"{question} candidate 2"]
    (line,) = results(tmp_path / "a", "targeted")
    assert [c["sql"] for c in line["candidates"]] == [c["sql"] for c in CANDIDATES]
    assert all("model_seconds" not in c for c in line["candidates"])  # timings left out
    assert line["agreement"] == [2, 3] and line["final_match"]
    requests = [json.loads(r) for r in (tmp_path / "a" / "requests.targeted.jsonl").open("rb")]
    assert [r.get("seed") for r in requests] == [None, 1, 2]
    replay.replay(tmp_path / "b", data, rec, ("targeted",), limit=1, options=vote)
    assert replay.compare(tmp_path / "a", tmp_path / "b") == []  # two replays of a vote agree


def test_the_replay_asks_with_the_recorded_runs_options(folders, tmp_path):
    data, rec = folders
    (rec / "run.json").write_text(json.dumps({"options": {"candidates": 3, "model_timeout": 5}}))
    options = replay.recorded_options(rec)
    assert (options.candidates, options.model_timeout) == (3, 60.0)


def test_the_replay_writes_nowhere_near_the_real_records(folders):
    data, rec = folders
    with pytest.raises(SystemExit, match="real model"):
        replay.replay(rec / "out", data, rec, ("none",), options=ONE)
    with pytest.raises(SystemExit, match="real model"):
        replay.replay(replay.ROOT / ".cache" / "replay", data, rec, ("none",), options=ONE)


#: A question whose first recorded attempt filters on a value that is not stored ('Ann'; the
#: data holds 'ann'): the result check finds it suspect and the retry writes the second one.
CASE = ("How many orders did ann place?", "SELECT count(*) FROM orders WHERE customer = 'ann'")
CASE_ATTEMPTS = [
    "SELECT count(*) FROM orders WHERE customer = 'Ann'",
    "SELECT count(*) FROM orders WHERE customer = 'ann'",
]


def test_two_replays_under_a_slow_clock_are_the_same(tmp_path, monkeypatch):
    """The result check's total time is the machine's, not the code's: under a clock that
    advances a second at each reading (a loaded machine), the product's 0.2 s are spent before
    the first check query, while the replay (no total time, each query still under the query
    timeout) checks the value in both runs and writes the same requests and results."""
    import time

    from cadet_magic.result_check import probe_database

    data = spider(tmp_path / "spider")
    dev = json.loads((data / "dev.json").read_text())
    (data / "dev.json").write_text(
        json.dumps([*dev, {"db_id": "shop", "question": CASE[0], "query": CASE[1]}])
    )
    rec = tmp_path / "recorded"
    rec.mkdir()
    line = {"db_id": "shop", "question": CASE[0], "gold": CASE[1]}
    line["attempts"] = [{"sql": s} for s in CASE_ATTEMPTS]
    (rec / "spider.targeted.jsonl").write_text(json.dumps(line) + "\n")

    ticks = iter(range(10**9))
    slow = lambda: float(next(ticks))  # noqa: E731 - one second per reading
    monkeypatch.setattr(time, "perf_counter", slow)
    monkeypatch.setitem(probe_database.check_values.__kwdefaults__, "clock", slow)

    options = replay.recorded_options(rec).replace(candidates=1)
    for out in ("a", "b"):
        replay.replay(tmp_path / out, data, rec, ("targeted",), options=options)
    assert replay.compare(tmp_path / "a", tmp_path / "b") == []
    (got,) = results(tmp_path / "a", "targeted")
    assert [a["sql"] for a in got["attempts"]] == CASE_ATTEMPTS  # 'Ann' found missing

    # The product's own budget under the same clock: the check is out of time, claims
    # nothing, and the first answer stands (what made two replays differ under load).
    product = options.replace(check_budget=AskOptions().check_budget)
    replay.replay(tmp_path / "c", data, rec, ("targeted",), options=product)
    (got,) = results(tmp_path / "c", "targeted")
    assert [a["sql"] for a in got["attempts"]] == CASE_ATTEMPTS[:1]
