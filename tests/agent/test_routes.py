import json
from pathlib import Path

import pytest

from cadet_magic.agent.routes import decide, route_after_diagnose
from cadet_magic.diagnose.classify import Category, Diagnosis
from cadet_magic.result import Attempt

CASES = json.loads((Path(__file__).parent / "route_cases.json").read_text())


def state_for(case):
    return {
        "attempt": case["attempt"],
        "max_attempts": case["max"],
        "phase": "sql",
        "fallback": False,
        "dialect": "duckdb",
        "sql": case["sql"],
        "diagnosis": Diagnosis(Category(case["category"]), case["retryable"]),
        "attempts": tuple(
            Attempt(number=i + 1, sql=s, outcome="error") for i, s in enumerate(case["previous"])
        ),
    }


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_decide(case):
    state = state_for(case)
    before = dict(state)
    assert decide(state) == case["expect"]
    assert route_after_diagnose(state) == (
        "next_attempt" if case["expect"] == "retry" else "finish"
    )
    assert state == before  # routes are pure
