"""The vote's before/after report (``python -m benchmarks.vote_report``) on results folders
written here (no model): paired accuracy, the warnings' shares of wrong and right answers, the
seconds, and each goal met or not."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import vote_report


def folder(path: Path, lines: list[tuple[bool, bool, float]]) -> Path:
    """A results folder: per question (right, warned, seconds), in targeted mode."""
    path.mkdir(parents=True)
    recs = [
        {"db_id": "d", "question": f"q{i}", "gold": "g", "final_sql": "S", "final_match": right,
         "first_match": right, "warnings": ["w"] if warned else [], "calls": 1,
         "seconds": seconds, "fallback": False,
         "agreement": [1, 2] if warned else [2, 2], "candidates": [{"model_seconds": 1.0}]}
        for i, (right, warned, seconds) in enumerate(lines)
    ]  # fmt: skip
    (path / "spider.targeted.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_the_goals_from_the_two_folders(tmp_path):
    before = folder(tmp_path / "before", [(False, False, 2.0)] * 10 + [(True, False, 2.0)] * 10)
    after = folder(
        tmp_path / "after",
        [(True, False, 3.0)] * 8 + [(False, True, 3.0)] * 2 + [(True, False, 3.0)] * 10,
    )
    text = vote_report.report(before, after, with_peers=False)
    assert "| final answer right | 10/20 (50%" in text and "18/20 (90%" in text
    assert "| wrong answers with a warning | 0/10 (0%" in text and "2/2 (100%" in text
    assert "carry a warning: 2/2 (100%, 34%-100%): **met**" in text
    assert "At most 15% of the right answers do: 0/18 (0%, 0%-18%): **met**" in text
    assert "+40.0 pts [" in text and "p=0.008: **met**" in text
    assert "2.0 -> 3.0 s: **met**" in text
    assert "| wrong answers not every candidate gave (another answer, or none) | 0/10 (0%" in text
    assert "| candidates drawn beside the answer (mean) | 1.00 | 1.00 |" in text


def test_nothing_to_compare_yet(tmp_path):
    before = folder(tmp_path / "before", [(True, False, 1.0)])
    (tmp_path / "after").mkdir()
    text = vote_report.report(before, tmp_path / "after", with_peers=False)
    assert "No targeted-mode questions on both sides yet." in text


def test_the_vote_against_the_sql_phase_within_the_run_after(tmp_path):
    before = folder(tmp_path / "before", [(False, False, 2.0)] * 4)
    after = folder(tmp_path / "after", [(True, False, 3.0)] * 3 + [(False, True, 3.0)])
    path = after / "spider.targeted.jsonl"
    lines = [json.loads(x) | {"sql_match": False} for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    text = vote_report.report(before, after, with_peers=False)
    assert "the SQL phase's own answer before it (no fallback): +75.0 pts [" in text
    assert "+3/-0" in text


def test_the_seconds_goal_measured_side_by_side_where_vote_seconds_ran(tmp_path):
    before = folder(tmp_path / "before", [(True, False, 2.0)] * 4)
    after = folder(tmp_path / "after", [(True, False, 2.0)] * 4)
    measured = tmp_path / "seconds"
    folder(measured / "one", [(True, False, 2.0)] * 3)
    folder(measured / "vote", [(True, False, 5.0)] * 3)
    text = vote_report.report(before, after, with_peers=False, seconds_dir=measured)
    assert "the first 3 questions of the sample" in text
    assert "2.0 -> 5.0 s (2.50x): **not met**" in text
    assert "as that run took them: 2.0 -> 3.0 s)." in text  # the runs' own, beside it
    assert vote_report.measured_seconds(tmp_path / "nowhere") is None
