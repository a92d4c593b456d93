"""The agent's steps. Each takes the state (and the run's context) and returns a partial update.

Nodes never mutate the state they are given; the runner merges what they return.
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.agent.prompts import build_fallback_messages, build_messages
from cadet_magic.agent.reply import content_text, extract_code, extract_sql
from cadet_magic.agent.routes import decide
from cadet_magic.agent.state import CURRENT_FIELDS, AskState
from cadet_magic.db.base import Runner
from cadet_magic.diagnose import no_sql_feedback
from cadet_magic.diagnose.classify import Category, Diagnosis, diagnose_error
from cadet_magic.errors import (
    FailedTransactionError,
    ModelCallError,
    ModelCallInterrupted,
    ResultTooLarge,
)
from cadet_magic.fallback import feedback as fallback_feedback
from cadet_magic.fallback.check import check_code as check_python
from cadet_magic.fallback.feedback import FallbackCategory
from cadet_magic.fallback.run import CodeError, CodeRun, make_frame, run_fallback_code
from cadet_magic.result import Attempt
from cadet_magic.schema.link import link
from cadet_magic.schema.model import Schema
from cadet_magic.sql.normalize import sql_diff
from cadet_magic.sql.simple import check_simple_select
from cadet_magic.sql.validate import Validation, renamed_functions, validate_sql

log = logging.getLogger("cadet_magic")


@dataclass
class Context:
    """What the nodes need besides the state: the model and the runner, passed in.

    ``model_timeout`` bounds each model call (seconds).
    ``code_runner(code, df, timeout=...)`` runs the fallback's pandas code (default
    :func:`cadet_magic.fallback.run.run_fallback_code`: a confined worker process, in-process
    on Pyodide; ``memory=`` is passed too when the runner takes it); ``frame_maker(columns, rows)`` turns the
    fallback SELECT's rows into ``df`` (default :func:`cadet_magic.fallback.run.make_frame`,
    which imports pandas only then).
    """

    model: Any
    runner: Runner
    schema: Schema | None = None
    schema_budget: int | None = 6000
    model_calls: int = 0
    #: Seconds each model call may take (None: only the provider client's own timeout).
    model_timeout: float | None = None
    code_runner: Callable[..., CodeRun] = run_fallback_code
    frame_maker: Callable[[list[str], list[tuple]], Any] = make_frame
    extra: dict = field(default_factory=dict)


def _timed(state: AskState, step: str, seconds: float) -> dict[str, float]:
    return {**(state.get("timings") or {}), step: seconds}


def _invoke(model: Any, messages: list[tuple[str, str]], timeout: float | None) -> Any:
    """``model.invoke(messages)``, waited for at most ``timeout`` seconds.

    The call runs on a daemon thread while this thread waits, so a model that never answers
    cannot hang the cell (the provider client's own timeout ends the thread later) and an
    interrupt while waiting stops the wait. Where threads cannot start (Pyodide) or without a
    timeout, the call runs here, bounded only by the client's own timeout.
    """
    if timeout is None:
        return model.invoke(messages)
    import contextvars
    import threading

    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["reply"] = model.invoke(messages)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = e
        finally:
            done.set()

    # The caller's context variables (LangChain callbacks, tracing) go with the call.
    context = contextvars.copy_context()
    worker = threading.Thread(
        target=context.run, args=(work,), name="cadet-model-call", daemon=True
    )
    try:
        worker.start()
    except RuntimeError:  # no threads here
        return model.invoke(messages)
    deadline = time.monotonic() + timeout
    try:
        # Short waits, so that an interrupt is seen promptly however it is delivered.
        while not (answered := done.wait(min(0.1, max(deadline - time.monotonic(), 0)))):
            if time.monotonic() >= deadline:
                break
    except KeyboardInterrupt:
        raise ModelCallInterrupted() from None
    if not answered:
        raise ModelCallError(
            f"The model did not answer within {timeout:g} s (AskMagic.model_timeout) and the "
            "call was abandoned. Check that the model's server is up and reachable, or raise "
            "the limit, e.g. %config AskMagic.model_timeout = 300, then run the cell again."
        )
    if "error" in box:
        raise box["error"]
    return box["reply"]


def call_model(model: Any, messages: list[tuple[str, str]], timeout: float | None = None) -> str:
    """Invokes the model, waiting at most ``timeout`` seconds; any failure becomes one clear
    :class:`ModelCallError` line, an interrupt while waiting :class:`ModelCallInterrupted`."""
    try:
        reply = _invoke(model, messages, timeout)
    except ModelCallError:
        raise
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise ModelCallError(
            f"The model call failed ({type(e).__name__}): {first}. "
            "Check the model name, API key, network and rate limits, then run the cell again."
        ) from e
    return content_text(getattr(reply, "content", reply))


def read_schema(state: AskState, ctx: Context) -> dict:
    """Takes the schema once per question (the runners cache it per connection)."""
    try:
        schema = ctx.schema if ctx.schema is not None else ctx.runner.schema()
    except (FailedTransactionError, ResultTooLarge):
        raise  # one line for the user: nothing the model can fix
    except Exception as e:  # noqa: BLE001 - the attempt will meet (and diagnose) the same error
        log.warning("[schema] could not be read: %s", _error_text(e))
        schema = Schema()
    log.info("[schema] %d table(s)", len(schema.tables))
    return {
        "schema": schema,
        "schema_text": link(schema, state["question"], ctx.schema_budget).text,
        "allowed_tables": schema.table_names() if schema.tables else None,
        "functions": schema.functions,
    }


def generate(state: AskState, ctx: Context) -> dict:
    """Asks the model for SQL (in the fallback: a simple SELECT plus pandas code), with the
    earlier attempts of the phase and the feedback on a retry."""
    attempts = [a for a in state["attempts"] if a.phase == state["phase"]]
    fallback = state["phase"] == "fallback"
    if fallback:
        sql_attempts = [a for a in state["attempts"] if a.phase == "sql"]
        messages = build_fallback_messages(
            state["question"], state["dialect"], state["schema_text"], sql_attempts, attempts
        )
    else:
        messages = build_messages(
            state["question"], state["dialect"], state["schema_text"], attempts
        )
    t0 = time.perf_counter()
    try:
        reply = call_model(ctx.model, messages, ctx.model_timeout)
    except ModelCallError as e:
        return {
            "model_error": str(e),
            "reply": "",
            "sql": None,
            "timings": _timed(state, "generate", time.perf_counter() - t0),
        }
    finally:
        ctx.model_calls += 1
    update = {
        "reply": reply,
        "sql": extract_sql(reply),
        "timings": _timed(state, "generate", time.perf_counter() - t0),
    }
    if fallback:
        update["code"] = extract_code(reply)
    return update


def check(state: AskState, ctx: Context) -> dict:
    """Runs the safety check on the SQL; in the fallback also the simple-SELECT rule."""
    t0 = time.perf_counter()
    verdict = validate_sql(
        state["sql"], state["dialect"], state.get("allowed_tables"), state.get("functions")
    )
    if verdict.ok and state["phase"] == "fallback":
        simple = check_simple_select(verdict.sql, state["dialect"])
        if not simple.ok:
            verdict = Validation(False, simple.issues, verdict.sql)
    return {"check": verdict, "timings": _timed(state, "check", time.perf_counter() - t0)}


def check_code(state: AskState, ctx: Context) -> dict:
    """Runs the code check on the fallback's pandas code (its Python syntax tree)."""
    t0 = time.perf_counter()
    verdict = check_python(state["code"] or "")
    return {
        "code_check": verdict,
        "timings": _timed(state, "check_code", time.perf_counter() - t0),
    }


def run_code(state: AskState, ctx: Context) -> dict:
    """Runs the checked pandas code on the fallback SELECT's rows (fresh namespace, timed)."""
    t0 = time.perf_counter()
    execution = state["execution"]
    try:
        df = ctx.frame_maker(list(execution.columns), list(execution.rows))
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
        limits: dict[str, Any] = {"timeout": state["timeout"]}
        if _takes(ctx.code_runner, "memory"):
            limits["memory"] = state.get("fallback_memory", 2 << 30)
        result = ctx.code_runner(state["code"], df, **limits)
    return {"code_run": result, "timings": _timed(state, "run_code", time.perf_counter() - t0)}


def _takes(func: Callable[..., Any], name: str) -> bool:
    """Whether ``func`` accepts the keyword ``name`` (injected runners may not)."""
    import inspect

    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def execute(state: AskState, ctx: Context) -> dict:
    """Runs the checked SQL on the user's connection (limited, timed, rolled back)."""
    t0 = time.perf_counter()
    try:
        limit = (
            state.get("fallback_row_limit", state["row_limit"])
            if state["phase"] == "fallback"
            else state["row_limit"]
        )
        bound = {}
        if state.get("result_bytes") is not None and _takes_max_bytes(ctx.runner):
            bound["max_bytes"] = state["result_bytes"]
        result = ctx.runner.run(state["check"].sql, limit=limit, timeout=state["timeout"], **bound)
    except (FailedTransactionError, ResultTooLarge):
        raise  # one line for the user: nothing the model can fix
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


def _takes_max_bytes(runner: Runner) -> bool:
    """Whether the runner bounds results by bytes (runners written before it do not)."""
    import inspect

    try:
        return "max_bytes" in inspect.signature(runner.run).parameters
    except (TypeError, ValueError):
        return False


def diagnose(state: AskState, ctx: Context) -> dict:
    """Works out why the attempt failed and what to tell the model."""
    t0 = time.perf_counter()
    if state["phase"] == "fallback":
        diagnosis = _diagnose_fallback(state)
        return {
            "diagnosis": diagnosis,
            "timings": _timed(state, "diagnose", time.perf_counter() - t0),
        }
    if state.get("fallback"):  # a fallback may follow: its worker can start meanwhile
        _prepare_code_runner(ctx)
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
            _as_written(state["error"], state["sql"], state["dialect"]),
            sql=state["sql"],
            dialect=state["dialect"],
            schema=state["schema"],
        )
    return {"diagnosis": diagnosis, "timings": _timed(state, "diagnose", time.perf_counter() - t0)}


def _as_written(error: Any, sql: str, dialect: str | None) -> Any:
    """The engine's error naming functions as the model wrote them, not as they ran.

    Example:
        >>> _as_written("no such function: PERCENTILE_CONT", "SELECT median(x) FROM t", "sqlite")
        'no such function: MEDIAN'
    """
    import re

    text = str(error)
    for run_as, written in renamed_functions(sql, dialect).items():
        pattern = re.compile(rf"\b{re.escape(run_as)}\b", re.IGNORECASE)
        if pattern.search(text):
            text = pattern.sub(written, text)
    return error if text == str(error) else text


def _diagnose_fallback(state: AskState) -> Diagnosis:
    """The fallback attempt's failure: the first problem's category, feedback on all of them.

    SQL problems come first (missing blocks, the safety check, the simple-SELECT rule), then
    the code check, then what happened when running: the engine's error (through the usual
    diagnosis), too many rows, the Python error, the time limit, a missing ``result``.
    """
    sql, code = state.get("sql"), state.get("code")
    verdict, code_check = state.get("check"), state.get("code_check")
    found: list[tuple[Any, bool, str, list[str], dict]] = []
    if not sql or not code:
        found.append(
            (
                FallbackCategory.no_blocks,
                True,
                fallback_feedback.no_blocks(bool(sql), bool(code)),
                [],
                {},
            )
        )
    if verdict is not None and not verdict.ok:
        codes = {i.code for i in verdict.issues}
        if codes == {"not_simple"}:
            found.append(
                (
                    FallbackCategory.not_simple,
                    True,
                    fallback_feedback.not_simple(verdict.issues),
                    [],
                    {"issues": [i.message for i in verdict.issues]},
                )
            )
        else:
            d = diagnose_error(
                _refusal(verdict), sql=sql, dialect=state["dialect"], schema=state["schema"]
            )
            found.append((d.category, d.retryable, d.feedback, d.suggestions, d.details))
    if code_check is not None and not code_check.ok:
        found.append(
            (
                FallbackCategory.code_refused,
                True,
                fallback_feedback.code_refused(code_check.issues),
                [],
                {"issues": [str(i) for i in code_check.issues]},
            )
        )
    execution, run = state.get("execution"), state.get("code_run")
    if not found and state.get("error") is not None:
        d = diagnose_error(
            state["error"], sql=sql, dialect=state["dialect"], schema=state["schema"]
        )
        found.append((d.category, d.retryable, d.feedback, d.suggestions, d.details))
    elif not found and execution is not None and execution.truncated:
        limit = state.get("fallback_row_limit", state["row_limit"])
        found.append(
            (FallbackCategory.too_many_rows, True, fallback_feedback.too_many_rows(limit), [], {})
        )
    elif not found and run is not None and not run.ok:
        found.append(_code_failure(run.error, execution))
    if not found:  # pragma: no cover - diagnose is only reached after a failure
        found.append((FallbackCategory.python_error, True, "Fix the code.", [], {}))
    category, retryable, _, suggestions, details = found[0]
    return Diagnosis(
        category,
        all(f[1] for f in found),
        details,
        list(suggestions),
        "\n\n".join(f[2] for f in found if f[2]),
    )


def _code_failure(error: CodeError | None, execution: Any) -> tuple:
    columns = list(getattr(execution, "columns", []) or [])
    kind = getattr(error, "kind", "error")
    details = {"error": str(error)} if error is not None else {}
    if kind == "timeout":
        return (
            FallbackCategory.code_timeout,
            True,
            fallback_feedback.code_timeout(error),
            [],
            details,
        )
    if kind == "memory":
        return (
            FallbackCategory.code_memory,
            True,
            fallback_feedback.code_memory(error),
            [],
            details,
        )
    if kind == "no_result":
        return (FallbackCategory.no_result, True, fallback_feedback.no_result(), [], details)
    if kind == "bad_result":
        return (FallbackCategory.bad_result, True, fallback_feedback.bad_result(error), [], details)
    if kind in ("unavailable", "worker"):
        return (
            FallbackCategory.unavailable,
            False,
            fallback_feedback.unavailable(error),
            [],
            details,
        )
    if kind == "refused":
        return (
            FallbackCategory.code_refused,
            True,
            fallback_feedback.code_refused([error]),
            [],
            details,
        )
    return (
        FallbackCategory.python_error,
        True,
        fallback_feedback.python_error(error, columns),
        [],
        details,
    )


def _refusal(verdict: Any) -> Any:
    """The safety check's verdict as the error the diagnosis reads."""
    from cadet_magic.sql.refusal import SafetyRefusal

    return SafetyRefusal(verdict.issues)


def _outcome(state: AskState) -> tuple[str, str | None]:
    if state.get("model_error"):
        return "model_error", state["model_error"]
    if state["phase"] == "fallback":
        return _fallback_outcome(state)
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


def _fallback_outcome(state: AskState) -> tuple[str, str | None]:
    run = state.get("code_run")
    if run is not None and run.ok:
        return "ok", None
    sql, code = state.get("sql"), state.get("code")
    verdict, code_check = state.get("check"), state.get("code_check")
    problems = []
    if not sql:
        problems.append("The reply contained no SQL.")
    if not code:
        problems.append("The reply contained no Python code.")
    if verdict is not None and not verdict.ok:
        problems.append("SQL: " + "; ".join(i.message for i in verdict.issues))
    if code_check is not None and not code_check.ok:
        problems.append("Python: " + "; ".join(str(i) for i in code_check.issues))
    if problems:
        refused = (verdict is not None and not verdict.ok) or (
            code_check is not None and not code_check.ok
        )
        return ("refused" if refused else "no_sql"), " ".join(problems)
    if state.get("error") is not None:
        diagnosis = state.get("diagnosis")
        timed_out = diagnosis is not None and diagnosis.category is Category.timeout
        return ("timeout" if timed_out else "error"), _error_text(state["error"])
    execution = state.get("execution")
    if execution is not None and execution.truncated:
        limit = state.get("fallback_row_limit", state["row_limit"])
        return "error", f"The SELECT returned more than {limit} rows."
    if run is not None and run.error is not None:
        return ("timeout" if run.error.kind == "timeout" else "error"), str(run.error)
    return "error", None


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
    diff = sql_diff(previous_sql, state.get("sql")) if same_phase and state.get("sql") else None
    if state["phase"] == "fallback" and same_phase:
        diff = _with_code_diff(diff, same_phase[-1].code, state.get("code"))
    attempt = Attempt(
        number=state["attempt"],
        sql=state.get("sql"),
        outcome=outcome,
        category=diagnosis.category.value if diagnosis is not None and outcome != "ok" else None,
        error=error,
        feedback=diagnosis.feedback if (feedback_sent and diagnosis is not None) else None,
        suggestions=list(diagnosis.suggestions) if diagnosis is not None else [],
        diff=diff,
        timings=dict(state.get("timings") or {}),
        reply=state.get("reply") or "",
        phase=state["phase"],
        retryable=diagnosis.retryable if diagnosis is not None else True,
        code=state.get("code") if state["phase"] == "fallback" else None,
    )
    _log_attempt(attempt, state["max_attempts"])
    return attempt


def _with_code_diff(sql_change: str | None, before: str | None, after: str | None) -> str:
    """The SQL diff plus how many lines of the pandas code changed."""
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


def _log_attempt(a: Attempt, max_attempts: int) -> None:
    log.info(
        "[attempt %d/%d] %s%s%s",
        a.number,
        max_attempts,
        "fallback " if a.phase == "fallback" else "",
        a.outcome,
        f" ({a.category})" if a.category else "",
    )
    log.info("[attempt %d/%d] SQL: %s", a.number, max_attempts, a.sql)
    if a.code:
        log.info("[attempt %d/%d] Python: %s", a.number, max_attempts, a.code)
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


def start_fallback(state: AskState, ctx: Context) -> dict:
    """Records the last SQL attempt and enters the fallback: its attempt counter restarts."""
    done = close_attempt(state, feedback_sent=False)
    log.info("[fallback] %d SQL attempt(s) failed: simple SELECT + pandas next", done.number)
    _prepare_code_runner(ctx)
    return {
        "attempts": (*state["attempts"], done),
        "phase": "fallback",
        "sql_stop_reason": "max_attempts",
        "attempt": 1,
        **{f: None for f in CURRENT_FIELDS},
    }


def _prepare_code_runner(ctx: Context) -> None:
    """Lets the code runner get ready (start its worker process) while the model writes."""
    prepare = getattr(ctx.code_runner, "prepare", None)
    if callable(prepare):
        prepare()


def answered(state: AskState) -> bool:
    """Whether the attempt in progress produced the answer (in its phase)."""
    if state["phase"] == "fallback":
        run = state.get("code_run")
        return run is not None and run.ok
    return state.get("execution") is not None


def finish(state: AskState, ctx: Context) -> dict:
    """Records the last attempt and why the run stopped."""
    done = close_attempt(state, feedback_sent=False)
    if state.get("model_error"):
        reason = "model_error"
    elif answered(state):
        reason = "success"
    else:
        reason = decide(state)
    log.info("[end] %s after %d attempt(s)", reason, done.number)
    return {"attempts": (*state["attempts"], done), "stop_reason": reason}
