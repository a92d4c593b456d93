import json
from pathlib import Path

import pytest

from cadet_magic.agent.phase_spec import named
from cadet_magic.agent.phases import PHASES
from cadet_magic.agent.routes import decide, route
from cadet_magic.agent.state import initial_state
from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.fallback.code_check import CodeCheck
from cadet_magic.fallback.in_process import CodeError, CodeRun
from cadet_magic.options import AskOptions
from cadet_magic.result import Attempt
from cadet_magic.runner import RunResult
from cadet_magic.sql.validate import Validation

CASES = json.loads((Path(__file__).parent / "route_cases.json").read_text())
NEXT = {"retry": "next_attempt", "hand_over": "hand_over"}


def phase_of(state):
    """The declaration of the state's phase."""
    return named(PHASES, state.phase)


def make_state(phase="fallback", attempts=(), options=None, **work):
    """A state in ``phase`` whose attempt in progress has the fields ``work``."""
    spec = named(PHASES, phase)
    state = initial_state("q", target="duckdb", options=options or AskOptions())
    begun = spec.attempt.begin(1)
    return state.replace(phase=spec.name, attempts=attempts, work=begun).with_work(**work)


def state_for(case):
    phase = case.get("phase", "sql")
    codes = case.get("previous_code", [None] * len(case["previous"]))
    earlier = tuple(
        Attempt(number=i + 1, sql=s, outcome="error")
        for i, s in enumerate(case.get("sql_previous", []))
    )
    work = {"code": case.get("code")} if phase == "fallback" else {}
    return make_state(
        phase,
        attempts=earlier
        + tuple(
            Attempt(number=i + 1, sql=s, outcome="error", phase=phase, code=c)
            for i, (s, c) in enumerate(zip(case["previous"], codes, strict=True))
        ),
        options=AskOptions(max_attempts=case["max"], fallback=case.get("fallback", False)),
        number=case["attempt"],
        model_error=case.get("model_error"),
        sql=case["sql"],
        diagnosis=Diagnosis(case["category"], case["retryable"]),
        **work,
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_decide(case):
    state = state_for(case)
    before = state
    assert decide(PHASES, phase_of(state), state) == case["expect"]
    assert route(PHASES, phase_of(state), "diagnose", state) == NEXT.get(case["expect"], "finish")
    assert state == before  # routes are pure


OK_SQL = Validation(True, [], "SELECT a FROM t")
BAD_SQL = Validation(False, [], "SELECT a FROM t")
OK_CODE, BAD_CODE = CodeCheck(True), CodeCheck(False, [], "Refused")
ROWS = RunResult(["a"], [(1,)])
TOO_MANY = RunResult(["a"], [(1,)], truncated=True)

STEP_CASES = [
    # (the step routed after, state, expected)
    ("generate", {"phase": "sql", "sql": "x"}, "check"),
    ("generate", {"phase": "sql", "sql": None}, "diagnose"),
    ("generate", {"phase": "sql", "model_error": "down"}, "finish"),
    ("generate", {"phase": "fallback", "sql": "x", "code": "c"}, "check"),
    ("generate", {"phase": "fallback", "sql": None, "code": "c"}, "check_code"),
    ("generate", {"phase": "fallback", "sql": None, "code": None}, "diagnose"),
    ("generate", {"phase": "fallback", "model_error": "down"}, "finish"),
    ("check", {"phase": "sql", "check": OK_SQL}, "execute"),
    ("check", {"phase": "sql", "check": BAD_SQL}, "diagnose"),
    ("check", {"phase": "fallback", "check": OK_SQL, "code": "c"}, "check_code"),
    ("check", {"phase": "fallback", "check": BAD_SQL, "code": "c"}, "check_code"),
    ("check", {"phase": "fallback", "check": OK_SQL, "code": None}, "diagnose"),
    ("check_code", {"check": OK_SQL, "code_check": OK_CODE, "code": "c"}, "execute"),
    # A reply without code (after the product's SELECT, which skips the SQL check) is diagnosed.
    ("check_code", {"check": OK_SQL, "code_check": OK_CODE, "code": None}, "diagnose"),
    ("check_code", {"check": BAD_SQL, "code_check": OK_CODE}, "diagnose"),
    ("check_code", {"check": OK_SQL, "code_check": BAD_CODE}, "diagnose"),
    ("check_code", {"check": None, "code_check": OK_CODE}, "diagnose"),
    ("execute", {"phase": "sql", "execution": ROWS}, "check_result"),
    ("execute", {"phase": "sql", "execution": None}, "diagnose"),
    ("execute", {"phase": "fallback", "execution": ROWS}, "run_code"),
    ("execute", {"phase": "fallback", "execution": TOO_MANY}, "diagnose"),
    ("execute", {"phase": "fallback", "execution": None}, "diagnose"),
    ("run_code", {"code_run": CodeRun(ok=True)}, "finish"),
    (
        "run_code",
        {"code_run": CodeRun(ok=False, error=CodeError("error", "KeyError", "'x'", 1))},
        "diagnose",
    ),
]


@pytest.mark.parametrize(
    ("step", "state", "expected"),
    STEP_CASES,
    ids=[f"route_after_{step}-{i}" for i, (step, _, _) in enumerate(STEP_CASES)],
)
def test_step_routes(step, state, expected):
    state = make_state(**state)
    before = state
    assert route(PHASES, phase_of(state), step, state) == expected
    assert state == before
