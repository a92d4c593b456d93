import json
from pathlib import Path

import pytest
from schema_helpers import schema_from

from cadet_magic.schema.link import link, link_schema, rank_tables, schema_context
from cadet_magic.schema.render import COMPACT, prompt_representation, render_schema
from cadet_magic.schema.structure import Column, Schema, Table

HERE = Path(__file__).parent
CATALOG = schema_from(json.loads((HERE / "link_catalog.json").read_text()))
CASES = json.loads((HERE / "link_cases.json").read_text())
BUDGET = 500  # about a third of the catalog's full text
BUDGETS = [0, 1, 10, 30, 60, 100, 200, 500, 1000, 1369, 1370, 10_000]
#: The compact form (the figures above are its lengths) and the form the prompt is written in.
FORMS = [COMPACT, prompt_representation()]


@pytest.mark.parametrize("case", CASES, ids=[c["question"][:40] for c in CASES])
def test_question_links_its_tables(case):
    ranked = [name for name, _ in rank_tables(CATALOG, case["question"])]
    if "top" in case:
        assert ranked[0] == case["top"]
    shown = link_schema(CATALOG, case["question"], budget=BUDGET).table_names()
    assert set(case["needs"]) <= set(shown), ranked[:5]


@pytest.mark.parametrize("rep", FORMS, ids=lambda r: r.name)
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("question", [c["question"] for c in CASES[:4]] + ["", "???"])
def test_text_never_exceeds_the_budget(question, budget, rep):
    result = link(CATALOG, question, budget, rep)
    assert len(result.text) <= budget
    assert result.text == link(CATALOG, question, budget, rep).text  # deterministic
    shown = result.schema.table_names()
    assert set(shown) <= set(CATALOG.table_names())
    assert set(shown).isdisjoint(result.left_out)
    assert len(shown) + len(result.left_out) == len(CATALOG.tables)
    # The schema holds what the text shows: the text starts with its rendering.
    assert result.text.startswith(render_schema(result.schema, rep))
    # Foreign keys point only to tables that are shown.
    names = {n.lower() for n in shown}
    for t in result.schema.tables:
        for fk in t.foreign_keys:
            assert fk.ref_table.lower() in names or f"{t.schema}.{fk.ref_table}".lower() in names


@pytest.mark.parametrize("budget", [1370, 5000, None])
def test_small_schema_is_sent_whole_and_unchanged(budget):
    assert len(render_schema(CATALOG, COMPACT)) == 1370
    result = link(CATALOG, "anything at all", budget, COMPACT)
    assert result.schema is CATALOG and result.text == render_schema(CATALOG, COMPACT)


def test_one_character_less_links():
    result = link(CATALOG, "How many orders were cancelled?", 1369, COMPACT)
    assert result.left_out and len(result.text) <= 1369


def test_tables_keep_catalog_order_and_best_get_full_detail():
    result = link(CATALOG, "Which customers from France placed orders?", BUDGET, COMPACT)
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


@pytest.mark.parametrize("rep", FORMS, ids=lambda r: r.name)
def test_too_wide_table_shows_its_relevant_columns_and_keys(rep):
    cols = tuple(Column(f"metric_{i}", "DOUBLE") for i in range(300))
    wide = Table(
        "events",
        (Column("event_id", "BIGINT", primary_key=True), *cols, Column("revenue", "DOUBLE")),
    )
    schema = Schema((wide, Table("users", (Column("id", "INT", primary_key=True),))))
    result = link(schema, "total revenue of events", 400, rep)
    assert len(result.text) <= 400
    events = result.schema.table("events")
    assert {"event_id", "revenue"} <= set(events.column_names())
    assert "more columns not shown" in result.text


def test_empty_schema():
    assert schema_context(Schema(), "anything", 100) == ""
    assert link_schema(Schema(), "anything", 0).tables == ()
