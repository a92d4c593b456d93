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
    graph = run.PHASES[Phase.fallback]
    assert (graph.nodes, graph.edges) == (phase.NODES, phase.EDGES)
    assert graph.provisional is phase.provisional_attempt
    assert run.EDGES["hand_over"] == phase.FIRST
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
    assert "hand_over" not in dir(run.nodes)
    for name in ("nodes.py", "routes.py", "state.py", "prompts.py"):
        tree = ast.parse((AGENT / name).read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
        assert not {"code_check", "code_run"} & names, name
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in imported if m.startswith("cadet_magic.fallback")], name
    assert not hasattr(run.routes, "route_after_run_code")
