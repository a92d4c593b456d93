"""benchmarks/local_memory.py's report from made-up measurements (the real run needs the model)."""

from __future__ import annotations

from benchmarks.local_memory import report


def row(n_ctx: int, repack: bool, anon: int) -> dict:
    runs = [{"seconds": 4.0, "model_seconds": 2.0, "input_tokens": 500, "output_tokens": 20}]
    return {"n_ctx": n_ctx, "repack": repack, "load": 1.5, "runs": runs, "VmHWM": 1100 + anon,
            "RssAnon": anon, "RssFile": 1080}  # fmt: skip


def test_report_rows_and_load():
    text = report([row(8192, True, 900), row(4096, False, 250)], ["0.50", "2.00"])
    assert "| 8192 | yes | 2000 MB | 900 MB | 1080 MB | 1.5 s | 4.0 s | 250 |" in text
    assert "| 4096 | no | 1350 MB | 250 MB |" in text
    assert "Taken under load" in text
    assert "Taken under load" not in report([row(2048, False, 200)], ["0.3", "1.0"])
