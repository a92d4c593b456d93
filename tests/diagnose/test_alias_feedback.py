"""A missing column's feedback in the query's own names (table-driven from
``data/real_alias_mistakes.json``, real replies of the local model on SQLite): the qualifier's
table and its exact columns, the suggestions written with the query's aliases; and the
feedback for a query the model writes again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.diagnose import diagnose
from cadet_magic.diagnose.repeat import repeated

DATA = json.loads((Path(__file__).parent / "data" / "real_alias_mistakes.json").read_text())


@pytest.fixture(scope="module")
def runner():
    con = sqlite3.connect(":memory:")
    for s in DATA["setup"]:
        con.execute(s)
    return SQLiteRunner(con)


def failure(runner, sql):
    with pytest.raises(Exception) as info:
        runner.run(sql, limit=10, timeout=5, max_bytes=10**6)
    return diagnose(info.value, sql=sql, target="sqlite", schema=runner.schema())


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["id"] for c in DATA["cases"]])
def test_alias_feedback(case, runner):
    d = failure(runner, case["sql"])
    assert d.category.value == case["category"]
    for text in case["feedback"]:
        assert text in d.feedback
    for text in case.get("absent", []):
        assert text not in d.feedback


@pytest.mark.parametrize("last", [True, False])
def test_a_repeated_query_is_named_and_its_tables_listed(runner, last):
    case = DATA["cases"][0]
    d = repeated(failure(runner, case["sql"]), case["sql"], 1, last=last, schema=runner.schema())
    assert d.details.repeats == 1 and d.category.value == "column_not_found"
    assert ("again" if last else "went back") in d.feedback
    assert "singer: Singer_ID, Name, Country, Song_Name, Song_release_year, Age" in d.feedback
    assert "singer_in_concert: concert_ID, Singer_ID" in d.feedback
