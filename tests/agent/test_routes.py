import json
from pathlib import Path

import pytest

from cadet_magic.agent import routes as sql_routes
from cadet_magic.agent.routes import (
    decide,
    route_after_check,
    route_after_diagnose,
    route_after_execute,
    route_after_generate,
)
from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.fallback import phase as fallback_routes
from cadet_magic.fallback.check import CodeCheck
from cadet_magic.fallback.phase import route_after_check_code, route_after_run_code
from cadet_magic.fallback.run import CodeError, CodeRun
from cadet_magic.options import AskOptions
from cadet_magic.runner import RunResult
from cadet_magic.sql.validate import Validation

CASES = json.loads((Path(__file__).parent / "route_cases.json").read_text())
NEXT = {"retry": "next_attempt", "hand_over": "hand_over"}


def in_phase(route, state):
    """The route of that name in the state's phase: the SQL phase's in agent/routes.py, the
    fallback's own in fallback/phase.py."""
    fallback = state.get("phase") == "fallback" or not hasattr(sql_routes, route.__name__)
    return getattr(fallback_routes if fallback else sql_routes, route.__name__)


def state_for(case):
    from cadet_magic.result import Attempt

    phase = case.get("phase", "sql")
    codes = case.get("previous_code", [None] * len(case["previous"]))
    earlier = tuple(
        Attempt(number=i + 1, sql=s, outcome="error")
        for i, s in enumerate(case.get("sql_previous", []))
    )
    return {
        "attempt": case["attempt"],
        "options": AskOptions(max_attempts=case["max"], fallback=case.get("fallback", False)),
        "phase": phase,
        "model_error": case.get("model_error"),
        "dialect": "duckdb",
        "sql": case["sql"],
        "code": case.get("code"),
        "diagnosis": Diagnosis(case["category"], case["retryable"]),
        "attempts": earlier
        + tuple(
            Attempt(number=i + 1, sql=s, outcome="error", phase=phase, code=c)
            for i, (s, c) in enumerate(zip(case["previous"], codes, strict=True))
        ),
    }


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_decide(case):
    state = state_for(case)
    before = dict(state)
    assert in_phase(decide, state)(state) == case["expect"]
    assert in_phase(route_after_diagnose, state)(state) == NEXT.get(case["expect"], "finish")
    assert state == before  # routes are pure


OK_SQL = Validation(True, [], "SELECT a FROM t")
BAD_SQL = Validation(False, [], "SELECT a FROM t")
OK_CODE, BAD_CODE = CodeCheck(True), CodeCheck(False, [], "Refused")
ROWS = RunResult(["a"], [(1,)])
TOO_MANY = RunResult(["a"], [(1,)], truncated=True)

STEP_CASES = [
    # (route, state, expected)
    (route_after_generate, {"phase": "sql", "sql": "x"}, "check"),
    (route_after_generate, {"phase": "sql", "sql": None}, "diagnose"),
    (route_after_generate, {"phase": "sql", "model_error": "down"}, "finish"),
    (route_after_generate, {"phase": "fallback", "sql": "x", "code": "c"}, "check"),
    (route_after_generate, {"phase": "fallback", "sql": None, "code": "c"}, "check_code"),
    (route_after_generate, {"phase": "fallback", "sql": None, "code": None}, "diagnose"),
    (route_after_generate, {"phase": "fallback", "model_error": "down"}, "finish"),
    (route_after_check, {"phase": "sql", "check": OK_SQL}, "execute"),
    (route_after_check, {"phase": "sql", "check": BAD_SQL}, "diagnose"),
    (route_after_check, {"phase": "fallback", "check": OK_SQL, "code": "c"}, "check_code"),
    (route_after_check, {"phase": "fallback", "check": BAD_SQL, "code": "c"}, "check_code"),
    (route_after_check, {"phase": "fallback", "check": OK_SQL, "code": None}, "diagnose"),
    (route_after_check_code, {"check": OK_SQL, "code_check": OK_CODE}, "execute"),
    (route_after_check_code, {"check": BAD_SQL, "code_check": OK_CODE}, "diagnose"),
    (route_after_check_code, {"check": OK_SQL, "code_check": BAD_CODE}, "diagnose"),
    (route_after_check_code, {"check": None, "code_check": OK_CODE}, "diagnose"),
    (route_after_execute, {"phase": "sql", "execution": ROWS}, "check_result"),
    (route_after_execute, {"phase": "sql", "execution": None}, "diagnose"),
    (route_after_execute, {"phase": "fallback", "execution": ROWS}, "run_code"),
    (route_after_execute, {"phase": "fallback", "execution": TOO_MANY}, "diagnose"),
    (route_after_execute, {"phase": "fallback", "execution": None}, "diagnose"),
    (route_after_run_code, {"code_run": CodeRun(ok=True)}, "finish"),
    (
        route_after_run_code,
        {"code_run": CodeRun(ok=False, error=CodeError("error", "KeyError", "'x'", 1))},
        "diagnose",
    ),
]


@pytest.mark.parametrize(
    ("route", "state", "expected"),
    STEP_CASES,
    ids=[f"{r.__name__}-{i}" for i, (r, _, _) in enumerate(STEP_CASES)],
)
def test_step_routes(route, state, expected):
    before = dict(state)
    assert in_phase(route, state)(state) == expected
    assert state == before
