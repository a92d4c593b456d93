"""Readings: what each answer of a vote without a clear lead computes, in a few words, derived
from how its SQL differs from the others' on the syntax tree; table-driven from
``data/readings_cases.json`` (SQL -> each one's summary)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.sql.dialect import dialect_of
from cadet_magic.vote.readings import MAX_PARTS, OTHER, PREVIEW_ROWS, readings, shape, summaries

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "readings_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_summary_words(case):
    assert list(summaries(case["sql"])) == case["summaries"]


def test_a_summary_names_a_few_aspects_at_most():
    many = summaries(
        [
            "SELECT DISTINCT g, sum(x) AS s FROM t JOIN u ON t.id = u.id WHERE y = 1 GROUP BY g "
            "ORDER BY s DESC LIMIT 1",
            "SELECT x FROM t",
        ]
    )
    assert all(s.count(";") <= MAX_PARTS - 1 for s in many)
    assert many[0].startswith("top 1; where y = 1; per g")


def test_dialect_is_read_once_for_every_query():
    found = summaries(
        ['SELECT "name" FROM t LIMIT 2', 'SELECT "name" FROM t'], dialect=dialect_of("duckdb")
    )
    assert found == ("first 2 rows", "all rows")
    assert shape("SELECT TOP 3 a FROM t ORDER BY a", dialect_of("tsql")).limit == "3"


def test_unreadable_sql_has_no_shape():
    assert shape("SELECT FROM WHERE (") is None
    assert summaries(["SELECT FROM WHERE (", "SELECT 1"]) == (OTHER, OTHER)


def test_readings_keep_votes_preview_and_every_row():
    rows = tuple((i,) for i in range(PREVIEW_ROWS + 2))
    lead = ("SELECT x FROM t", 3, ("x",), rows, False, ("a warning",))
    other = ("SELECT x FROM t LIMIT 1", 2, ("x",), ((0,),), False, ())
    first, second = readings([lead, other])
    assert (first.votes, first.summary, first.preview) == (3, "all rows", rows[:PREVIEW_ROWS])
    assert first.rows == rows and first.more and first.warnings == ("a warning",)
    assert (second.summary, second.more) == ("first row", False)
