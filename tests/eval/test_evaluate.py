"""``evaluate()`` and ``python -m cadet_magic.eval`` end to end on a tiny generated Spider-layout
folder, with a **scripted** model (replies stored in advance in ``data/tiny.json``, not a real
LLM): the results lines, the three feedback modes, resume, bad input, the report and chart."""

from __future__ import annotations

import json
import sqlite3

import pytest

from cadet_magic.api import ask
from cadet_magic.errors import ConfigurationError
from cadet_magic.eval import KEYS, evaluate
from cadet_magic.eval.__main__ import main
from cadet_magic.eval.evaluation import MODEL_ERROR, mode_path
from cadet_magic.llm import ScriptedModel
from cadet_magic.options import AskOptions
from tests.eval.conftest import TINY, make_spider, scripted_replies
from tests.helpers import sql_reply

QUESTIONS = {q["question"]: q for q in TINY["questions"]}


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def run(root, spec, out=None, **kw):
    kw.setdefault("progress", None)
    kw.setdefault("print_summary", False)
    return evaluate(root, spec, out=out, **kw)


def check_line(rec, mode):
    """What every line holds, and what the tiny data set's scripted replies must give."""
    assert list(rec) == list(KEYS)
    want = QUESTIONS[rec["question"]]["expect"]
    if "error" in want:
        assert want["error"] in rec["error"] and "\n" not in rec["error"]
        assert rec["final_sql"] is None and rec["calls"] == 0
        return
    assert rec["error"] is None
    assert rec["first_match"] is want["first_match"]
    final = want.get(mode, want.get("final_match", False))
    assert rec["final_match"] is final, (mode, rec)
    assert rec["calls"] >= 1 and rec["seconds"] >= 0
    assert rec["attempts"] and all(
        set(a) == {"category", "outcome", "sql", "input_tokens", "model_seconds"}
        for a in rec["attempts"]
    )
    if "first_category" in want:
        assert rec["attempts"][0]["category"] == want["first_category"]
    if "first_outcome" in want:
        assert rec["attempts"][0]["outcome"] == want["first_outcome"]
    if mode == "none":
        sql_attempts = [a for a in rec["attempts"]]
        assert len(sql_attempts) == 1  # one attempt, no feedback


def test_one_mode_writes_a_line_per_question(tiny, tmp_path):
    root, spec = tiny
    out = tmp_path / "runs" / "tiny.jsonl"
    ev = run(root, spec, out=out, report=tmp_path / "report.md")
    recs = lines(out)
    assert [r["question"] for r in recs] == [q["question"] for q in TINY["questions"]]
    for rec in recs:
        check_line(rec, "targeted")
    assert ev.scripted and ev.temperature == 0.0 and ev.questions == len(recs)
    report = (tmp_path / "report.md").read_text()
    assert "scripted stand-in, not a real model" in report and report == ev.summary
    assert (tmp_path / "report.svg").read_text().startswith("<svg")
    assert "execution accuracy, after self-correction | 50.0% [" in report  # 2 of the 4 that ran


def test_three_modes_side_by_side(tiny, tmp_path):
    root, spec = tiny
    out = tmp_path / "tiny.jsonl"
    ev = run(root, spec, out=out, feedback="targeted,raw,none")
    for mode in ("targeted", "raw", "none"):
        recs = lines(mode_path(out, mode, True))
        assert len(recs) == len(TINY["questions"])
        for rec in recs:
            check_line(rec, mode)
    assert "|  | targeted | raw | none |" in ev.summary
    assert "targeted − none" in ev.summary and "raw − none" in ev.summary


def test_resume_skips_done_questions_and_reruns_cut_and_model_failures(tiny, tmp_path):
    root, spec = tiny
    out = tmp_path / "tiny.jsonl"
    first = run(root, spec, out=out)
    done = out.read_text().splitlines()
    model = ScriptedModel({q["question"]: q["replies"] for q in TINY["questions"]})
    again = run(root, model, out=out)
    assert model.calls == {} and out.read_text().splitlines() == done  # nothing ran again
    assert [r["final_match"] for r in again.runs["targeted"].records] == [
        r["final_match"] for r in first.runs["targeted"].records
    ]
    # An interruption cut the last line; a model failure is to be retried.
    failed = json.loads(done[0]) | {"error": f"{MODEL_ERROR}: timed out", "final_match": False}
    out.write_text("\n".join(done[1:-1] + [json.dumps(failed), done[-1][:20]]) + "\n")
    model = ScriptedModel({q["question"]: q["replies"] for q in TINY["questions"]})
    resumed = run(root, model, out=out)
    assert set(model.calls) == {TINY["questions"][0]["question"]}  # the last one fails before
    recs = resumed.runs["targeted"].records
    assert [r["question"] for r in recs] == [q["question"] for q in TINY["questions"]]
    assert recs[0]["error"] is None and recs[0]["final_match"] is True


def test_bad_questions_get_one_line_and_the_others_go_on(tiny, tmp_path):
    root, spec = tiny
    ev = run(root, spec)
    errors = {r["db_id"]: r["error"] for r in ev.runs["targeted"].records if r["error"]}
    assert errors["farm"].startswith("no database for db_id 'farm'")
    assert errors["zoo"].startswith("gold query refused by the safety check: ")
    assert sum(1 for r in ev.runs["targeted"].records if not r["error"]) == 4
    assert "could not run" in ev.summary.lower()


def test_a_corrupt_database_file_is_one_line(tmp_path):
    qs = [TINY["questions"][0]]
    root = make_spider(tmp_path / "d", qs)
    (root / "database" / "shop" / "shop.sqlite").write_bytes(b"not a database" * 100)
    ev = run(root, f"scripted:{scripted_replies(tmp_path / 'r.json', qs)}")
    (rec,) = ev.runs["targeted"].records
    assert rec["error"] and "\n" not in rec["error"] and rec["calls"] == 0


def test_the_database_is_opened_read_only(tmp_path):
    q = {
        "db_id": "shop",
        "question": "Delete the orders.",
        "query": "SELECT count(*) FROM orders",
        "replies": [sql_reply("DELETE FROM orders")],
    }
    root = make_spider(tmp_path / "d", [q])
    ev = run(root, f"scripted:{scripted_replies(tmp_path / 'r.json', [q])}")
    (rec,) = ev.runs["targeted"].records
    assert rec["final_match"] is False
    con = sqlite3.connect(root / "database" / "shop" / "shop.sqlite")
    assert con.execute("SELECT count(*) FROM orders").fetchone() == (3,)
    con.close()


def test_limit_and_seed_draw_a_sample(tiny):
    root, spec = tiny
    ev = run(root, spec, limit=2, seed=1)
    recs = ev.runs["targeted"].records
    assert len(recs) == 2 and len({r["db_id"] for r in recs}) == 2 and ev.seed == 1
    assert [r["question"] for r in run(root, spec, limit=2, seed=1).runs["targeted"].records] == [
        r["question"] for r in recs
    ]


def test_raw_feedback_is_the_error_text_only():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE orders (order_id INTEGER, customer TEXT)")
    replies = [sql_reply("SELECT custmer FROM orders"), sql_reply("SELECT customer FROM orders")]
    targeted = ask("Customers?", con=con, model=ScriptedModel({"Customers?": replies}))
    raw = ask("Customers?", con=con, model=ScriptedModel({"Customers?": replies}), feedback="raw")
    assert targeted.ok and raw.ok
    t, r = targeted.attempts[0], raw.attempts[0]
    assert t.category == r.category == "column_not_found"
    assert "customer" in t.feedback and t.feedback != r.feedback
    assert "custmer" in r.feedback and "customer" not in r.feedback.replace("custmer", "")


def test_feedback_and_temperature_are_checked():
    con = sqlite3.connect(":memory:")
    with pytest.raises(ConfigurationError, match="feedback must be one of"):
        ask("q", con=con, model=ScriptedModel({"q": ["x"]}), feedback="loud")
    with pytest.raises(ConfigurationError, match="temperature must be from 0 to 2"):
        ask("q", con=con, model=ScriptedModel({"q": ["x"]}), temperature=5)
    with pytest.raises(ConfigurationError, match="feedback must be"):
        evaluate("nowhere", "scripted:x", feedback="loud", progress=None)


def test_temperature_reaches_the_model_request():
    from cadet_magic.llm import load_model

    model = load_model(
        "openai:qwen", api_key="local", base_url="http://127.0.0.1:9/v1", temperature=0
    )
    assert getattr(model, "temperature", None) == 0


def test_cli_runs_and_prints_the_summary(tiny, tmp_path, capsys):
    root, spec = tiny
    out = tmp_path / "o.jsonl"
    code = main(
        [
            "--data",
            str(root),
            "--model",
            spec,
            "--out",
            str(out),
            "--report",
            str(tmp_path / "r.md"),
            "--feedback",
            "targeted,none",
        ]
    )
    assert code == 0
    printed = capsys.readouterr()
    assert "execution accuracy, first attempt" in printed.out
    assert "targeted" in printed.err  # the progress lines
    assert mode_path(out, "none", True).is_file() and (tmp_path / "r.svg").is_file()


BAD_CLI = [
    (["--data", "{missing}", "--model", "{spec}"], "Data folder not found"),
    (["--data", "{root}", "--model", "scripted:{missing}"], "Scripted replies file not found"),
    (["--data", "{root}", "--model", "{spec}", "--feedback", "loud"], "feedback must be"),
    (["--data", "{root}", "--model", "{spec}", "--temperature", "9"], "temperature must be"),
]


@pytest.mark.parametrize("argv, message", BAD_CLI, ids=[b[1] for b in BAD_CLI])
def test_cli_bad_input_is_one_line(tiny, tmp_path, capsys, argv, message):
    root, spec = tiny
    values = {"root": root, "spec": spec, "missing": tmp_path / "missing"}
    code = main([a.format(**values) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1


@pytest.mark.llm
def test_evaluate_with_the_real_local_model(shared_data, llm, tmp_path):
    """Two Spider dev questions through the real local model (the session's server, with the
    shipped defaults: the vote included): every line well formed (no accuracy asserted)."""
    ev = evaluate(
        shared_data / "spider-dev",
        "openai:qwen",
        base_url=llm.base_url,
        api_key="local",
        limit=2,
        seed=0,
        out=tmp_path / "o.jsonl",
        progress=None,
        print_summary=False,
    )
    recs = ev.runs["targeted"].records
    assert len(recs) == 2 and not ev.scripted
    for rec in recs:
        assert list(rec) == list(KEYS)
        assert rec["error"] is None or rec["error"].startswith(MODEL_ERROR)
        if rec["error"] is None:
            assert rec["calls"] >= 1 and rec["input_tokens"] and rec["output_tokens"]
            assert isinstance(rec["first_match"], bool) and isinstance(rec["final_match"], bool)


class FailsInTheFallback:
    """Scripted: a wrong column first, then the model's server fails (the fallback's call)."""

    cadet_scripted = True
    name = "scripted: fails in the fallback"

    def __init__(self) -> None:
        self.calls = 0

    def invoke(self, messages, *args, **kwargs):
        self.calls += 1
        if self.calls == 1:
            return ScriptedModel({"q": [sql_reply("SELECT nme FROM orders")]}).invoke(
                [("human", "Question: q")]
            )
        raise TimeoutError("the model server did not answer")


def test_a_model_failure_in_the_fallback_is_named_and_runs_again(tmp_path):
    from cadet_magic.options import AskOptions

    q = {"db_id": "shop", "question": "q", "query": "SELECT count(*) FROM orders"}
    root = make_spider(tmp_path / "d", [q])
    out = tmp_path / "o.jsonl"
    model = FailsInTheFallback()
    ev = run(root, model, out=out, options=AskOptions(max_attempts=1))
    (rec,) = ev.runs["targeted"].records
    assert rec["error"].startswith(MODEL_ERROR) and "did not answer" in rec["error"], rec
    again = FailsInTheFallback()
    run(root, again, out=out, options=AskOptions(max_attempts=1))
    assert again.calls == 2  # a model failure is not final: the question ran again


def test_a_line_records_the_fallbacks_attempts(tmp_path, model_writes_select):
    """Scripted replies: both SQL attempts name a wrong column, the fallback's first code fails
    (a wrong column in pandas), its second answers."""
    from cadet_magic.options import AskOptions

    q = {
        "db_id": "shop",
        "question": "What is the total amount?",
        "query": "SELECT sum(amount) FROM orders",
        "replies": [
            sql_reply("SELECT sum(amout) FROM orders"),
            sql_reply("SELECT sum(amnt) FROM orders"),
            "```sql\nSELECT amount FROM orders\n```\n```python\nresult = df[['amout']].sum()\n```",
            "```sql\nSELECT amount FROM orders\n```\n"
            "```python\nresult = df[['amount']].sum().to_frame().T\n```",
        ],
    }
    root = make_spider(tmp_path / "d", [q])
    spec = f"scripted:{scripted_replies(tmp_path / 'r.json', [q])}"
    ev = run(root, spec, options=AskOptions(max_attempts=2))
    (rec,) = ev.runs["targeted"].records
    assert list(rec) == list(KEYS) and rec["fallback"] is True
    first, second = rec["fallback_attempts"]
    assert set(first) == {"outcome", "category", "error", "sql", "code"}
    assert first["outcome"] == "error" and "amout" in first["error"] and "amout" in first["code"]
    assert "\n" not in first["error"]  # its first line only (results files are published)
    assert second["outcome"] == "ok" and second["error"] is None
    assert second["sql"] == "SELECT amount FROM orders" and rec["final_match"] is True
    # without the fallback the list is empty
    (plain,) = (
        run(tmp_path / "d", spec, options=AskOptions(max_attempts=1, fallback=False))
        .runs["targeted"]
        .records
    )
    assert plain["fallback_attempts"] == [] and plain["fallback"] is False


def test_a_vote_s_line_says_what_the_sql_phase_answered_and_what_the_candidates_did(tmp_path):
    question = {"db_id": "shop", "question": "How many orders are there?",
                "query": "SELECT count(*) FROM orders",
                "replies": ["```sql\nSELECT count(*) - 1 FROM orders\n```",
                            "```sql\nSELECT count(*) FROM orders\n```",
                            "```sql\nSELECT count(order_id) FROM orders\n```"]}  # fmt: skip
    root = make_spider(tmp_path / "spider", [question])
    spec = f"scripted:{scripted_replies(tmp_path / 'replies.json', [question])}"
    out = tmp_path / "vote.jsonl"
    run(root, spec, out=out, options=AskOptions(candidates=3))
    (rec,) = lines(out)
    assert list(rec) == list(KEYS)
    assert rec["first_match"] is False and rec["sql_match"] is False  # the SQL phase's answer
    assert rec["final_match"] is True and rec["agreement"] == [2, 3]  # the vote's
    assert [c["outcome"] for c in rec["candidates"]] == ["ok", "ok"] and rec["calls"] == 3
    assert any("disagree" in w for w in rec["warnings"])
