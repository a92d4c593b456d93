"""The fallback phase is a phase of its own: its nodes and routes in fallback/phase.py."""

import ast
import doctest
from pathlib import Path

import cadet_magic.agent
import cadet_magic.fallback.phase as phase
from cadet_magic.agent import run
from cadet_magic.result import Phase

AGENT = Path(cadet_magic.agent.__file__).parent


def test_doctests():
    assert doctest.testmod(phase).failed == 0


def test_the_runner_knows_both_graphs():
    assert run.PHASES[Phase.fallback] == (phase.NODES, phase.EDGES)
    assert run.EDGES["start_fallback"] == phase.FIRST
    for edges in (run.EDGES, phase.EDGES):
        for target in edges.values():
            assert (
                callable(target) or target == "end" or target in run.NODES or target in phase.NODES
            )


def test_the_sql_phase_knows_nothing_of_the_fallback_but_the_hand_over():
    """No module of the SQL phase branches on the fallback phase or builds its records."""
    for name in ("nodes.py", "routes.py", "state.py", "prompts.py", "reply.py"):
        tree = ast.parse((AGENT / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                text = ast.unparse(node)
                assert "Phase.fallback" not in text and "'fallback'" not in text, (name, text)
    assert "start_fallback" not in dir(run.nodes)
    assert not hasattr(run.routes, "route_after_run_code")
