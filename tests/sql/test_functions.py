"""The function allow-list decision (portable core): catalogs given as data, table-driven."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.sql.functions import FunctionCatalog, catalog_refusal, never_reason
from cadet_magic.sql.validate import validate_sql

DATA = json.loads((Path(__file__).with_name("function_cases.json")).read_text())
BUILD = {
    "postgres": FunctionCatalog.from_postgres,
    "duckdb": FunctionCatalog.from_duckdb,
    "sqlite": FunctionCatalog.from_sqlite,
}
CATALOGS = {engine: BUILD[engine](rows) for engine, rows in DATA["catalogs"].items()}


@pytest.mark.parametrize("engine", sorted(CATALOGS))
def test_allowed_names(engine: str) -> None:
    assert sorted(CATALOGS[engine].allowed) == DATA["allowed"][engine]


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: f"{c['dialect']}:{c['sql'][:50]}")
def test_case(case: dict) -> None:
    v = validate_sql(case["sql"], case["dialect"], None, CATALOGS[case["dialect"]])
    if case.get("ok"):
        assert v.ok, v.issues
        return
    assert not v.ok
    assert v.issues[0].code == case["code"], v.issues
    for fragment in case["message_has"]:
        assert fragment in v.issues[0].message, v.issues[0].message


def test_without_a_catalog_the_fixed_rules_alone_apply() -> None:
    assert validate_sql("SELECT my_volatile(x) FROM t", "postgres").ok
    assert not validate_sql("SELECT nextval('s')", "postgres").ok


def test_never_listed_names_are_never_allowed_even_if_the_engine_says_stable() -> None:
    stable = [(n, "s", "f") for n in ("current_setting", "table_to_xml", "pg_relation_filepath")]
    cat = FunctionCatalog.from_postgres(stable)
    assert cat.allowed == frozenset()
    for name, *_ in stable:
        assert never_reason(name) is not None
        assert catalog_refusal(name, cat) is not None
