"""The vote in the loop, end to end with a scripted model on real SQLite and DuckDB
(table-driven from ``data/vote_runs.json``): the candidates drawn after the SQL phase, each
checked and run like an attempt; the answer most of them give, the first on a tie; the
agreement, the competing answers and the warning; the fallback only when no candidate
answered. Then the requests a real client sends (the scripted OpenAI-compatible server):
the first prompt again, sampled with a seed per candidate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

from cadet_magic import ask
from cadet_magic.agent.run import run_agent
from cadet_magic.db.connect import resolve_runner
from cadet_magic.errors import ModelCallInterrupted
from cadet_magic.llm.spec import ScriptedModel
from tests.helpers import connect_with, sql_reply

DATA = json.loads((Path(__file__).parent / "data" / "vote_runs.json").read_text())
RUNS = DATA["runs"]
QUESTION = "How many singers are from France?"


def reply(text: str) -> str:
    return text if "```" in text else sql_reply(text)


def frame_maker(columns, rows):
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def in_process(code, df, **limits):
    from cadet_magic.fallback.in_process import run_code

    return run_code(code, df, timeout=limits.get("timeout", 10))


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", RUNS, ids=[r["id"] for r in RUNS])
def test_vote(case, engine):
    con = connect_with(engine, DATA["setup"])
    model = ScriptedModel({QUESTION: [reply(r) for r in case["replies"]]})
    r = run_agent(QUESTION, model=model, runner=resolve_runner(con), code_runner=in_process,
                  frame_maker=frame_maker, **case["options"])  # fmt: skip
    rows = sorted(map(list, r.rows)) if r.rows else []
    assert rows == sorted(case["rows"])
    if case["sql_of"] is not None:
        assert r.sql.rstrip(";") == case["replies"][case["sql_of"]]
    assert bool(case.get("fallback")) == (r.answered_by == "fallback")
    agreement = None if r.agreement is None else [r.agreement.votes, r.agreement.of]
    assert agreement == case["agreement"]
    assert [c.sql for c in r.competing] == case["competing"]
    warned = any("candidate answers disagree" in w for w in r.warnings)
    assert warned == case["warned"] and r.uncertain == warned
    assert [[x.summary, x.votes] for x in r.readings] == case["readings"]
    assert r.asks == bool(case["readings"]) and r.chosen is None
    if r.asks:  # the answer shown is the leading reading's
        assert r.readings[0].sql == r.sql and r.readings[0].votes == r.agreement.votes
    assert [a.outcome for a in r.candidates] == case["candidates"]
    assert all(a.phase == "vote" and not a.feedback for a in r.candidates)
    assert r.model_calls == case["calls"] and r.stop_reason == case["stop"]
    assert len(r.prompts) == case["calls"]
    recorded = r.provenance["agreement"]
    assert (None if recorded is None else [recorded["votes"], recorded["of"]]) == agreement
    assert recorded is None or recorded["uncertain"] == r.uncertain
    con.close()


@pytest.mark.parametrize("case", [r for r in RUNS if r["readings"]], ids=lambda r: r["id"])
def test_readings_off_keeps_the_leading_answer_and_its_warning(case):
    con = connect_with("duckdb", DATA["setup"])
    model = ScriptedModel({QUESTION: [reply(r) for r in case["replies"]]})
    r = run_agent(QUESTION, model=model, runner=resolve_runner(con), code_runner=in_process,
                  frame_maker=frame_maker, ask_readings=False, **case["options"])  # fmt: skip
    assert not r.asks and r.readings == () and r.uncertain
    with pytest.raises(ValueError, match="no readings"):
        r.choose(0)
    assert any("candidate answers disagree" in w for w in r.warnings)


@pytest.mark.parametrize("case", [r for r in RUNS if r["readings"]], ids=lambda r: r["id"])
def test_choosing_a_reading_answers_with_it_without_a_model_call(case):
    con = connect_with("sqlite", DATA["setup"])
    model = ScriptedModel({QUESTION: [reply(r) for r in case["replies"]]})
    r = ask(QUESTION, con=con, model=model, live=False, **case["options"])
    calls = r.model_calls
    picked = r.choose(len(r.readings) - 1)
    last = r.readings[-1]
    assert picked.sql == last.sql and picked.rows == list(last.rows) and not picked.asks
    assert list(picked.df.itertuples(index=False, name=None)) == list(last.rows)
    assert picked.chosen == len(r.readings) - 1 and picked.model_calls == calls
    assert str(picked.agreement) == f"{last.votes} of {r.agreement.of}" and not picked.uncertain
    assert [c.sql for c in picked.competing] == [x.sql for x in r.readings[:-1]]
    assert picked.provenance["sql"] == last.sql
    assert picked.provenance["chosen"] == {"reading": len(r.readings) - 1,
                                           "summary": last.summary, "votes": last.votes}  # fmt: skip
    assert not any("candidate answers disagree" in w for w in picked.warnings)
    with pytest.raises(ValueError, match="choose one of 0 to"):
        r.choose(len(r.readings))
    con.close()


def test_candidates_answer_the_first_prompt_sampled_with_a_seed_each():
    con = connect_with("sqlite", DATA["setup"])
    script = [sql_reply("SELECT COUNT(*) FROM singer WHERE country = 'France'"),
              sql_reply("SELECT COUNT(*) FROM singer"),
              sql_reply("SELECT COUNT(id) FROM singer WHERE country = 'France'")]  # fmt: skip
    with FakeOpenAI(script) as srv:
        r = ask(QUESTION, con=con, model="openai:m", base_url=srv.base_url, api_key="k",
                temperature=0, candidates=3, live=False)  # fmt: skip
        sent = srv.requests
    assert r.ok and r.rows == [(2,)] and str(r.agreement) == "2 of 3"
    assert "seed" not in sent[0] and sent[0]["temperature"] == 0
    # the server answered one reply to a request for two: the rest is asked one by one
    assert [(b.get("n"), b["seed"], b["temperature"]) for b in sent[1:]] == [
        (None, 1, 0.7),
        (None, 2, 0.7),
    ]
    assert all(b["messages"] == sent[0]["messages"] for b in sent)
    assert r.tokens is not None and r.tokens.input == sum(a.tokens.input for a in r.all_attempts)
    con.close()


def test_a_server_answering_n_replies_gives_the_rest_in_one_request():
    con = connect_with("sqlite", DATA["setup"])
    script = [sql_reply("SELECT COUNT(*) FROM singer"), sql_reply("SELECT 1"),
              sql_reply("SELECT 2"), sql_reply("SELECT 3"), sql_reply("SELECT 5")]  # fmt: skip
    with FakeOpenAI(script, honours_n=True) as srv:
        r = ask(QUESTION, con=con, model="openai:m", base_url=srv.base_url, api_key="k",
                temperature=0, candidates=5, live=False)  # fmt: skip
        sent = srv.requests
    # the first candidate alone (it may agree at once), then the three left in one request
    assert [(b.get("n"), b.get("seed")) for b in sent] == [(None, None), (None, 1), (3, 2)]
    assert len(r.candidates) == 4 and r.model_calls == 3
    assert str(r.agreement) == "1 of 5" and len(r.competing) == 4
    con.close()


def test_a_server_answering_one_reply_is_asked_only_for_the_candidates_the_vote_needs():
    """llama-cpp-python's server ignores ``n``: the vote still stops as soon as it is clear,
    asking for no candidate it does not use."""
    con = connect_with("sqlite", DATA["setup"])
    france = "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    script = [sql_reply(france), sql_reply("SELECT COUNT(*) FROM singer"),
              sql_reply(france + " AND 1 = 1"), sql_reply(france + " AND 2 = 2"),
              sql_reply("SELECT 7")]  # fmt: skip
    with FakeOpenAI(script) as srv:
        r = ask(QUESTION, con=con, model="openai:m", base_url=srv.base_url, api_key="k",
                temperature=0, candidates=5, live=False)  # fmt: skip
        sent = srv.requests
    assert r.rows == [(2,)] and len(sent) == 1 + len(r.candidates) < 5, str(r.agreement)
    assert [(b.get("n"), b.get("seed")) for b in sent] == [
        (None, None), (None, 1), (3, 2), (None, 3)
    ][: len(sent)]  # fmt: skip
    con.close()


@pytest.mark.parametrize("corrected", [True, False])
def test_an_answer_found_after_a_correction_that_no_candidate_gave_warns(corrected):
    con = connect_with("sqlite", DATA["setup"])
    france = "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    sql = ["SELECT COUNT(*) FROM singers WHERE country = 'France'"] if corrected else []
    replies = [*sql, france, "SELECT COUNT(*) FROM singerz", "I cannot tell."]
    model = ScriptedModel({QUESTION: [reply(r) for r in replies]})
    r = run_agent(QUESTION, model=model, runner=resolve_runner(con), candidates=3)
    assert r.ok and r.rows == [(2,)] and str(r.agreement) == "1 of 3" and not r.competing
    unconfirmed = [w for w in r.warnings if "No other candidate answer confirmed" in w]
    assert unconfirmed == (["No other candidate answer confirmed this answer, found after a "
                            "correction (2 of 3 candidates gave none). It may be wrong; check it."]
                           if corrected else [])  # fmt: skip
    assert r.uncertain == corrected
    con.close()


class _FailingAfter:
    """Scripted replies, then the model fails (a server gone, an interrupt): labelled scripted."""

    cadet_scripted = True

    def __init__(self, replies, error):
        self.replies, self.error = list(replies), error

    def invoke(self, messages, *args, **kwargs):
        if not self.replies:
            raise self.error
        return type("Reply", (), {"content": self.replies.pop(0)})()


@pytest.mark.parametrize("error", [ConnectionError("server gone"), ModelCallInterrupted()])
def test_a_model_failure_while_drawing_candidates_keeps_the_answer_found(error):
    con = connect_with("sqlite", DATA["setup"])
    model = _FailingAfter(
        [sql_reply("SELECT COUNT(*) FROM singer WHERE country = 'France'")], error
    )
    r = run_agent(QUESTION, model=model, runner=resolve_runner(con), candidates=3,
                  model_timeout=5)  # fmt: skip
    assert r.ok and r.rows == [(2,)] and r.stop_reason == "success"
    assert [a.outcome for a in r.candidates] == ["model_error"]
    assert r.agreement is None and not r.warnings  # no other candidate: no vote was held
    con.close()


def test_a_model_failure_while_drawing_candidates_after_no_answer_says_so():
    """No SQL attempt answered and the model failed on the vote's first candidate: the message
    is that failure, not the last SQL attempt's error."""
    con = connect_with("sqlite", DATA["setup"])
    model = _FailingAfter([sql_reply("SELECT nope FROM singer")] * 3, ConnectionError("gone"))
    r = run_agent(QUESTION, model=model, runner=resolve_runner(con), candidates=3,
                  model_timeout=5)  # fmt: skip
    assert not r.ok and r.stop_reason == "model_error"
    assert [a.outcome for a in r.candidates] == ["model_error"]
    assert "gone" in r.message and "nope" not in r.message, r.message
    con.close()


class Together:
    """A model that decodes candidates together, as the in-kernel llama.cpp model does
    (``cadet_batched``; scripted replies, not a real model): it records each call."""

    cadet_batched = True
    cadet_in_process = True
    cadet_scripted = True

    def __init__(self, replies: list[str]) -> None:
        self.replies = [sql_reply(r) for r in replies]
        self.calls: list[tuple] = []

    def invoke(self, messages):
        self.calls.append(("invoke",))
        return self.replies.pop(0)

    def cadet_sample(self, messages, *, count, seed, temperature):
        self.calls.append(("sample", count, seed, temperature))
        return [self.replies.pop(0) for _ in range(count)]

    def cadet_answer_and_sample(self, messages, *, count, seed, temperature):
        self.calls.append(("answer+sample", count, seed, temperature))
        return [self.replies.pop(0) for _ in range(1 + count)]


FRANCE = "SELECT COUNT(*) FROM singer WHERE country = 'France'"
ROUNDS = [
    # the answer and the first candidate agree: one call for both, the vote is clear
    ([FRANCE, FRANCE + " AND 1 = 1"], [("answer+sample", 1, 1, 0.7)], "2 of 2"),
    # split: the three left in one round; the stop rule asked after each (3 to 1: clear)
    ([FRANCE, "SELECT 7", FRANCE + " AND 1 = 1", FRANCE + " AND 2 = 2", "SELECT 8"],
     [("answer+sample", 1, 1, 0.7), ("sample", 3, 2, 0.7)], "3 of 4"),
    # a split to the end: all five drawn in two calls
    ([FRANCE, "SELECT 7", "SELECT 8", FRANCE + " AND 1 = 1", "SELECT 9"],
     [("answer+sample", 1, 1, 0.7), ("sample", 3, 2, 0.7)], "2 of 5"),
]  # fmt: skip


@pytest.mark.parametrize("replies, calls, agreement", ROUNDS)
def test_candidates_decoded_together_come_in_rounds(replies, calls, agreement):
    con = connect_with("sqlite", DATA["setup"])
    model = Together(replies)
    r = run_agent(QUESTION, model=model, runner=resolve_runner(con), candidates=5)
    assert r.rows == [(2,)] and str(r.agreement) == agreement
    assert model.calls == calls and r.model_calls == len(calls)
    con.close()


def test_a_corrected_answer_votes_with_the_candidates_drawn_beside_its_first_attempt():
    """The first attempt fails and is corrected; the candidate drawn with it (the first
    prompt's) still votes, and the correction is an ordinary call."""
    con = connect_with("sqlite", DATA["setup"])
    model = Together(["SELECT COUNT(*) FROM singers", FRANCE + " AND 1 = 1", FRANCE])
    r = run_agent(QUESTION, model=model, runner=resolve_runner(con), candidates=5)
    assert model.calls == [("answer+sample", 1, 1, 0.7), ("invoke",)]
    assert r.rows == [(2,)] and str(r.agreement) == "2 of 2"
    con.close()
