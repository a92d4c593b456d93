"""Every phase is a declaration of one attempt pipeline (agent/phase_spec.py): its steps and
hooks in agent/phases.py, in the order they run, one routing, retry policy and ``finish`` for
all (agent/pipeline.py, agent/routes.py)."""

import ast
import dataclasses
import doctest
import sqlite3
from pathlib import Path

import pytest

import cadet_magic.agent
import cadet_magic.agent.fallback_phase as fallback_phase
import cadet_magic.agent.phase_spec as phase_spec
import cadet_magic.agent.phases as phases
import cadet_magic.agent.pipeline as pipeline
from cadet_magic.agent import run
from cadet_magic.agent.state import initial_state
from cadet_magic.agent.steps import Context, read_schema
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.result import Phase

AGENT = Path(cadet_magic.agent.__file__).parent


@pytest.mark.parametrize("module", [fallback_phase, phase_spec, phases, pipeline])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def test_the_runner_knows_every_phase_in_run_order():
    assert run.PHASES == (phases.SQL_PHASE, phases.VOTE_PHASE, phases.FALLBACK_PHASE)
    assert [spec.name for spec in run.PHASES] == [Phase.sql, Phase.vote, Phase.fallback]
    assert phase_spec.named(run.PHASES, Phase.vote) is phases.VOTE_PHASE
    assert phase_spec.after(run.PHASES, phases.SQL_PHASE) == run.PHASES[1:]
    assert phase_spec.after(run.PHASES, phases.FALLBACK_PHASE) == ()  # never a second fallback
    for spec in run.PHASES:
        assert spec.names()[0] == "generate"
        for name in (*spec.names(), "diagnose", "next_attempt", "hand_over", "finish"):
            assert callable(pipeline.node(run.PHASES, spec, name))


def test_a_phase_spec_is_small_and_its_hooks_grouped():
    """A declaration names the phase, its steps and four small records of hooks; no field
    links it to the phase after it (the order of ``PHASES`` does)."""
    fields = [f.name for f in dataclasses.fields(phase_spec.PhaseSpec)]
    assert fields == ["name", "steps", "attempt", "answer", "ending", "entry"]
    for group in (
        phase_spec.AttemptHooks,
        phase_spec.AnswerHooks,
        phase_spec.Ending,
        phase_spec.Entry,
    ):
        assert dataclasses.is_dataclass(group) and len(dataclasses.fields(group)) <= 4
        assert group.__dataclass_params__.frozen
    assert phase_spec.PhaseSpec.__dataclass_params__.frozen


def test_the_phase_spec_imports_neither_the_pipeline_nor_the_phases():
    """The declaration's module is plain data: the pipeline, the routes and the phases import
    it, and it imports none of them (no circle closes through it)."""
    tree = ast.parse((AGENT / "phase_spec.py").read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    for module in ("pipeline", "routes", "phases", "run", "sql_phase", "vote_phase"):
        assert f"cadet_magic.agent.{module}" not in imported, module
    assert "if TYPE_CHECKING" not in (AGENT / "routes.py").read_text()


def test_the_fallback_phase_is_a_declaration_not_a_copy():
    """The fallback phase declares steps and hooks; the routing, the retry policy, the next
    attempt and the finish are the pipeline's, not its own."""
    own = {n for n in dir(fallback_phase) if not n.startswith("_")}
    for shared in ("decide", "finish", "next_attempt", "NODES", "EDGES", "RECORD"):
        assert shared not in own
    assert not [n for n in own if n.startswith("route_")]


def test_the_sql_phase_knows_nothing_of_the_fallback_but_its_declaration():
    """No module of the SQL phase branches on the fallback phase or builds its records."""
    for name in (
        "sql_phase.py",
        "steps.py",
        "routes.py",
        "state.py",
        "prompts.py",
        "reply.py",
        "pipeline.py",
    ):
        tree = ast.parse((AGENT / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                text = ast.unparse(node)
                assert "Phase.fallback" not in text and "'fallback'" not in text, (name, text)
    for name in ("sql_phase.py", "steps.py", "routes.py", "state.py", "prompts.py", "pipeline.py"):
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
    rerun = dataclasses.replace(phases.SQL_PHASE, steps=phases.SQL_PHASE.steps[1:])
    assert rerun.names() == ("check", "execute", "check_result")
    alone = (rerun,)  # run alone: no phase to hand over to

    class NoModel:
        def invoke(self, messages):  # pragma: no cover - the phase never calls it
            raise AssertionError("no model call in a phase without generate")

    ctx = Context(model=NoModel(), runner=SQLiteRunner(con))
    state = initial_state("What is the total?", target="sqlite")
    state = (
        read_schema(state, ctx)
        .replace(work=rerun.attempt.begin(1))
        .with_work(sql="SELECT sum(x) FROM t")
    )
    step = rerun.first(state)
    seen = []
    while step != "end":
        seen.append(step)
        state = pipeline.node(alone, rerun, step)(state, ctx)
        step = run.routes.route(alone, rerun, step, state)
    assert seen == ["check", "execute", "check_result", "finish"]
    assert state.stop_reason == "success" and state.work.execution.rows == [(3,)]
    assert ctx.model_calls == 0 and [a.outcome for a in state.attempts] == ["ok"]


def test_the_pipeline_knows_no_phase():
    """The pipeline, the routes, the run's state, the shared steps and the attempt records
    import no phase's module, nor the result check (any of it) nor the fallback's code check
    and run: a phase's candidate answers reach them only through its ``candidate`` hook, and a
    phase's own kind of attempt record lives in its module (``sql_phase.SqlWork``)."""
    phases_own = ("sql_phase", "fallback_phase", "vote_phase", "phases")
    checks = ("cadet_magic.result_check", "cadet_magic.fallback")
    for name in ("pipeline.py", "routes.py", "steps.py", "state.py", "record.py"):
        tree = ast.parse((AGENT / name).read_text())
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not [m for m in imported if m.endswith(phases_own)], name
        assert not [m for m in imported if m.startswith(checks)], name
        text = (AGENT / name).read_text()
        assert "suspect" not in text, name


def test_the_pipeline_answers_with_the_best_candidate_a_phase_offered():
    """A toy phase whose every attempt fails but offers its run as a candidate (ranked by how
    far its one value is from 2): the pipeline retries, then answers with the best candidate
    and its warnings, knowing nothing of why the phase offered it."""
    from cadet_magic.agent.routes import route
    from cadet_magic.agent.state import Candidate
    from cadet_magic.diagnose.model import Category, Diagnosis
    from cadet_magic.runner import RunResult

    values = iter([5, 2, 4])

    def generate(state, ctx):
        run = RunResult(["n"], [(next(values),)])
        failed = Diagnosis(Category.unknown, True, feedback="again", error="not yet")
        return state.with_work(sql="SELECT n", execution=run, diagnosis=failed)

    def candidate(state):
        n = state.work.execution.rows[0][0]
        return Candidate(state.attempt, f"SELECT {n}", state.work.execution, (abs(n - 2),), ("?",))

    sql = phases.SQL_PHASE
    toy = dataclasses.replace(
        sql,
        steps=(phase_spec.Step("generate", generate, lambda s: False),),
        answer=dataclasses.replace(sql.answer, answered=lambda s: False, candidate=candidate),
        ending=dataclasses.replace(sql.ending, unchanged=lambda s: False),
    )
    alone = (toy,)
    ctx = Context(model=None, runner=None)
    state = initial_state("q", target="sqlite", max_attempts=3)
    step, seen = toy.first(state), []
    while step != "end":
        seen.append(step)
        state = pipeline.node(alone, toy, step)(state, ctx)
        step = route(alone, toy, step, state)
    assert seen == ["generate", "next_attempt"] * 2 + ["generate", "finish"]
    assert state.stop_reason == "success" and state.answer is not None
    assert (state.answer.attempt, state.answer.sql, state.answer.warnings) == (
        2,
        "SELECT 2",
        ("?",),
    )
    assert [a.number for a in state.attempts] == [1, 2, 3]


def test_a_repeated_query_is_told_in_one_place():
    """Whether an attempt writes an earlier attempt's query again is decided by
    ``record.same_query`` alone (on the forms made once from the checked trees): no other
    module of the agent compares SQL texts."""
    for path in AGENT.glob("*.py"):
        if path.name == "record.py":
            continue
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not names & {"normalize_sql", "same_sql"}, path.name
