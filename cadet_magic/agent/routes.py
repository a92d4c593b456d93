"""Where the agent goes next: pure functions of the state, one place for every retry rule.

Two phases. The SQL phase retries with feedback up to ``max_attempts``. When it ends at the
maximum on a retryable error and the fallback is allowed, the fallback phase starts (a simple
SELECT plus pandas code, its attempt counter restarting at 1, the same maximum); when the
fallback fails, the run stops for good: there is never a second fallback. Non-retryable errors
(permission, connection), model errors and the unchanged-SQL guard stop without a fallback.

Example:
    >>> from cadet_magic.diagnose.classify import Category, Diagnosis
    >>> s = {"attempt": 3, "max_attempts": 3, "phase": "sql", "fallback": False,
    ...      "diagnosis": Diagnosis(Category.column_not_found, True), "sql": "x", "attempts": ()}
    >>> decide(s)
    'max_attempts'
    >>> decide({**s, "fallback": True})
    'fallback'
    >>> decide({**s, "fallback": True, "phase": "fallback"})
    'max_attempts'
"""

from __future__ import annotations

from cadet_magic.agent.state import AskState
from cadet_magic.sql.normalize import normalize_sql


def _in_fallback(state: AskState) -> bool:
    return state.get("phase") == "fallback"


def _checked(state: AskState) -> bool:
    check = state.get("check")
    return check is not None and check.ok


def route_after_generate(state: AskState) -> str:
    if state.get("model_error"):
        return "finish"
    if _in_fallback(state) and not state.get("sql"):
        return "check_code" if state.get("code") else "diagnose"
    return "check" if state.get("sql") else "diagnose"


def route_after_check(state: AskState) -> str:
    if _in_fallback(state):
        return "check_code" if state.get("code") else "diagnose"
    return "execute" if _checked(state) else "diagnose"


def route_after_check_code(state: AskState) -> str:
    code_check = state.get("code_check")
    code_ok = code_check is not None and code_check.ok
    return "execute" if _checked(state) and code_ok else "diagnose"


def route_after_execute(state: AskState) -> str:
    execution = state.get("execution")
    if execution is None:
        return "diagnose"
    if _in_fallback(state):
        return "diagnose" if execution.truncated else "run_code"
    return "finish"


def route_after_run_code(state: AskState) -> str:
    run = state.get("code_run")
    return "finish" if run is not None and run.ok else "diagnose"


def _unchanged(state: AskState) -> bool:
    """The attempt repeats the previous one of its phase (SQL, and in the fallback the code)."""
    phase = state.get("phase", "sql")
    previous = [a for a in state.get("attempts", ()) if a.phase == phase]
    sql = state.get("sql")
    if not (sql and previous and previous[-1].sql):
        return False
    dialect = state.get("dialect")
    if normalize_sql(sql, dialect) != normalize_sql(previous[-1].sql, dialect):
        return False
    if phase == "fallback":
        return _code_key(state.get("code")) == _code_key(previous[-1].code)
    return True


def _code_key(code: str | None) -> str:
    return "\n".join(line.rstrip() for line in (code or "").strip().splitlines() if line.strip())


def fallback_due(state: AskState) -> bool:
    """Whether an SQL phase that stopped at the maximum hands over to the fallback."""
    return (
        not _in_fallback(state)
        and bool(state.get("fallback"))
        and not state.get("model_error")
        and state.get("sql_stop_reason") is None
    )


def decide(state: AskState) -> str:
    """After a failed attempt: ``retry``, ``fallback`` or the reason to stop.

    The order matters (seed Improvement 2): a non-retryable error stops, then the
    maximum is checked *before* any increment (handing over to the fallback once, from the
    SQL phase, when allowed), then the unchanged-SQL guard (which stops without a fallback).
    """
    diagnosis = state["diagnosis"]
    if diagnosis is not None and not diagnosis.retryable:
        return "not_retryable"
    if state["attempt"] >= state["max_attempts"]:
        return "fallback" if fallback_due(state) else "max_attempts"
    if _unchanged(state):
        return "unchanged_sql"
    return "retry"


def route_after_diagnose(state: AskState) -> str:
    decision = decide(state)
    if decision == "retry":
        return "next_attempt"
    if decision == "fallback":
        return "start_fallback"
    return "finish"
