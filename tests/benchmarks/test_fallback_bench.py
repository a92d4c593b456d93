"""The fallback benchmark without a model: its questions and gold programs, the comparison,
resuming from its results file and the page, with a **scripted** stand-in for the model (the
real-model figures are the benchmark's own, never a test threshold)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchmarks import fallback as bench
from benchmarks.fallback_data import cases, gold, questions, same_answer
from cadet_magic.llm import ScriptedModel


def test_the_questions_cover_both_engines_and_spider_with_a_tuning_third():
    qs = questions()
    assert len(qs) >= 40
    assert {q["kind"] for q in qs} >= {
        "statistic",
        "time_series",
        "pivot",
        "rank",
        "string",
        "date",
    }
    shop = [q for q in qs if q["db"] == "shop"]
    assert shop and all(q["engines"] == ["sqlite", "duckdb"] for q in shop)
    assert any(q["db"] != "shop" for q in qs)
    assert [q["set"] for q in qs[:6]] == ["tuning", "held_out", "held_out"] * 2
    assert {q["compare"] for q in qs} <= {"value", "rows", "rows_ordered"}


def test_every_shop_gold_program_runs():
    for q in questions():
        if q["db"] == "shop":
            assert gold(q) is not None, q["id"]


def test_every_spider_gold_program_runs(shared_data, monkeypatch):
    monkeypatch.setenv("CADET_DATA", str(shared_data))
    for q in questions():
        if q["db"] != "shop":
            assert gold(q) is not None, q["id"]


@pytest.mark.parametrize(
    ("columns", "rows", "question", "expected", "same"),
    [
        (["m"], [(132.98,)], {"compare": "value", "tolerance": 0.001}, 132.98000000000002, True),
        (["m"], [(133.5,)], {"compare": "value", "tolerance": 0.001}, 132.98, False),
        (["m"], [(1,), (2,)], {"compare": "value"}, 1, False),
        (["d"], [("example.com",)], {"compare": "value"}, "example.com", True),
        (
            ["y", "n"],
            [("2025", 3), ("2024", 2)],
            {"compare": "rows"},
            pd.DataFrame({"year": [2024, 2025], "n": [2, 3]}),
            True,
        ),
        (
            ["y", "n"],
            [("2025", 3), ("2024", 2)],
            {"compare": "rows_ordered"},
            pd.DataFrame({"year": [2024, 2025], "n": [2, 3]}),
            False,
        ),
        (
            ["n"],
            [(2,), (3,)],
            {"compare": "rows"},
            pd.DataFrame({"year": [2024, 2025], "n": [2, 3]}),
            False,
        ),
    ],
)
def test_an_answer_is_compared_by_the_questions_rule(columns, rows, question, expected, same):
    assert same_answer(columns, rows, question, expected) is same


def test_a_run_resumes_from_its_file_and_the_page_says_what_is_measured(tmp_path, monkeypatch):
    q = next(q for q in questions() if q["id"] == "shop-01")
    monkeypatch.setattr(bench, "RESULTS", tmp_path / "results.jsonl")
    sql = "```sql\nSELECT AVG(quantity * unit_price) AS median FROM order_items\n```"
    code = (
        "```python\nresult = df.assign(v=df['quantity'] * df['unit_price'])"
        ".groupby('order_id')['v'].sum().median()\n```"
    )
    replies = {q["question"]: [sql, code, sql]}
    monkeypatch.setattr(bench, "local_model", lambda: ScriptedModel(replies))
    assert bench.run(["sqlite"], ["on", "off"], "all", None, None, ["shop-01"]) == 2
    records = bench.read(bench.RESULTS)
    on, off = records[("shop-01", "sqlite", "on")], records[("shop-01", "sqlite", "off")]
    assert on["right"] and on["answered_by"] == "fallback"
    assert on["entered_because"] == "computation_missing"
    assert not off["right"] and off["answered_by"] == "sql"
    assert bench.run(["sqlite"], ["on", "off"], "all", None, None, ["shop-01"]) == 0  # resumed
    text = bench.body(records)
    assert "| sqlite | tuning | 1 |" in text and "Goals" in text
    assert json.loads(bench.RESULTS.read_text().splitlines()[0])["attempts"][0]["category"] == (
        "computation_missing"
    )


def test_cases_run_each_shop_question_on_both_engines():
    pairs = cases()
    assert ("shop-01", "duckdb") in {(q["id"], e) for q, e in pairs}
    assert all(e == "sqlite" for q, e in pairs if q["db"] != "shop")
