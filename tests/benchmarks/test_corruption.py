"""Thresholds of the corruption benchmark, on a modest sample (the full run: BENCHMARKS.md)."""

from __future__ import annotations

import pytest

from benchmarks.corruption import (
    MAX_WORDS,
    TARGET_HITS,
    TARGET_KIND,
    TARGET_KIND_HITS,
    TARGET_OVERALL,
    figures,
    overall_figures,
    report,
    run_benchmark,
)
from benchmarks.corruption_mutate import REALISTIC
from tests.conftest import need_data

SAMPLE_DBS = ("concert_singer", "pets_1", "car_1", "employee_hire_evaluation")


def _assert_targets(result, engines, every_kind=True):
    for engine in engines:
        total = result.total(engine)
        assert total.errors > 50, (engine, total.errors)
        assert total.accuracy >= TARGET_OVERALL, report(result, engines)
        if total.hit_total:
            assert total.hit_rate >= TARGET_HITS, report(result, engines)
        for (eng, kind), cell in result.cells.items():
            if eng != engine:
                continue
            if cell.errors >= 10:
                assert cell.accuracy >= TARGET_KIND, (eng, kind, report(result, engines))
            if cell.hit_total >= 10:
                assert cell.hit_rate >= TARGET_KIND_HITS, (eng, kind, report(result, engines))
            assert max(cell.words, default=0) <= MAX_WORDS, (eng, kind, report(result, engines))
    # every realistic mistake was exercised and rejected by the engines (on the larger sample)
    for kind in REALISTIC if every_kind else ():
        assert sum(c.errors for (e, k), c in result.cells.items() if k == kind) > 0, kind


def test_sample_duckdb_sqlite():
    need_data()
    engines = ("duckdb", "sqlite")
    result = run_benchmark(pg_url=None, engines=engines, dbs=SAMPLE_DBS, limit=25)
    _assert_targets(result, engines)
    # SQLite accepts text/number comparisons and x/0 silently: counted apart, not as errors
    assert result.cells[("sqlite", "text_vs_number")].errors == 0
    assert result.cells[("sqlite", "text_vs_number")].silent > 0
    # the rows of BENCHMARKS.md hold the same budgets
    rows = figures(result, engines, "DuckDB, SQLite", "python -m benchmarks.corruption")
    assert [r.met for r in rows] == [True, True, True]
    assert all(r.command == "python -m benchmarks.corruption" for r in rows)
    assert [r.met for r in overall_figures(result, "DuckDB, SQLite", "cmd")] == [True, True]


@pytest.mark.postgres
def test_sample_postgres(pg_url):
    need_data()
    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    result = run_benchmark(pg_url=url, engines=("postgresql",), dbs=SAMPLE_DBS[:2], limit=20)
    _assert_targets(result, ("postgresql",), every_kind=False)
