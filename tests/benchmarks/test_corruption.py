"""Thresholds of the corruption benchmark, on a modest sample (the full run: BENCHMARKS.md)."""

from __future__ import annotations

import pytest

from benchmarks.corruption import (
    TARGET_CATEGORY,
    TARGET_HITS,
    TARGET_OVERALL,
    report,
    run_benchmark,
)
from benchmarks.corruption_data import SPIDER
from tests.conftest import need

SAMPLE_DBS = ("concert_singer", "pets_1", "car_1", "employee_hire_evaluation")


def _assert_targets(result, engines):
    for engine in engines:
        total = result.total(engine)
        assert total.errors > 50, (engine, total.errors)
        assert total.accuracy >= TARGET_OVERALL, report(result, engines)
        if total.hit_total:
            assert total.hit_rate >= TARGET_HITS, report(result, engines)
        for (eng, cat), cell in result.cells.items():
            if eng == engine and cell.errors >= 10:
                assert cell.accuracy >= TARGET_CATEGORY, (eng, cat, report(result, engines))


def test_sample_duckdb_sqlite():
    need(SPIDER.is_dir(), f"Spider data not found at {SPIDER}")
    engines = ("duckdb", "sqlite")
    result = run_benchmark(pg_url=None, engines=engines, dbs=SAMPLE_DBS, limit=25)
    _assert_targets(result, engines)
    # SQLite accepts text/number comparisons and x/0 silently: counted apart, not as errors
    assert result.cells[("sqlite", "type_mismatch")].errors == 0
    assert result.cells[("sqlite", "type_mismatch")].silent > 0


@pytest.mark.postgres
def test_sample_postgres(pg_url):
    need(SPIDER.is_dir(), f"Spider data not found at {SPIDER}")
    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    result = run_benchmark(pg_url=url, engines=("postgresql",), dbs=SAMPLE_DBS[:2], limit=20)
    _assert_targets(result, ("postgresql",))
