"""benchmarks.readings: the reference run replayed with readings on (no model), a trial of its
first questions printed without writing the page; and its rows and goals on results lines."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import readings as bench
from benchmarks.report import Stamp
from cadet_magic.eval.figures import figures

SCORING = json.loads(
    (Path(__file__).parents[1] / "eval" / "data" / "readings_scoring.json").read_text()
)


def test_a_trial_replays_and_prints_without_writing(shared_data, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CADET_DATA", str(shared_data))
    page = bench.write_page
    monkeypatch.setattr(bench, "write_page", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    assert bench.main(["--limit", "8", "--out", str(tmp_path / "replay")]) == 0
    out = capsys.readouterr().out
    assert "The replay reproduces the recorded run: 8 of 8 final answers" in out
    assert "| questions that ask |" in out and "right after choosing" in out
    assert (tmp_path / "replay" / "results.targeted.jsonl").is_file()
    monkeypatch.setattr(bench, "write_page", page)


def test_rows_say_whether_each_goal_is_met():
    lines = [{"error": None, "attempts": [], "question": x["why"], **x} for x in SCORING["lines"]]
    f = figures(lines)
    rows = bench.rows(f, Stamp("2026-12-02", "abc1234", "0.5"))
    met = {r.figure.split(": ", 1)[-1]: r.met for r in rows}
    assert met["questions that ask which reading was meant"] is False  # 3 of 8
    assert met["right answers that warn or ask"] is False  # 1 of 3
    assert rows[0].value == "1/8 (12.5%)" and not rows[0].met
    text = bench.body(f, f, lines, [1.0], 8)
    assert "## Where a goal is not met, and why" in text and "Silent wrong answers" in text
