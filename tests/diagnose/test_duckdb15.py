"""DuckDB 1.5 formats, from messages recorded on the real 1.5.0 engine (see the data file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.db.driver_errors import diagnose_error

HERE = Path(__file__).parent / "data"
SCHEMA = json.loads((HERE / "engine_cases.json").read_text())["schema"]
RECORDED = json.loads((HERE / "duckdb15_messages.json").read_text())["cases"]


class BinderException(Exception):  # same class names as duckdb 1.5's, no import needed
    pass


class CatalogException(Exception):
    pass


class ParserException(Exception):
    pass


class ConversionException(Exception):
    pass


CLASSES = {
    c.__name__: c for c in (BinderException, CatalogException, ParserException, ConversionException)
}


@pytest.mark.parametrize("case", RECORDED, ids=[c["id"] for c in RECORDED])
def test_recorded_duckdb15(case):
    for error in (CLASSES[case["class"]](case["message"]), case["message"]):
        d = diagnose_error(error, engine="duckdb", sql=case["sql"], schema=SCHEMA)
        assert d.category.value == case["expect"], case["message"]
        if case["suggestion"]:
            assert case["suggestion"] in d.suggestions[:3]


def test_ambiguous_candidates_in_double_quotes():
    msg = next(c["message"] for c in RECORDED if c["id"] == "join")
    sql = "SELECT customer_id FROM orders JOIN customers ON 1=1"
    d = diagnose_error(msg, engine="duckdb", sql=sql, schema=SCHEMA)
    assert d.suggestions[:2] == ["orders.customer_id", "customers.customer_id"]
