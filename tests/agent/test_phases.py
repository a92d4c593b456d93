"""Every phase is a declaration of one attempt pipeline: its steps and hooks in
agent/phases.py, one routing, retry policy and ``finish`` for all (agent/pipeline.py,
agent/routes.py)."""

import ast
import dataclasses
import doctest
import sqlite3
from pathlib import Path

import pytest

import cadet_magic.agent
import cadet_magic.agent.fallback_phase as fallback_phase
import cadet_magic.agent.phases as phases
import cadet_magic.agent.pipeline as pipeline
from cadet_magic.agent import run
from cadet_magic.agent.nodes import Context
from cadet_magic.agent.state import initial_state
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.result import Phase

AGENT = Path(cadet_magic.agent.__file__).parent


@pytest.mark.parametrize("module", [fallback_phase, phases, pipeline])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def test_the_runner_knows_both_phases():
    assert run.PHASES[Phase.fallback] is phases.FALLBACK_PHASE
    assert run.PHASES[Phase.sql].next is phases.FALLBACK_PHASE
    assert phases.FALLBACK_PHASE.next is None  # never a second fallback
    for spec in run.PHASES.values():
        assert spec.names()[0] == "generate"
        for name in (*spec.names(), "diagnose", "next_attempt", "hand_over", "finish"):
            assert callable(spec.node(name))


def test_the_fallback_phase_is_a_declaration_not_a_copy():
    """The fallback phase declares steps and hooks; the routing, the retry policy, the next
    attempt and the finish are the pipeline's, not its own."""
    own = {n for n in dir(fallback_phase) if not n.startswith("_")}
    for shared in ("decide", "finish", "next_attempt", "NODES", "EDGES", "RECORD"):
        assert shared not in own
    assert not [n for n in own if n.startswith("route_")]


def test_the_sql_phase_knows_nothing_of_the_fallback_but_its_declaration():
    """No module of the SQL phase branches on the fallback phase or builds its records."""
    for name in ("nodes.py", "routes.py", "state.py", "prompts.py", "reply.py", "pipeline.py"):
        tree = ast.parse((AGENT / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                text = ast.unparse(node)
                assert "Phase.fallback" not in text and "'fallback'" not in text, (name, text)
    for name in ("nodes.py", "routes.py", "state.py", "prompts.py", "pipeline.py"):
        tree = ast.parse((AGENT / name).read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
        assert not {"code_check", "code_run"} & names, name
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in imported if "fallback" in m], name


def test_a_phase_without_the_generate_step_runs_a_known_query():
    """A phase may leave out ``generate`` (a query run again without a model): the pipeline
    starts at its first step and finishes the same way."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x INTEGER)")
    con.execute("INSERT INTO t VALUES (1), (2)")
    rerun = dataclasses.replace(phases.SQL_PHASE, steps=phases.SQL_PHASE.steps[1:], next=None)
    assert rerun.names() == ("check", "execute", "check_result")

    class NoModel:
        def invoke(self, messages):  # pragma: no cover - the phase never calls it
            raise AssertionError("no model call in a phase without generate")

    ctx = Context(model=NoModel(), runner=SQLiteRunner(con))
    state = initial_state("What is the total?", dialect="sqlite")
    state = {**state, **run.nodes.read_schema(state, ctx), "sql": "SELECT sum(x) FROM t"}
    step = rerun.first(state)
    seen = []
    while step != "end":
        seen.append(step)
        state = {**state, **rerun.node(step)(state, ctx)}
        step = run.routes.route(rerun, step, state)
    assert seen == ["check", "execute", "check_result", "finish"]
    assert state["stop_reason"] == "success" and state["execution"].rows == [(3,)]
    assert ctx.model_calls == 0 and [a.outcome for a in state["attempts"]] == ["ok"]
