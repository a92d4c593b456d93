"""Thresholds of the result-check benchmark on a sample of Spider dev (the full run, per
engine with timings: BENCHMARKS.md)."""

from __future__ import annotations

import random

import pytest

from benchmarks.literal_check import (
    TARGET_FOUND,
    change_case,
    change_spacing,
    change_spelling,
    figures,
    report,
    run_benchmark,
)
from tests.conftest import need_data

#: world_1 (large city and language tables: the spelling search must bound its scan),
#: flight_2 (stored values with spaces around them: gold literals really absent), car_1.
SAMPLE_DBS = ("world_1", "flight_2", "car_1")


def _assert_targets(result, engines):
    for engine in engines:
        s = result.engines[engine]
        targets = sum(s.mutants.values())
        assert targets > 30, (engine, targets)
        assert sum(s.found.values()) / targets >= TARGET_FOUND, report(result)
        assert s.gold_false_alarm == 0, (s.alarms, report(result))
        assert s.gold_absent > 0  # flight_2's gold queries filter on values stored with spaces


def test_sample_duckdb_sqlite():
    need_data()
    engines = ("duckdb", "sqlite")
    result = run_benchmark(pg_url=None, engines=engines, dbs=SAMPLE_DBS, limit=30)
    _assert_targets(result, engines)
    found, alarms, _ = figures(result)  # the rows of BENCHMARKS.md say the same
    assert found.met and alarms.met and alarms.value == "0"


@pytest.mark.postgres
def test_sample_postgres(pg_url):
    need_data()
    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    result = run_benchmark(pg_url=url, engines=("postgresql",), dbs=SAMPLE_DBS, limit=30)
    _assert_targets(result, ("postgresql",))


@pytest.mark.parametrize(
    ("change", "value"),
    [(change_case, "France"), (change_spacing, "%East%"), (change_spelling, "Germany")],
)
def test_changes_change_the_value(change, value):
    for seed in range(20):
        new = change(value, random.Random(seed))
        assert new is not None and new != value
        if change is change_spacing:
            assert new.strip("%").strip() == value.strip("%")
