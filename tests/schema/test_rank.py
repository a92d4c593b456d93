"""Ranking alone (schema/rank.py): the question's tables first, from the same catalog and cases
as the linking tests; packing is tested in test_schema_link.py."""

import json
from pathlib import Path

import pytest
from schema_helpers import schema_from

from cadet_magic.schema import link
from cadet_magic.schema.rank import SchemaIndex, index_for, rank_tables
from cadet_magic.schema.structure import Schema

HERE = Path(__file__).parent
CATALOG = schema_from(json.loads((HERE / "link_catalog.json").read_text()))
CASES = [c for c in json.loads((HERE / "link_cases.json").read_text()) if "top" in c]


@pytest.mark.parametrize("case", CASES, ids=[c["question"][:40] for c in CASES])
def test_the_named_table_ranks_first(case):
    assert rank_tables(CATALOG, case["question"])[0][0] == case["top"]


def test_every_table_is_ranked_once_best_first():
    ranked = rank_tables(CATALOG, "How many orders per customer?")
    assert sorted(n for n, _ in ranked) == sorted(t.name for t in CATALOG.tables)
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True)


def test_the_index_is_cached_per_schema_and_keeps_the_packers_memo():
    s = Schema.from_mapping({"t": ["a"]})
    idx = index_for(s)
    assert isinstance(idx, SchemaIndex) and index_for(s) is idx
    link.link_schema(s, "a?", budget=1)
    assert idx.layout  # the packer memoized its renderings on the index
    assert link.rank_tables is rank_tables and link.index_for is index_for  # still importable
