"""The fallback phase: a simple SELECT plus pandas code, after the SQL phase gave up.

The SQL phase hands over (its ``hand_over`` step) when every SQL attempt failed on an
error a rewrite could fix and the fallback is allowed; :func:`start` seeds this phase with the
SQL attempts (the model sees them, briefly) and restarts the attempt counter. Each attempt asks
for both blocks, checks the SELECT (the safety check, then the simple-SELECT rule) and the code
(its Python syntax tree), runs the SELECT, then the code on its rows. It retries with feedback
up to the same maximum; it never hands over again.

This module holds the phase's own steps (nodes return partial updates; they reuse the SQL
phase's model call, SQL run and attempt record) and the tests that let an attempt go on; the
phase itself is a declaration (:data:`cadet_magic.agent.phases.FALLBACK_PHASE`) run by the one
attempt pipeline (:mod:`cadet_magic.agent.pipeline`: routes, retry policy, ``finish``).

Example:
    >>> has_blocks({"sql": None, "code": "result = df"}), has_sql({"sql": None})
    (True, False)
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import time
from collections.abc import Callable
from typing import Any, TypedDict

from cadet_magic.agent import nodes, record
from cadet_magic.agent.fallback_prompts import build_fallback_messages
from cadet_magic.agent.nodes import Context
from cadet_magic.agent.reply import extract_code
from cadet_magic.agent.routes import same_sql
from cadet_magic.agent.state import ATTEMPT_FIELDS, AskState, begin_attempt
from cadet_magic.diagnose.failures import (
    CodeFailed,
    CodeRefused,
    NoBlocks,
    NotSimple,
    TooManyRows,
    combine,
)
from cadet_magic.diagnose.failures import diagnose as diagnose_failure
from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.fallback.check import CodeCheck
from cadet_magic.fallback.check import check_code as check_python
from cadet_magic.fallback.run import CodeError, CodeRun
from cadet_magic.result import Attempt, Fallback, Phase, StopReason
from cadet_magic.schema.share import shared_attempts
from cadet_magic.sql.normalize import sql_diff
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.simple import check_simple_select
from cadet_magic.sql.validate import Validation

log = logging.getLogger("cadet_magic")


# -- the phase's state -------------------------------------------------------------------------


class CodeInProgress(TypedDict, total=False):
    """What a fallback attempt has besides the SQL attempt's fields: the pandas code, its
    check's verdict and its run."""

    code: str | None
    code_check: CodeCheck | None
    code_run: CodeRun | None


class FallbackState(AskState, CodeInProgress, total=False):
    """The run's state while the fallback phase is in progress."""


#: The fields of a fallback attempt in progress (cleared when the next one starts).
FIELDS = (*ATTEMPT_FIELDS, *CodeInProgress.__annotations__)

#: Why the SQL phase handed over: it hands over only once its attempts are used up.
HANDED_OVER_AFTER = StopReason.max_attempts


# -- entering the phase ------------------------------------------------------------------------


def prepare(ctx: Context) -> None:
    """Lets the code runner get ready (start its worker process) while the model still writes
    SQL: called by the runner after a failed SQL attempt when this phase may follow."""
    prepare = getattr(code_runner(ctx), "prepare", None)
    if callable(prepare):
        prepare()


def code_runner(ctx: Context) -> Callable[..., CodeRun]:
    """The run's code runner (default :func:`cadet_magic.fallback.default.run_fallback_code`: a
    confined worker process, in-process on Pyodide; ``memory=`` is passed when it takes it)."""
    if ctx.code_runner is not None:
        return ctx.code_runner
    from cadet_magic.fallback.default import run_fallback_code

    return run_fallback_code


def frame_maker(ctx: Context) -> Callable[[list[str], list[tuple]], Any]:
    """The run's ``df`` builder (default :func:`cadet_magic.fallback.run.make_frame`, which
    imports pandas only then)."""
    if ctx.frame_maker is not None:
        return ctx.frame_maker
    from cadet_magic.fallback.run import make_frame

    return make_frame


def start(state: AskState, ctx: Context) -> dict:
    """The update that enters the fallback, seeded with the SQL attempts in ``state``: its
    attempt counter restarts and its code runner gets ready while the model writes."""
    sql_attempts = [a for a in state["attempts"] if a.phase == Phase.sql]
    log.info("[fallback] %d SQL attempt(s) failed: simple SELECT + pandas next", len(sql_attempts))
    prepare(ctx)
    return {"attempts": state["attempts"], "phase": Phase.fallback, **begin_attempt(1, FIELDS)}


# -- nodes -------------------------------------------------------------------------------------


def generate(state: FallbackState, ctx: Context) -> dict:
    """Asks the model for a simple SELECT plus pandas code, with the failed SQL attempts, the
    earlier fallback attempts and the feedback on a retry."""
    sql_attempts = [a for a in state["attempts"] if a.phase == Phase.sql]
    share = state["options"].share
    # a follow-up's previous answer and the kept examples follow the question, as in the SQL
    # phase's prompt
    context = f"\n\n{ctx.preamble.strip()}" if ctx.preamble.strip() else ""
    messages = build_fallback_messages(
        state["question"] + context,
        state["dialect"],
        state["schema_text"],
        shared_attempts(sql_attempts, share),
        shared_attempts(record.same_phase(state), share),
    )
    update = nodes.ask_model(state, ctx, messages)
    if "model_error" not in update:
        update["code"] = extract_code(update["reply"])
    return update


def check(state: FallbackState, ctx: Context) -> dict:
    """The safety check on the SELECT, then the simple-SELECT rule."""
    update = nodes.check(state, ctx)
    verdict = update["check"]
    if verdict.ok:
        simple = check_simple_select(verdict.sql, state["dialect"])
        if not simple.ok:
            update["check"] = Validation(False, simple.issues, verdict.sql)
    return update


def check_code(state: FallbackState, ctx: Context) -> dict:
    """Runs the code check on the pandas code (its Python syntax tree)."""
    t0 = time.perf_counter()
    verdict = check_python(state["code"] or "")
    return {
        "code_check": verdict,
        "timings": nodes.timed(state, "check_code", time.perf_counter() - t0),
    }


def execute(state: FallbackState, ctx: Context) -> dict:
    """Runs the checked SELECT, fetching at most ``fallback_row_limit`` rows."""
    return nodes.run_sql(state, ctx, state["options"].fallback_row_limit)


def run_code(state: FallbackState, ctx: Context) -> dict:
    """Runs the checked pandas code on the SELECT's rows (fresh namespace, timed)."""
    t0 = time.perf_counter()
    execution = state["execution"]
    assert execution is not None  # the route runs the code only after the SELECT ran
    try:
        df = frame_maker(ctx)(list(execution.columns), list(execution.rows))
    except ImportError as e:
        result = CodeRun(
            ok=False,
            error=CodeError(
                "unavailable",
                "ImportError",
                f"pandas is not available in this kernel ({e}); the fallback needs it",
            ),
        )
    else:
        options = state["options"]
        result = code_runner(ctx)(
            state["code"],
            df,
            timeout=options.timeout,
            memory=options.fallback_memory,
            unconfined=options.fallback_unconfined,
            row_limit=options.row_limit,
            result_bytes=options.result_bytes,
        )
    return {
        "code_run": result,
        "timings": nodes.timed(state, "run_code", time.perf_counter() - t0),
    }


def diagnose(state: FallbackState, ctx: Context) -> dict:
    """The attempt's failure as one :class:`Diagnosis` (see :func:`diagnosis`)."""
    t0 = time.perf_counter()
    return {
        "diagnosis": diagnosis(state),
        "timings": nodes.timed(state, "diagnose", time.perf_counter() - t0),
    }


def diagnosis(state: FallbackState) -> Diagnosis:
    """The fallback attempt's failure: the first problem's category, feedback on all of them.

    SQL problems come first (missing blocks, the safety check, the simple-SELECT rule), then
    the code check, then what happened when running: the engine's error (through the usual
    diagnosis), too many rows, the Python error, the time limit, a missing ``result``.
    """
    sql, code = state.get("sql"), state.get("code")
    verdict, code_check = state.get("check"), state.get("code_check")
    where: dict[str, Any] = {"sql": sql, "dialect": state["dialect"], "schema": state["schema"]}
    found: list[tuple[Any, str | None]] = []
    if not sql or not code:
        found.append((NoBlocks(bool(sql), bool(code)), None))
    if verdict is not None and not verdict.ok:
        codes = {i.code for i in verdict.issues}
        refusal = NotSimple(verdict.issues) if codes == {"not_simple"} else None
        found.append((refusal or SafetyRefusal(verdict.issues), "SQL"))
    if code_check is not None and not code_check.ok:
        found.append((CodeRefused(code_check.issues), "Python"))
    execution, run = state.get("execution"), state.get("code_run")
    if not found and state.get("error") is not None:
        found.append((state["error"], None))
    elif not found and execution is not None and execution.truncated:
        found.append((TooManyRows(state["options"].fallback_row_limit), None))
    elif not found and run is not None and not run.ok:
        columns = list(getattr(execution, "columns", []) or [])
        found.append((CodeFailed(run.error, columns), None))
    if not found:  # pragma: no cover - diagnose is only reached after a failure
        found.append((CodeFailed(None), None))
    return combine([diagnose_failure(f, **where) for f, _ in found], [lb for _, lb in found])


def code_ran_ok(state: FallbackState) -> bool:
    """Whether the attempt's code gave the answer."""
    run = state.get("code_run")
    return run is not None and run.ok


def change(state: FallbackState) -> str | None:
    """The SQL diff plus how many lines of the pandas code changed (None on the first)."""
    previous = record.same_phase(state)
    if not previous:
        return None
    sql_change = sql_diff(previous[-1].sql, state.get("sql")) if state.get("sql") else None
    return _with_code_diff(sql_change, previous[-1].code, state.get("code"))


def _with_code_diff(sql_change: str | None, before: str | None, after: str | None) -> str:
    """The SQL diff plus how many lines of the pandas code changed.

    Example:
        >>> _with_code_diff(None, "result = df", "result = df.head()")
        'pandas code: 1 line(s) changed'
    """
    old = (before or "").strip().splitlines()
    new = (after or "").strip().splitlines()
    changed = sum(
        max(i2 - i1, j2 - j1)
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes()
        if op != "equal"
    )
    code_change = f"pandas code: {changed} line(s) changed" if changed else "pandas code unchanged"
    if sql_change and sql_change.startswith("No functional changes"):
        sql_change = "SQL unchanged"
    return f"{sql_change}; {code_change}" if sql_change else code_change


def close_attempt(state: FallbackState, feedback_sent: bool, ok: bool) -> Attempt:
    """The record of the fallback attempt in progress (``ok``: whether it answered)."""
    return record.close_attempt(state, feedback_sent, ok=ok, change=change, code=state.get("code"))


def provisional_attempt(state: FallbackState) -> Attempt:
    """The record of the fallback attempt in progress as far as it went (``running=True``)."""
    code_check, run = state.get("code_check"), state.get("code_run")
    refusals = []
    if code_check is not None and not code_check.ok:
        refusals.append("; ".join(str(getattr(i, "message", i)) for i in code_check.issues))
    failure = None
    if run is not None and not run.ok:
        failure = getattr(run.error, "message", None) or str(run.error)
    attempt = record.provisional_attempt(state, code_ran_ok(state), refusals, failure)
    return dataclasses.replace(attempt, code=state.get("code"))


def fallback_result(state: FallbackState) -> tuple[Fallback, Any]:
    """The phase's record for the result, and its answer (a DataFrame) when it answered."""
    attempts = [a for a in state["attempts"] if a.phase == Phase.fallback]
    last = attempts[-1] if attempts else None
    run = state.get("code_run")
    ok = state.get("stop_reason") == StopReason.success and run is not None and run.ok
    answer = run.result if ok and run is not None else None
    fallback = Fallback(
        sql=last.sql if last else None,
        code=last.code if last else None,
        result=answer,
        ok=ok,
        attempts=attempts,
        reason=HANDED_OVER_AFTER,
    )
    return fallback, answer


# -- the attempt's tests ---------------------------------------------------------------------


def _code_key(code: str | None) -> str:
    return "\n".join(line.rstrip() for line in (code or "").strip().splitlines() if line.strip())


def unchanged(state: FallbackState) -> bool:
    """The attempt repeats the previous fallback attempt (its SELECT and its code)."""
    previous = [a for a in state.get("attempts", ()) if a.phase == Phase.fallback]
    if not same_sql(state, previous):
        return False
    return _code_key(state.get("code")) == _code_key(previous[-1].code)


def has_blocks(state: FallbackState) -> bool:
    """The reply holds a SELECT or code (what is missing is diagnosed after the checks)."""
    return bool(state.get("sql") or state.get("code"))


def has_sql(state: FallbackState) -> bool:
    return bool(state.get("sql"))


def has_code(state: FallbackState) -> bool:
    return bool(state.get("code"))


def both_checked(state: FallbackState) -> bool:
    """Both checks passed: the SELECT's (safety, simple-SELECT) and the code's."""
    verdict, code_check = state.get("check"), state.get("code_check")
    return verdict is not None and verdict.ok and code_check is not None and code_check.ok


def rows_fetched(state: FallbackState) -> bool:
    """The SELECT ran and fetched all its rows (within ``fallback_row_limit``)."""
    execution = state.get("execution")
    return execution is not None and not execution.truncated
