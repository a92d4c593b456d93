"""Signs of a wrong answer that ran, table-driven from ``data/sign_cases.json`` on real SQLite
(the ties probe runs through the same connection)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks.signs import SIGNS, signs

DATA = json.loads((Path(__file__).parent / "data" / "sign_cases.json").read_text())


@pytest.fixture(scope="module")
def con():
    c = sqlite3.connect(":memory:")
    for s in DATA["setup"]:
        c.execute(s)
    return c


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["id"] for c in DATA["cases"]])
def test_signs(case, con):
    rows = con.execute(case["sql"]).fetchall()
    got = signs(case["question"], case["sql"], rows, "sqlite", lambda q: con.execute(q).fetchall())
    assert got == case["signs"]
    assert set(got) <= set(SIGNS)


def test_unreadable_sql_and_a_failing_probe_claim_nothing():
    def broken(sql):
        raise sqlite3.OperationalError("no")

    assert signs("Who?", "SELECT FROM WHERE (", [("a",)]) == []
    assert signs("Who?", "SELECT a FROM t ORDER BY a LIMIT 1", [("a",)], "sqlite", broken) == []
