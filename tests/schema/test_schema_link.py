import json
from pathlib import Path

import pytest
from schema_helpers import schema_from

from cadet_magic.schema.link import link, link_schema, rank_tables, schema_context
from cadet_magic.schema.model import Column, Schema, Table
from cadet_magic.schema.render import render_schema

HERE = Path(__file__).parent
CATALOG = schema_from(json.loads((HERE / "link_catalog.json").read_text()))
CASES = json.loads((HERE / "link_cases.json").read_text())
BUDGET = 500  # about a third of the catalog's full text
BUDGETS = [0, 1, 10, 30, 60, 100, 200, 500, 1000, 1369, 1370, 10_000]


@pytest.mark.parametrize("case", CASES, ids=[c["question"][:40] for c in CASES])
def test_question_links_its_tables(case):
    ranked = [name for name, _ in rank_tables(CATALOG, case["question"])]
    if "top" in case:
        assert ranked[0] == case["top"]
    shown = link_schema(CATALOG, case["question"], budget=BUDGET).table_names()
    assert set(case["needs"]) <= set(shown), ranked[:5]


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("question", [c["question"] for c in CASES[:4]] + ["", "???"])
def test_text_never_exceeds_the_budget(question, budget):
    result = link(CATALOG, question, budget)
    assert len(result.text) <= budget
    assert result.text == schema_context(CATALOG, question, budget)
    shown = result.schema.table_names()
    assert set(shown) <= set(CATALOG.table_names())
    assert set(shown).isdisjoint(result.left_out)
    assert len(shown) + len(result.left_out) == len(CATALOG.tables)
    # The schema holds what the text shows: the text starts with its rendering.
    assert result.text.startswith(render_schema(result.schema))
    # Foreign keys point only to tables that are shown.
    names = {n.lower() for n in shown}
    for t in result.schema.tables:
        for fk in t.foreign_keys:
            assert fk.ref_table.lower() in names or f"{t.schema}.{fk.ref_table}".lower() in names


@pytest.mark.parametrize("budget", [1370, 5000, None])
def test_small_schema_is_sent_whole_and_unchanged(budget):
    assert len(render_schema(CATALOG)) == 1370
    assert link_schema(CATALOG, "anything at all", budget) is CATALOG
    assert schema_context(CATALOG, "anything at all", budget) == render_schema(CATALOG)


def test_one_character_less_links():
    result = link(CATALOG, "How many orders were cancelled?", 1369)
    assert result.left_out and len(result.text) <= 1369


def test_tables_keep_catalog_order_and_best_get_full_detail():
    result = link(CATALOG, "Which customers from France placed orders?", BUDGET)
    names = result.schema.table_names()
    assert names == [n for n in CATALOG.table_names() if n in names]
    customers = result.schema.table("shop.customers")
    assert customers == CATALOG.table("shop.customers")  # samples and types kept
    assert "'France'" in result.text


def test_deterministic():
    q = "Which products in the Garden category sold the most units?"
    assert {schema_context(CATALOG, q, b) for _ in range(3) for b in [BUDGET]} == {
        schema_context(CATALOG, q, BUDGET)
    }


def test_too_wide_table_shows_its_relevant_columns_and_keys():
    cols = tuple(Column(f"metric_{i}", "DOUBLE") for i in range(300))
    wide = Table(
        "events",
        (Column("event_id", "BIGINT", primary_key=True), *cols, Column("revenue", "DOUBLE")),
    )
    schema = Schema((wide, Table("users", (Column("id", "INT", primary_key=True),))))
    result = link(schema, "total revenue of events", 400)
    assert len(result.text) <= 400
    events = result.schema.table("events")
    assert {"event_id", "revenue"} <= set(events.column_names())
    assert "more columns not shown" in result.text


def test_empty_schema():
    assert schema_context(Schema(), "anything", 100) == ""
    assert link_schema(Schema(), "anything", 0).tables == ()
