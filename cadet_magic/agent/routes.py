"""Where the agent goes next: pure functions of the state, one place for every retry rule.

Example:
    >>> from cadet_magic.diagnose.classify import Category, Diagnosis
    >>> s = {"attempt": 3, "max_attempts": 3, "phase": "sql", "fallback": False,
    ...      "diagnosis": Diagnosis(Category.column_not_found, True), "sql": "x", "attempts": ()}
    >>> decide(s)
    'max_attempts'
"""

from __future__ import annotations

from cadet_magic.agent.state import AskState
from cadet_magic.sql.normalize import normalize_sql


def route_after_generate(state: AskState) -> str:
    if state.get("model_error"):
        return "finish"
    return "check" if state.get("sql") else "diagnose"


def route_after_check(state: AskState) -> str:
    check = state.get("check")
    return "execute" if check is not None and check.ok else "diagnose"


def route_after_execute(state: AskState) -> str:
    return "finish" if state.get("execution") is not None else "diagnose"


def decide(state: AskState) -> str:
    """After a failed attempt: ``retry`` or the reason to stop.

    The order matters (seed Improvement 2): a non-retryable error stops, then the
    maximum is checked *before* any increment, then the unchanged-SQL guard.
    """
    diagnosis = state["diagnosis"]
    if diagnosis is not None and not diagnosis.retryable:
        return "not_retryable"
    if state["attempt"] >= state["max_attempts"]:
        return "max_attempts"
    previous = [a.sql for a in state.get("attempts", ()) if a.phase == state.get("phase", "sql")]
    sql = state.get("sql")
    if sql and previous and previous[-1]:
        dialect = state.get("dialect")
        if normalize_sql(sql, dialect) == normalize_sql(previous[-1], dialect):
            return "unchanged_sql"
    return "retry"


def route_after_diagnose(state: AskState) -> str:
    return "next_attempt" if decide(state) == "retry" else "finish"
