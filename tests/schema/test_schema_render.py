import json
from pathlib import Path

import pytest
from schema_helpers import table_from

from cadet_magic.schema.render import COMPACT, REPRESENTATION, render_schema, render_table
from cadet_magic.schema.structure import Schema

# The compact form's cases (the prompt's own form, REPRESENTATION, has its cases in
# representation_cases.json).

CASES = json.loads((Path(__file__).parent / "render_cases.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_render_table(case):
    assert (
        render_table(table_from(case["table"]), case.get("detail", 0), None, COMPACT)
        == case["text"]
    )


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_rendered_text_cannot_break_the_fence(case):
    for rep in (COMPACT, REPRESENTATION):
        text = render_table(table_from(case["table"]), case.get("detail", 0), None, rep).lower()
        assert "</schema" not in text and "<schema" not in text and "```" not in text


def test_schema_is_tables_in_catalog_order():
    s = Schema.from_mapping({"b": ["x"], "a": ["y"]})
    assert render_schema(s, COMPACT) == "b(x)\na(y)"
    assert render_schema(Schema()) == ""
