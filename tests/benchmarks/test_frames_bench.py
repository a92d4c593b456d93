"""benchmarks/frames.py's report and row from made-up measurements (the real run builds a
5,000,000-row frame in two fresh processes)."""

from __future__ import annotations

from benchmarks.frames import BUDGET, figures, report


def result(engine: str, after: float) -> dict:
    return {"engine": engine, "rows": 1000, "frame_mb": 100.0, "before_mb": 300.0,
            "after_mb": after, "seconds": 2.0}  # fmt: skip


def test_report_and_row():
    results = [result("duckdb", 305.0), result("sqlite", 410.0)]
    text = report(results, [0.4, 2.0])
    assert "| duckdb (in place) | 100 MB | +5 MB | 0.05x | 2.0 s |" in text
    assert "| sqlite (the copy JupyterLite makes) | 100 MB | +110 MB | 1.10x | 2.0 s |" in text
    assert "Taken under load" in text and "Taken under load" not in report(results, [0.3])
    (row,) = figures(results)
    assert row.met and row.value.startswith("0.05x the frame (5 MB of 100 MB)")
    (copied,) = figures([result("duckdb", 300.0 + 100 * (BUDGET + 0.1))])
    assert not copied.met
