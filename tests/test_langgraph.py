"""cadet_magic.langgraph: the agent as a LangGraph graph, with the real ``langgraph`` package and
scripted models (stored replies, not a real LLM). The graph's nodes are the pipeline's steps and
its edges the pipeline's routes, so on the same replies it gives the same attempts and answer as
``ask()`` (tests/langgraph_cases.json); a checkpointer and a thread keep the result; the readings
interrupt resumes; the drawing in docs/langgraph.md is the graph's."""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import cadet_magic
from cadet_magic.agent.events import RunDone
from cadet_magic.agent.phases import PHASES
from cadet_magic.langgraph import CONTROL, build_graph, node_name
from cadet_magic.llm import ScriptedModel
from cadet_magic.result import AskResult
from tests.helpers import sql_reply

ROOT = Path(__file__).resolve().parents[1]
DATA = json.loads((Path(__file__).parent / "langgraph_cases.json").read_text())
CASES = DATA["cases"]
QUESTION = "Total v per g?"


def database() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    for statement in DATA["setup"]:
        con.execute(statement)
    con.commit()
    return con


def model(replies: list[str]) -> ScriptedModel:
    return ScriptedModel({QUESTION: [r if "```" in r else sql_reply(r) for r in replies]})


def attempt_view(a) -> tuple:
    return (str(a.phase), a.number, a.sql, a.code, str(a.outcome), a.category, a.feedback, a.reply)


TIMED = ("seconds", "model_seconds", "created")


def untimed(value):
    """A provenance value without the seconds it records."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMED}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def result_view(r: AskResult) -> dict:
    """What must be the same: the attempts, candidates, fallback and the answer (not the
    seconds each took)."""
    return {
        "ok": r.ok,
        "sql": r.sql,
        "columns": r.columns,
        "rows": [tuple(x) for x in r.rows],
        "answered_by": r.answered_by,
        "stop_reason": str(r.stop_reason),
        "attempts": [attempt_view(a) for a in r.attempts],
        "candidates": [attempt_view(a) for a in r.candidates],
        "fallback": None if r.fallback is None else [attempt_view(a) for a in r.fallback.attempts],
        "agreement": None if r.agreement is None else str(r.agreement),
        "competing": [(c.sql, c.votes) for c in r.competing],
        "warnings": r.warnings,
        "uncertain": r.uncertain,
        "asks": r.asks,
        "readings": [(x.sql, x.summary, x.votes, x.preview) for x in r.readings],
        "message": r.message,
        "model_calls": r.model_calls,
        "prompts": r.prompts,
        "model": r.model,
        "scripted": r.scripted,
        "connection": r.connection,
        "provenance": {k: untimed(v) for k, v in r.provenance.items() if k not in TIMED},
    }


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_the_graph_gives_what_ask_gives(case):
    by_ask = cadet_magic.ask(
        QUESTION, con=database(), model=model(case["replies"]), **case["options"]
    )
    graph = build_graph(database(), model=model(case["replies"]), **case["options"])
    by_graph = graph.invoke({"question": QUESTION})["result"]
    assert isinstance(by_graph, AskResult)
    assert result_view(by_graph) == result_view(by_ask)
    assert (by_graph.df is None) == (by_ask.df is None)
    if by_ask.df is not None:
        assert by_graph.df.values.tolist() == by_ask.df.values.tolist()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_the_graph_runs_the_steps_ask_runs(case):
    """The nodes the graph runs, in order, are the steps ``ask()`` reports (its progress
    events), each in the phase it ran in."""
    events = []
    by_ask = cadet_magic.ask(QUESTION, con=database(), model=model(case["replies"]),
                    on_event=events.append, **case["options"])  # fmt: skip
    assert isinstance(events.pop(), RunDone)
    expected, phase = ["read_schema"], events[0].phase
    for e in events[1:]:  # a hand-over is a step of the phase that hands over
        expected.append(node_name(phase, e.step))
        phase = e.phase
    graph = build_graph(database(), model=model(case["replies"]), **case["options"])
    updates = graph.stream({"question": QUESTION}, stream_mode="updates")
    ran = [name for update in updates for name in update]
    # a question whose answer asks stops at the readings' interrupt
    assert ran == [*expected, "answer", *(["__interrupt__"] if by_ask.asks else [])]


def test_the_nodes_are_the_phases_steps():
    graph = build_graph(None, model="scripted:unused.json")
    nodes = set(graph.get_graph().nodes) - {"__start__", "__end__"}
    steps = {node_name(p.name, s) for p in PHASES for s in (*p.names(), *CONTROL)}
    assert nodes == steps | {"read_schema", "answer", "choose"}
    assert "sql.generate" in nodes and "vote.tally" in nodes and "fallback.run_code" in nodes


def test_a_checkpointer_keeps_each_threads_result():
    q2 = "How many rows?"
    m = ScriptedModel(
        {
            QUESTION: [sql_reply("SELECT g, sum(v) AS total FROM t GROUP BY g ORDER BY g")],
            q2: [sql_reply("SELECT count(*) AS n FROM t")],
        }
    )
    graph = build_graph(database(), model=m, checkpointer=InMemorySaver(), candidates=1)
    one, two = ({"configurable": {"thread_id": t}} for t in ("one", "two"))
    first = graph.invoke({"question": QUESTION}, one)["result"]
    graph.invoke({"question": q2}, two)
    kept = graph.get_state(one).values["result"]  # read back from the checkpoint
    assert isinstance(kept, AskResult) and kept is not first
    assert kept.rows == first.rows == [("a", 4), ("b", 2)]
    assert result_view(kept) == result_view(first)
    assert kept.df.values.tolist() == first.df.values.tolist()
    assert graph.get_state(two).values["result"].rows == [(3,)]
    # a next question on the same thread: its result replaces the first one's
    again = graph.invoke({"question": q2}, one)["result"]
    assert again.rows == [(3,)] and graph.get_state(one).values["result"].rows == [(3,)]
    steps = [s.next for s in graph.get_state_history(one)]
    assert ("sql.generate",) in steps and ("answer",) in steps


def test_dataframes_changed_between_questions_are_seen_fresh():
    frame = pd.DataFrame({"v": [1, 2]})
    q = "Sum?"
    m = ScriptedModel({q: [sql_reply("SELECT sum(v) AS s FROM df")]})
    graph = build_graph(frame, model=m, candidates=1)
    assert graph.invoke({"question": q})["result"].rows == [(3,)]
    frame.loc[0, "v"] = 10
    assert graph.invoke({"question": q})["result"].rows == [(12,)]


# -- the readings interrupt ---------------------------------------------------------------------
# A vote of 3 split 2 to 1 has no clear lead by the vote's stop rule: the answer asks.

SPLIT = ["SELECT g, sum(v) AS total FROM t GROUP BY g ORDER BY total DESC LIMIT 1",
         "SELECT g, sum(v) AS total FROM t GROUP BY g ORDER BY total DESC",
         "SELECT g, sum(v) AS total FROM t GROUP BY g ORDER BY total DESC LIMIT 1"]  # fmt: skip


def test_a_question_that_asks_interrupts_and_resumes():
    graph = build_graph(database(), model=model(SPLIT), checkpointer=InMemorySaver(), candidates=3)
    config = {"configurable": {"thread_id": "readings"}}
    first = graph.invoke({"question": QUESTION}, config)
    (pending,) = first["__interrupt__"]
    readings = pending.value["readings"]
    assert [(r["summary"], r["votes"]) for r in readings] == [("top 1", 2), ("all rows", 1)]
    assert readings[1]["choice"] == 1 and readings[1]["sql"] == SPLIT[1]
    assert first["result"].asks and first["result"].sql == SPLIT[0]  # the leading reading
    assert graph.get_state(config).next == ("choose",)
    done = graph.invoke(Command(resume=1), config)["result"]
    assert done.sql == SPLIT[1] and len(done.rows) == len(readings[1]["preview"]) > 1
    assert not done.asks and done.chosen == 1 and done.provenance["chosen"]["reading"] == 1
    assert list(done.df.itertuples(index=False, name=None)) == done.rows


def test_a_clear_answer_or_readings_off_does_not_interrupt():
    for options in ({"candidates": 1}, {"candidates": 3, "ask_readings": False}):
        graph = build_graph(database(), model=model(SPLIT), checkpointer=InMemorySaver(), **options)
        out = graph.invoke({"question": QUESTION}, {"configurable": {"thread_id": str(options)}})
        assert "__interrupt__" not in out and not out["result"].asks


# -- the drawing ---------------------------------------------------------------------------------


def test_the_docs_drawing_is_the_graphs():
    """docs/langgraph.md shows ``graph.get_graph().draw_mermaid()`` as it is now; when the
    pipeline changes, ``python scripts/langgraph_page.py`` writes it again."""
    page = (ROOT / "docs" / "langgraph.md").read_text()
    found = re.search(r"^```mermaid\n(.*?)^```$", page, re.S | re.M)
    assert found, "docs/langgraph.md has no mermaid block"
    spec = importlib.util.spec_from_file_location("page", ROOT / "scripts" / "langgraph_page.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert found.group(1).rstrip() == script.drawing().rstrip(), (
        "the drawing is out of date: run python scripts/langgraph_page.py"
    )
