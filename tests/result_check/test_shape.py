"""Answers whose shape contradicts the question (:mod:`cadet_magic.result_check.shape`),
table-driven from ``data/shape_cases.json``: the question, the query's tree and its rows in,
the signs out (no database, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlglot

from cadet_magic.result_check.shape import SHAPE_SIGNS, WARNINGS, findings, shape_signs

CASES = json.loads((Path(__file__).parent / "data" / "shape_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_shape_signs(case):
    tree = sqlglot.parse_one(case["sql"])
    rows = [tuple(r) for r in case["rows"]]
    got = shape_signs(case["question"], tree, rows)
    assert list(got) == case["signs"]
    assert set(got) <= set(SHAPE_SIGNS)


def test_every_sign_says_what_it_saw():
    q = "What is the revenue per product category, highest first?"
    tree = sqlglot.parse_one("SELECT c, SUM(x) FROM t GROUP BY c ORDER BY 2 LIMIT 1")
    said = dict(findings(q, tree, [("a", 1.0)]))
    assert "LIMIT 1" in said["unasked_limit"]
    assert set(WARNINGS) == set(SHAPE_SIGNS)


def test_no_tree_no_sign():
    assert shape_signs("List every name in order.", None, [("a",), ("b",)]) == ()
