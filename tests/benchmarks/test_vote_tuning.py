"""The vote's tuning report (``python -m benchmarks.vote_tuning``) on results folders written
here (no model; scripted lines): which prompt the candidates answer and whether the warning on
an unconfirmed correction is shown, each by the rule written before the figures."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import vote_seconds, vote_tuning


def line(i: int, right: bool, corrected: bool, confirmed: bool) -> dict:
    """A scripted targeted-mode line: an answer found at once or after a correction, given by
    another candidate too or by none."""
    return {
        "db_id": "d", "question": f"q{i}", "gold": "g", "final_sql": "S", "final_match": right,
        "fallback": False, "warnings": [], "seconds": 1.0,
        "attempts": [{"outcome": "error"}, {"outcome": "ok"}] if corrected else [{"outcome": "ok"}],
        "agreement": [2, 2] if confirmed else [1, 2],
        "candidates": [{"outcome": "ok" if confirmed else "error"}],
    }  # fmt: skip


def folder(path: Path, lines: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "spider.targeted.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_the_answers_prompt_and_the_warning_chosen_by_the_rule(tmp_path):
    right = [line(i, True, False, True) for i in range(20)]
    unconfirmed_wrong = [line(20 + i, False, True, False) for i in range(6)]
    first = folder(tmp_path / "first", right + unconfirmed_wrong)
    answer = folder(
        tmp_path / "answer", right + unconfirmed_wrong[:5] + [line(25, True, True, True)]
    )
    text = vote_tuning.report(first, answer)
    assert "| final answer right | 20/26 (77%" in text and "21/26 (81%" in text
    assert "| wrong answers warned, with it | 6/6 (100%" in text
    assert "candidates answer the answer's prompt (paired difference +3.8 pts, >= 0)" in text
    assert "is shown: 5 of the 5 it fires on wrong (100%, >= 50%)" in text


def test_the_warning_that_fires_on_too_few_is_not_shown(tmp_path):
    lines = [line(i, True, False, True) for i in range(10)] + [line(10, False, True, False)]
    text = vote_tuning.report(folder(tmp_path / "a", lines), folder(tmp_path / "b", lines))
    assert "is not shown: fires on 1 answers (< 5)" in text
    assert "No tuning question" in vote_tuning.report(tmp_path / "x", tmp_path / "y")


def test_vote_seconds_reads_the_median_of_each_pass(tmp_path):
    recs = [line(i, True, False, True) | {"seconds": s} for i, s in enumerate((1.0, 3.0, 8.0))]
    folder(tmp_path / "one", recs)
    assert vote_seconds.median_seconds(tmp_path / "one") == (3.0, 3)
    assert vote_seconds.median_seconds(tmp_path / "vote") == (None, 0)


def test_the_warning_on_a_clear_lead_dropped_or_kept_by_the_rule(tmp_path):
    """Answers 3 of 4 candidates gave (3 to 1: a clear lead) are counted both ways from the
    competing answers' votes; 3 to 2 is not a clear lead and keeps its warning either way."""

    def voted(i: int, right: bool, votes: int, drawn: int, other: int) -> dict:
        warned = ["The candidate answers disagree: ..."] if other >= 2 else []
        return line(i, right, False, True) | {
            "agreement": [votes, drawn], "competing_votes": [other], "warnings": warned
        }  # fmt: skip

    plain = [line(i, True, False, True) for i in range(20)]
    mostly_right = [voted(20 + i, i >= 2, 3, 4, 1) for i in range(8)]  # 2 wrong of 8
    text = vote_tuning.clear_report(folder(tmp_path / "c1", plain + mostly_right))
    assert "| answers a clear lead gave, another answer competing | 8 |" in text
    assert "| of them, 3 of 4 candidates (right, wrong) | 6, 2 |" in text
    assert "lead is dropped: fails: 2 of the 8 it fires on wrong (25%, >= 50%)" in text
    mostly_wrong = [voted(20 + i, i < 1, 3, 4, 1) for i in range(8)] + [voted(30, False, 3, 5, 2)]
    text = vote_tuning.clear_report(folder(tmp_path / "c2", plain + mostly_wrong))
    assert "| right answers warned, with it | 1/21 (5%" in text
    assert "lead is kept: 7 of the 8 it fires on wrong (88%, >= 50%)" in text
    assert "has no line yet" in vote_tuning.clear_report(tmp_path / "none")
