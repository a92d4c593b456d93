"""The real-model evaluation benchmark's program (not its figures, which are in BENCHMARKS.md):
its fixed sample covers every Spider dev database, the reference run kept in the repository
holds only sample questions and records what it ran with, a run replaces it or resumes it, and
the figures are written from its files without a model."""

from __future__ import annotations

import json

from benchmarks import eval as bench
from cadet_magic.eval import KEYS
from cadet_magic.eval.run import mode_path, read_results


def test_the_sample_is_fixed_and_covers_every_database(shared_data, monkeypatch):
    monkeypatch.setenv("CADET_DATA", str(shared_data))
    dataset, chosen = bench.questions(bench.N_QUESTIONS, bench.SEED)
    assert len(chosen) == bench.N_QUESTIONS >= 300
    assert {q.db_id for q in chosen} == dataset.available()
    assert [q.key for q in bench.questions(bench.N_QUESTIONS, bench.SEED)[1]] == [
        q.key for q in chosen
    ]


def test_the_kept_results_are_sample_questions(shared_data, monkeypatch):
    monkeypatch.setenv("CADET_DATA", str(shared_data))
    keys = {q.key for q in bench.questions(bench.N_QUESTIONS, bench.SEED)[1]}
    for mode in ("targeted", "raw", "none"):
        done = read_results(mode_path(bench.OUT_DIR / "spider.jsonl", mode, True))
        assert set(done) <= keys, mode
        # the keys (lines written before a key was added lack only that one)
        assert all(
            set(KEYS) - set(rec)
            <= {
                "stop_reason",
                "fallback_attempts",
                "sql_match",
                "agreement",
                "candidates",
                "competing_votes",
                "uncertain",
            }
            for rec in done.values()
        )


def test_the_reference_run_records_what_it_ran_with(shared_data, monkeypatch):
    """run.json: the shipped defaults (the vote's size resolved), the commit, the model file's
    SHA-256 (the pin's) and the checksum of the Spider dev files it read, which are the files
    read through CADET_DATA now."""
    from cadet_magic.local.pin import PIN

    monkeypatch.setenv("CADET_DATA", str(shared_data))
    run = bench.read_run(bench.REFERENCE)
    assert run is not None and run["modes"] == list(bench.MODES)
    assert run["options"]["candidates"] == 5  # CANDIDATES_DEFAULT as it ships
    assert run["commit"] and run["model"]["sha256"] == PIN.sha256
    dataset, chosen = bench.questions()
    assert bench.data_record(dataset, chosen) == run["data"]
    assert run["data"]["folder"] == "$CADET_DATA/spider-dev"


def test_a_start_resumes_the_same_run_and_replaces_another(tmp_path):
    record = {"questions": {"n": 3}, "modes": ["targeted"], "options": {"candidates": 5}}
    assert bench.begin(tmp_path, dict(record)).startswith("starts a run")
    (tmp_path / "spider.targeted.jsonl").write_text("{}\n")
    assert bench.begin(tmp_path, dict(record)).startswith("resumes the run")
    assert len(bench.read_run(tmp_path)["starts"]) == 2
    assert (tmp_path / "spider.targeted.jsonl").is_file()
    other = record | {"options": {"candidates": 1}}
    assert bench.begin(tmp_path, other).endswith("(replacing the one there)")
    assert not (tmp_path / "spider.targeted.jsonl").exists()
    assert len(bench.read_run(tmp_path)["starts"]) == 1


def test_report_only_writes_the_section_from_the_files(shared_data, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CADET_DATA", str(shared_data))
    q = bench.questions(bench.N_QUESTIONS, bench.SEED)[1][0]
    rec = dict.fromkeys(KEYS) | {
        "db_id": q.db_id,
        "question": q.question,
        "gold": q.gold,
        "first_match": True,
        "final_match": True,
        "final_sql": q.gold,
        "attempts": [{"category": None, "outcome": "ok"}],
        "warnings": [],
        "calls": 1,
        "seconds": 1.0,
    }
    out = tmp_path / "eval"
    out.mkdir()
    (out / "spider.targeted.jsonl").write_text(json.dumps(rec) + "\n")
    monkeypatch.setattr(bench, "OUT_DIR", out)
    assert bench.main(["--report-only", "--no-write", "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "**Partial run: targeted 1, raw 0, none 0 of the 300 questions done" in printed
    assert "execution accuracy, first attempt | 100.0%" in printed
    assert bench.COMMAND in printed and (out / "spider.svg").is_file()


def test_limit_is_a_stable_prefix_of_the_fixed_sample(shared_data, monkeypatch):
    monkeypatch.setenv("CADET_DATA", str(shared_data))
    whole = [q.key for q in bench.questions(bench.N_QUESTIONS, bench.SEED)[1]]
    assert [q.key for q in bench.questions(bench.N_QUESTIONS, bench.SEED, 33)[1]] == whole[:33]


def test_eval_signs_reads_the_kept_answers_without_a_model(shared_data, monkeypatch, tmp_path):
    from benchmarks import eval_signs

    monkeypatch.setenv("CADET_DATA", str(shared_data))
    q = bench.questions(bench.N_QUESTIONS, bench.SEED)[1][0]
    rec = dict.fromkeys(KEYS) | {"db_id": q.db_id, "question": q.question, "gold": q.gold,
                                 "first_sql": q.gold, "first_match": True, "fallback": False,
                                 "final_sql": "SELECT 1 WHERE 0", "final_match": False}  # fmt: skip
    (tmp_path / "spider.targeted.jsonl").write_text(json.dumps(rec) + "\n")
    measured = eval_signs.measure(eval_signs.fixed_answers([tmp_path]))
    assert [a.right for a in measured] == [True, False]
    assert "empty" in measured[1].signs
    assert "| empty | 1 | 1/1" in eval_signs.table(measured, "fixed")


def test_eval_signs_reads_the_held_out_answers_that_ran(tmp_path):
    from benchmarks import eval_signs

    lines = [{"db_id": "d", "question": "q1", "sql": "SELECT 1", "ran": True, "match": True},
             {"db_id": "d", "question": "q1", "sql": "SELECT 1 ", "ran": True, "match": True},
             {"db_id": "d", "question": "q2", "sql": "SELECT x", "ran": False, "match": False}]  # fmt: skip
    (tmp_path / "tuning.compact.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp_path / "tuning.oneshot.jsonl").write_text(json.dumps(lines[0] | {"question": "q3"}))
    got = eval_signs.held_out_answers(tmp_path)
    assert [(a.question, a.sql, a.right) for a in got] == [("q1", "SELECT 1", True)]


def test_a_sign_pays_only_under_the_rule_written_before_its_figures():
    from benchmarks.eval_signs import Answer, verdict

    def answers(fired_wrong, fired_right, other_wrong, other_right, sign="s"):
        return (
            [Answer("d", "q", "x", False, (sign,))] * fired_wrong
            + [Answer("d", "q", "x", True, (sign,))] * fired_right
            + [Answer("d", "q", "x", False)] * other_wrong
            + [Answer("d", "q", "x", True)] * other_right
        )

    gold = answers(0, 1, 0, 99)  # 1% false alarms
    assert verdict(answers(9, 1, 10, 80), gold, "s")[0]
    assert "fires on 4" in verdict(answers(4, 0, 10, 86), gold, "s")[1]  # too few
    assert not verdict(answers(4, 6, 10, 80), gold, "s")[0]  # precision 40%
    assert not verdict(answers(9, 1, 10, 80), answers(0, 3, 0, 97), "s")[0]  # 3% false alarms
    ok, why = verdict(answers(3, 2, 0, 5), gold, "s")  # 60% precision, base rate 30%
    assert not ok and "lower end" in why


def test_eval_change_pairs_the_questions_both_sides_hold(tmp_path):
    from benchmarks import eval_change

    def line(q, right, calls=1, attempts=None):
        return json.dumps({"db_id": "d", "question": q, "final_match": right, "first_match": right,
                           "fallback": False, "stop_reason": "success", "calls": calls,
                           "input_tokens": 100 * calls, "seconds": 2.0,
                           "attempts": attempts or [{"category": None}]})  # fmt: skip

    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "spider.targeted.jsonl").write_text(
        "\n".join([line("q1", False, 2), line("q2", True), line("q3", True)]) + "\n"
    )
    retry = [{"category": "column_not_found", "input_tokens": 100}, {"input_tokens": 150}]
    (after / "spider.jsonl").write_text(
        "\n".join([line("q1", True, 2, retry), line("q2", True), line("q3", None)]) + "\n"
    )
    text = eval_change.compare(before, after)
    assert "**targeted** (2 questions on both sides; 1 more could not run on one side" in text
    assert "| final answer right | 1/2 (50%" in text and "| 2/2 (100%" in text
    assert (
        "1 gained, 0 lost" in text
        and "| prompt tokens per retry | not recorded | 150 (n=1) |" in text
    )


def test_retry_prompt_layouts_share_the_first_prompt():
    """The current layout appends to the previous prompt; the previous one rewrote its user turn."""
    from benchmarks.retry_prompts import chatml, previous_layout
    from cadet_magic.agent.prompts import build_messages
    from cadet_magic.result import Attempt

    a1 = Attempt(
        1, "SELECT nme FROM t", "error", error="no such column: nme", feedback="Use t.name."
    )
    first = build_messages("Names?", "sqlite", "t(name)", [])
    retry = build_messages("Names?", "sqlite", "t(name)", [a1])
    assert chatml(retry).startswith(chatml(first).removesuffix("<|im_start|>assistant\n"))
    old = previous_layout("Names?", first[0][1], [a1])
    assert old[0] == first[0] and "Attempt 1:" in old[1][1] and "Use t.name." in old[1][1]
    assert chatml(old).endswith("<|im_start|>assistant\n")


def test_a_run_of_one_mode_writes_the_file_the_report_reads(monkeypatch, tmp_path):
    from benchmarks import eval as bench
    from cadet_magic.eval.run import mode_path

    monkeypatch.setattr(bench, "OUT_DIR", tmp_path)
    one = bench.results_out(["targeted"])
    assert mode_path(one, "targeted", False) == tmp_path / "spider.targeted.jsonl"
    several = bench.results_out(["targeted", "raw"])
    assert mode_path(several, "raw", True) == tmp_path / "spider.raw.jsonl"


def test_the_tuning_set_is_outside_the_fixed_sample(shared_data, monkeypatch):
    monkeypatch.setenv("CADET_DATA", str(shared_data))
    fixed = {q.key for q in bench.questions(bench.N_QUESTIONS, bench.SEED)[1]}
    tuning = [q.key for q in bench.questions(bench.N_QUESTIONS, bench.SEED, 40, "tuning")[1]]
    assert len(tuning) == 40 and not fixed & set(tuning)


def test_a_run_on_the_tuning_set_or_split_leaves_the_reference_run_alone(capsys):
    import pytest

    with pytest.raises(SystemExit):
        bench.main(["--set", "tuning", "--report-only"])
    assert "--set tuning needs --out-dir" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--skip", "112"])
    assert "--skip needs --out-dir" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # no other result set beside the reference run
        bench.main(["--report-only", "--out-dir", str(bench.REFERENCE.parent / "after")])
    assert "--out-dir must be outside benchmarks/eval" in capsys.readouterr().err
