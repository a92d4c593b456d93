"""The real-model evaluation benchmark's program (not its figures, which are in BENCHMARKS.md):
its fixed sample covers every Spider dev database, the reference run kept in the repository
holds only sample questions and records what it ran with, a run replaces it or resumes it, and
the figures are written from its files without a model."""

from __future__ import annotations

import json

from benchmarks import eval as bench
from cadet_magic.eval import KEYS
from cadet_magic.eval.evaluation import mode_path, read_results


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
                "asks",
                "readings",
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


def test_a_run_of_one_mode_writes_the_file_the_report_reads(monkeypatch, tmp_path):
    from benchmarks import eval as bench
    from cadet_magic.eval.evaluation import mode_path

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
