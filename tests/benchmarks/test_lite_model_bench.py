"""benchmarks/lite_model.py's report, on made-up runs (no browser, no model): every figure the
issue asks for has its row, the ratio is the page's median question over the CPython kernel's,
and a run on a busy machine is marked."""

from __future__ import annotations

from benchmarks import lite_model


def _page(cell: float, threads: int) -> dict:
    return {
        "cold": {"fetch": 20.0, "load": 30.0, "label": f"browser: Qwen, {threads} threads"},
        "warm": {"fetch": 0.5, "load": 25.0},
        "parts_fetched": 12,
        "warm_parts_fetched": 0,
        "channel": {"relay_ms": 12.0, "static_ms": 3.0},
        "pss_before": 0.6e9,
        "pss_loaded": 2.1e9,
        "pss_after": 2.2e9,
        "questions": [_q(cell * k) for k in (1, 2, 3)],
    }


def _q(seconds: float) -> dict:
    return {
        "question": f"q{seconds:g}",
        "cell": seconds,
        "ok": True,
        "model_seconds": seconds - 1,
        "calls": 1,
        "input": 900,
        "output": 30,
    }


def test_report_rows():
    setups = {"several threads": _page(20.0, 2), "one thread": _page(30.0, 1)}
    cpy = {"cold": {"seconds": 1.5}, "rss": 1.4e9, "questions": [_q(k * 10.0) for k in (1, 2, 3)]}
    text = lite_model.render(setups, cpy, [0.4, 1.2], [0.1, 0.2])
    for row in (
        "model load, cold: fetched into the browser + loaded (s) | 20.0 + 30.0 (12 parts fetched)",
        "model load, warm: read from the browser's copy + loaded (s) | 0.5 + 25.0 (0 parts",
        "seconds per question, median | 40.0 (n = 3) | 60.0 (n = 3) | 20.0 (n = 3)",
        "median question, page / CPython (on the questions the page ran) | 2.0x | 3.0x | 1x",
        "answered (of the questions) | 3/3 | 3/3 | 3/3",
        "0.60 GB / 2.10 GB / 2.20 GB",
        "kernel RSS 1.40 GB",
        "| 12 / 3 | 12 / 3 |",
    ):
        assert row in text, row
    assert "browser: Qwen, 2 threads" in text and "browser: Qwen, 1 threads" in text
    assert (
        "met with several threads (2.0x, n = 3 questions); met with one thread (3.0x, n = 3" in text
    )
    assert "@wllama/wllama 3.13.0" in text


def test_report_only_from_the_saved_runs_marks_a_busy_machine(tmp_path, monkeypatch, capsys):
    """``--report-only`` writes the figures of the last run again; a run whose parts started
    at a load above the limit is marked, and a quiet machine's figure is said to be owed."""
    import argparse
    import json

    setups = {"several threads": _page(20.0, 2), "one thread": _page(40.0, 1)}
    del setups["one thread"]["questions"][2:]  # a setup stopped after two questions
    for s in setups.values():
        s.update(load_avg=[3.5, 2.0], others=[1.2, 0.8])
    cpy = {"cold": {"seconds": 1.5}, "rss": 1.4e9, "questions": [_q(k * 10.0) for k in (1, 2, 3)]}
    cpy.update(load_avg=[3.0], others=[1.0])
    (tmp_path / "model-runs.json").write_text(json.dumps({"page": setups, "cpython": cpy}))
    monkeypatch.setattr(lite_model, "WORK", tmp_path)
    args = argparse.Namespace(report_only=True, no_write=True, max_load=1.5, max_others=0.5)
    lite_model.main(args)
    out = capsys.readouterr().out
    assert out.startswith("**Taken under load** (a visit started at load 3.5 > 1.5;")
    # against the CPython kernel's median on the same two questions (15 s): 60 / 15
    assert (
        "met with several threads (2.0x, n = 3 questions); not met with one thread (4.0x, n = 2"
        in out
    )
    assert "| q30 | 60.0 (1) | not run | 30.0 (1) |" in out
    assert "a figure on a quiet machine is still owed" in out
