"""The result check's steps in the SQL phase: check a run's literals, retry a suspect attempt,
answer with the best suspect result when the retries give no clean one.

After ``execute`` succeeds, ``check_result`` runs :func:`cadet_magic.result_check.check.check_result`
through the runner. A clean run finishes as before (its warnings, if any, go with the
answer). A suspect run is diagnosed ``value_not_found`` (outcome ``"suspect"``) by the step
itself and, while attempts remain and the SQL changed, retried with its feedback
(``retry_suspect``, the pipeline's next attempt); the best suspect result so far is kept
(:func:`best_suspect`). When the SQL phase would otherwise end without an answer (attempts
used up, the same SQL again, a model error) and a suspect result exists, the pipeline's
``finish`` makes it the answer (:func:`answer_with`), with warnings that say what looks
wrong; the fallback does not run then.

The routes and control steps are every phase's, in :mod:`cadet_magic.agent.routes` and
:mod:`cadet_magic.agent.pipeline`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from cadet_magic.agent import nodes, record
from cadet_magic.agent.state import AskState
from cadet_magic.diagnose.failures import SuspectResult, diagnose
from cadet_magic.result import Attempt, Phase, StopReason
from cadet_magic.result_check.check import EMPTY_WARNING, MAX_CANDIDATES, ValueCheck
from cadet_magic.result_check.check import check_result as run_check
from cadet_magic.runner import RunResult

log = logging.getLogger("cadet_magic")

#: Bytes of values one check query may fetch.
CHECK_BYTES = 2**20


@dataclass(frozen=True)
class SuspectAnswer:
    """A suspect attempt's result, kept in case no clean answer follows."""

    attempt: int
    sql: str | None
    execution: RunResult
    check: ValueCheck


def _fetch(ctx: nodes.Context):
    """Runs one check query through the runner's read-only path (rows only)."""

    def fetch(sql: str, timeout: float) -> list[tuple]:
        return ctx.runner.run(
            sql, limit=MAX_CANDIDATES, timeout=timeout, max_bytes=CHECK_BYTES
        ).rows

    return fetch


def check_result(state: AskState, ctx: nodes.Context) -> dict:
    """Checks that the string values the executed query filters on occur."""
    t0 = time.perf_counter()
    execution = state.get("execution")
    verdict = state.get("check")
    if execution is None or verdict is None:  # pragma: no cover - routed only after a run
        return {"value_check": None}
    try:
        vc = run_check(
            verdict.sql,
            attempt=state["attempt"],
            rows=len(execution.rows),
            schema=state["schema"],
            fetch=_fetch(ctx),
            dialect=state["dialect"],
            timeout=state["options"].timeout,
        )
    except Exception as e:  # noqa: BLE001 - the check must never cost the user the answer
        log.warning("[result check] skipped: %s", e)
        vc = ValueCheck(attempt=state["attempt"], rows=len(execution.rows))
    log.info(
        "[result check] %d filter(s), %d missing, %d query(ies), %.0f ms%s",
        vc.filters,
        len(vc.missing),
        vc.queries,
        vc.seconds * 1000,
        " (budget spent)" if vc.out_of_budget else "",
    )
    update: dict[str, Any] = {
        "value_check": vc,
        "timings": {**(state.get("timings") or {}), "check_result": time.perf_counter() - t0},
    }
    if vc.suspect:
        update["diagnosis"] = diagnose(SuspectResult(vc, state.get("sql") or verdict.sql))
    return update


def current_check(state: AskState) -> ValueCheck | None:
    """The check of the attempt in progress (None when it did not run or is older)."""
    vc = state.get("value_check")
    if vc is None or vc.attempt != state.get("attempt") or state.get("execution") is None:
        return None
    return vc


def suspect_now(state: AskState) -> bool:
    """Whether the attempt in progress ran and the result check found it suspect."""
    vc = current_check(state)
    return vc is not None and vc.suspect


def provisional_attempt(state: AskState) -> Attempt:
    """The SQL phase's record of the attempt in progress, ``suspect`` once the result check
    found it so (it ran, so the record would otherwise say ``ok``)."""
    return record.provisional_attempt(state, ok=False if suspect_now(state) else None)


def _current_suspect(state: AskState) -> SuspectAnswer | None:
    vc = current_check(state)
    execution = state.get("execution")
    if vc is None or not vc.suspect or execution is None:
        return None
    return SuspectAnswer(state["attempt"], state.get("sql"), execution, vc)


def _better(a: SuspectAnswer | None, b: SuspectAnswer | None) -> SuspectAnswer | None:
    """The better of two suspect results: fewer missing values, rows rather than none,
    then the later one."""
    if a is None or b is None:
        return a or b
    return a if a.check.rank() < b.check.rank() else b


def best_suspect(state: AskState) -> SuspectAnswer | None:
    """The best suspect result so far, the attempt in progress's included (None: none)."""
    return _better(state.get("best_suspect"), _current_suspect(state))


def ran_clean(state: AskState) -> bool:
    """Whether the SQL attempt in progress gave the answer: it ran and the result check did
    not find it suspect."""
    return state.get("execution") is not None and not suspect_now(state)


def answer_with(best: SuspectAnswer) -> dict:
    """The update that makes the suspect result ``best`` the answer, with warnings."""
    return {
        "stop_reason": StopReason.success,
        "execution": best.execution,
        "answer_sql": best.sql,
        "warnings": best.check.warnings(),
        "best_suspect": best,
    }


def warnings_of(state: AskState, ok: bool) -> list[str]:
    """The answer's warnings: the suspect answer's, else the clean run's check (a missing
    value without a close one, an empty result)."""
    if not ok or state.get("phase") == Phase.fallback:
        return []
    if state.get("warnings"):
        return list(state["warnings"])
    vc = current_check(state)
    if vc is not None:
        return vc.warnings()
    execution = state.get("execution")
    return [EMPTY_WARNING] if execution is not None and not execution.rows else []
