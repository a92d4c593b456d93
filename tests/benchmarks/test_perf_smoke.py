"""Every performance benchmark runs end to end at tiny sizes (speed is measured, not asserted)."""

from __future__ import annotations

import pytest

from benchmarks import perf
from tests.conftest import need_data


@pytest.fixture(scope="module")
def spider():
    need_data()


def _check(measures):
    assert measures and all(m.name and m.ours and m.target for m in measures)
    assert "| measure |" in perf.render(measures, 0.0)


def test_agent_overhead(spider):
    m = perf.agent_overhead(5, reps=1)
    _check([m])
    assert "µs" in m.ours and m.ratio.endswith("x")


def test_fetch_first_rows():
    measures = perf.fetch_first_rows((2000, 5000), reps=2)
    _check(measures)
    assert len(measures) == 6 and any(m.name.startswith("flatness") for m in measures)


def test_cancellation(pg_url):
    measures = perf.cancellation(0.2, reps=1, pg_url=pg_url)
    _check(measures)
    assert {m.name.split("(")[-1].rstrip(")") for m in measures} == {"duckdb", "sqlite", "postgres"}
    assert all("no timeout" not in m.ours for m in measures)  # each engine was stopped


def test_load_ext():
    _check(perf.load_ext(1))


def test_large_catalog():
    measures = perf.large_catalog(25, reps=1)
    _check(measures)
    assert len(measures) == 2


def test_large_catalog_per_representation_gives_its_row():
    from benchmarks import large_catalog

    text, (figure,) = large_catalog.by_representation(["compact-columns"], 25, reps=1)
    assert "`compact-columns`" in text
    assert figure.met and figure.value.startswith("2/2 questions")


def test_model_calls(spider):
    m = perf.model_calls(4)
    _check([m])
    assert m.met  # the scripted gold SQL answers on the first call


def test_linking_recall(spider):
    _check([perf.linking_recall()])


def test_machine_details():
    assert "cores" in perf.machine_details()


def test_fetch_first_rows_pg(pg_url):
    measures = perf.fetch_first_rows_pg(pg_url, (1500, 3000), reps=1)
    _check(measures)
    assert len(measures) == 2


def test_fallback_isolation():
    from benchmarks import isolation

    measures = isolation.measures(sessions=1, reps=2)
    _check(measures)
    assert len(measures) == 3 and all(m.ours.startswith("+") or "ms" in m.ours for m in measures)
