"""The agent's steps. Each takes the state (and the run's context) and returns a partial update.

Nodes never mutate the state they are given; the runner merges what they return.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.agent.prompts import build_messages
from cadet_magic.agent.reply import content_text, extract_sql
from cadet_magic.agent.routes import decide
from cadet_magic.agent.state import CURRENT_FIELDS, AskState
from cadet_magic.db.base import Runner
from cadet_magic.diagnose import no_sql_feedback
from cadet_magic.diagnose.classify import Category, Diagnosis, diagnose_error
from cadet_magic.errors import ModelCallError
from cadet_magic.result import Attempt
from cadet_magic.schema.link import link
from cadet_magic.schema.model import Schema
from cadet_magic.sql.normalize import sql_diff
from cadet_magic.sql.validate import validate_sql

log = logging.getLogger("cadet_magic")


@dataclass
class Context:
    """What the nodes need besides the state: the model and the runner, passed in."""

    model: Any
    runner: Runner
    schema: Schema | None = None
    schema_budget: int | None = 6000
    model_calls: int = 0
    extra: dict = field(default_factory=dict)


def _timed(state: AskState, step: str, seconds: float) -> dict[str, float]:
    return {**(state.get("timings") or {}), step: seconds}


def call_model(model: Any, messages: list[tuple[str, str]]) -> str:
    """Invokes the model; any failure becomes one clear :class:`ModelCallError` line."""
    try:
        reply = model.invoke(messages)
    except Exception as e:  # noqa: BLE001 - every provider failure is reported the same way
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise ModelCallError(
            f"The model call failed ({type(e).__name__}): {first}. "
            "Check the model name, API key, network and rate limits, then run the cell again."
        ) from e
    return content_text(getattr(reply, "content", reply))


def read_schema(state: AskState, ctx: Context) -> dict:
    """Reads the schema once per question."""
    try:
        schema = ctx.schema if ctx.schema is not None else ctx.runner.schema()
    except Exception as e:  # noqa: BLE001 - the attempt will meet (and diagnose) the same error
        log.warning("[schema] could not be read: %s", _error_text(e))
        schema = Schema()
    log.info("[schema] %d table(s) read once for this question", len(schema.tables))
    return {
        "schema": schema,
        "schema_text": link(schema, state["question"], ctx.schema_budget).text,
        "allowed_tables": schema.table_names() if schema.tables else None,
    }


def generate(state: AskState, ctx: Context) -> dict:
    """Asks the model for SQL, with the earlier attempts and feedback on a retry."""
    attempts = [a for a in state["attempts"] if a.phase == state["phase"]]
    messages = build_messages(state["question"], state["dialect"], state["schema_text"], attempts)
    t0 = time.perf_counter()
    try:
        reply = call_model(ctx.model, messages)
    except ModelCallError as e:
        return {
            "model_error": str(e),
            "reply": "",
            "sql": None,
            "timings": _timed(state, "generate", time.perf_counter() - t0),
        }
    finally:
        ctx.model_calls += 1
    sql = extract_sql(reply)
    return {
        "reply": reply,
        "sql": sql,
        "timings": _timed(state, "generate", time.perf_counter() - t0),
    }


def check(state: AskState, ctx: Context) -> dict:
    """Runs the safety check on the SQL."""
    t0 = time.perf_counter()
    verdict = validate_sql(state["sql"], state["dialect"], state.get("allowed_tables"))
    return {"check": verdict, "timings": _timed(state, "check", time.perf_counter() - t0)}


def execute(state: AskState, ctx: Context) -> dict:
    """Runs the checked SQL on the user's connection (limited, timed, rolled back)."""
    t0 = time.perf_counter()
    try:
        result = ctx.runner.run(
            state["check"].sql, limit=state["row_limit"], timeout=state["timeout"]
        )
    except Exception as e:  # noqa: BLE001 - the engine's error is data for the diagnosis
        return {
            "execution": None,
            "error": e,
            "timings": _timed(state, "execute", time.perf_counter() - t0),
        }
    return {
        "execution": result,
        "error": None,
        "timings": _timed(state, "execute", time.perf_counter() - t0),
    }


def diagnose(state: AskState, ctx: Context) -> dict:
    """Works out why the attempt failed and what to tell the model."""
    t0 = time.perf_counter()
    verdict = state.get("check")
    if not state.get("sql"):
        reply = state.get("reply") or ""
        diagnosis = Diagnosis(
            Category.no_sql, True, {"reply": reply[:300]}, [], no_sql_feedback(reply)
        )
    elif verdict is not None and not verdict.ok:
        diagnosis = diagnose_error(
            _refusal(verdict), sql=state["sql"], dialect=state["dialect"], schema=state["schema"]
        )
    else:
        diagnosis = diagnose_error(
            state["error"], sql=state["sql"], dialect=state["dialect"], schema=state["schema"]
        )
    return {"diagnosis": diagnosis, "timings": _timed(state, "diagnose", time.perf_counter() - t0)}


def _refusal(verdict: Any) -> Any:
    """The safety check's verdict as the error the diagnosis reads."""
    from cadet_magic.sql.refusal import SafetyRefusal

    return SafetyRefusal(verdict.issues)


def _outcome(state: AskState) -> tuple[str, str | None]:
    if state.get("model_error"):
        return "model_error", state["model_error"]
    if state.get("execution") is not None:
        return "ok", None
    if not state.get("sql"):
        return "no_sql", "The reply contained no SQL."
    verdict = state.get("check")
    if verdict is not None and not verdict.ok:
        return "refused", "; ".join(i.message for i in verdict.issues)
    diagnosis = state.get("diagnosis")
    if diagnosis is not None and diagnosis.category is Category.timeout:
        return "timeout", _error_text(state.get("error"))
    return "error", _error_text(state.get("error"))


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, BaseException):
        orig = getattr(error, "orig", None)
        err = orig if orig is not None else error
        text = str(err).strip()
        if "[SQL:" in text:
            text = text.split("[SQL:")[0].strip()
        return text or type(err).__name__
    return str(error)


def close_attempt(state: AskState, feedback_sent: bool) -> Attempt:
    """The record of the attempt in progress."""
    outcome, error = _outcome(state)
    diagnosis = state.get("diagnosis")
    same_phase = [a for a in state["attempts"] if a.phase == state["phase"]]
    previous_sql = same_phase[-1].sql if same_phase else None
    attempt = Attempt(
        number=state["attempt"],
        sql=state.get("sql"),
        outcome=outcome,
        category=diagnosis.category.value if diagnosis is not None and outcome != "ok" else None,
        error=error,
        feedback=diagnosis.feedback if (feedback_sent and diagnosis is not None) else None,
        suggestions=list(diagnosis.suggestions) if diagnosis is not None else [],
        diff=sql_diff(previous_sql, state.get("sql")) if same_phase and state.get("sql") else None,
        timings=dict(state.get("timings") or {}),
        reply=state.get("reply") or "",
        phase=state["phase"],
        retryable=diagnosis.retryable if diagnosis is not None else True,
    )
    _log_attempt(attempt, state["max_attempts"])
    return attempt


def _log_attempt(a: Attempt, max_attempts: int) -> None:
    log.info(
        "[attempt %d/%d] %s%s",
        a.number,
        max_attempts,
        a.outcome,
        f" ({a.category})" if a.category else "",
    )
    log.info("[attempt %d/%d] SQL: %s", a.number, max_attempts, a.sql)
    if a.diff:
        log.info("[attempt %d/%d] diff: %s", a.number, max_attempts, a.diff)
    if a.error:
        log.info("[attempt %d/%d] error: %s", a.number, max_attempts, a.error)
    if a.feedback:
        log.info("[attempt %d/%d] feedback: %s", a.number, max_attempts, a.feedback)


def next_attempt(state: AskState, ctx: Context) -> dict:
    """Records the failed attempt with the feedback that goes to the model and starts the next."""
    done = close_attempt(state, feedback_sent=True)
    return {
        "attempts": (*state["attempts"], done),
        "attempt": state["attempt"] + 1,
        **{f: None for f in CURRENT_FIELDS},
    }


def finish(state: AskState, ctx: Context) -> dict:
    """Records the last attempt and why the run stopped."""
    done = close_attempt(state, feedback_sent=False)
    if state.get("model_error"):
        reason = "model_error"
    elif state.get("execution") is not None:
        reason = "success"
    else:
        reason = decide(state)
    log.info("[end] %s after %d attempt(s)", reason, done.number)
    return {"attempts": (*state["attempts"], done), "stop_reason": reason}
