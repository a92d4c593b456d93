"""The SQL phase's steps (and the model call and SQL run the fallback phase's steps reuse).
Each takes the state (and the run's context) and returns a partial update.

Nodes never mutate the state they are given; the loop merges what they return. The control
steps every phase shares (next attempt, hand over, finish) are in :mod:`cadet_magic.agent.pipeline`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.agent.prompts import build_messages
from cadet_magic.agent.reply import content_text, extract_sql, usage_of
from cadet_magic.agent.state import AskState
from cadet_magic.diagnose.failures import NoSQL
from cadet_magic.diagnose.failures import diagnose as diagnose_failure
from cadet_magic.diagnose.repeat import repeated
from cadet_magic.errors import (
    FailedTransactionError,
    ModelCallError,
    ModelCallInterrupted,
    ResultTooLarge,
)
from cadet_magic.result import Phase, Tokens
from cadet_magic.runner import Runner
from cadet_magic.schema.link import link
from cadet_magic.schema.model import Schema
from cadet_magic.schema.share import shared_attempts, shared_schema, with_stats
from cadet_magic.sql.normalize import normalize_sql
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.validate import validate_sql
from cadet_magic.text import error_text, first_line

log = logging.getLogger("cadet_magic")


@dataclass
class Context:
    """What the nodes need besides the state: the model and the runner, passed in.

    ``code_runner(code, df, timeout=..., memory=..., ...)`` runs the fallback phase's pandas code and
    ``frame_maker(columns, rows)`` turns its SELECT's rows into ``df`` (None: that phase's
    defaults, see :mod:`cadet_magic.fallback.phase`). The options are the state's.
    """

    model: Any
    runner: Runner
    schema: Schema | None = None
    model_calls: int = 0
    code_runner: Callable[..., Any] | None = None
    frame_maker: Callable[[list[str], list[tuple]], Any] | None = None
    #: Whether the run is a rerun of recorded SQL (no ``generate`` step, no prompt).
    rerun: bool = False
    #: Every model call's messages, in order, as ``{"role", "content"}`` dicts.
    prompts: list[list[dict[str, str]]] = field(default_factory=list)
    #: Text added to the SQL prompt after the question (a follow-up's previous answer, kept
    #: examples), each part fenced as data by whoever made it.
    preamble: str = ""


def timed(state: AskState, step: str, seconds: float) -> dict[str, float]:
    """The attempt's step timings with ``step`` added (every phase's nodes record theirs)."""
    return {**(state.get("timings") or {}), step: seconds}


def _invoke(model: Any, messages: list[tuple[str, str]], timeout: float | None) -> Any:
    """``model.invoke(messages)``, waited for at most ``timeout`` seconds.

    The call runs on a daemon thread while this thread waits, so a model that never answers
    cannot hang the cell (the provider client's own timeout ends the thread later) and an
    interrupt while waiting stops the wait. Where threads cannot start (Pyodide) or without a
    timeout, the call runs here, bounded only by the client's own timeout.
    """
    if timeout is None or sys.platform == "emscripten":  # Pyodide cannot start a thread
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
            f"the limit, e.g. %config AskMagic.model_timeout = {max(300, 2 * timeout):g}, then "
            "run the cell again."
        )
    if "error" in box:
        raise box["error"]
    return box["reply"]


@dataclass(frozen=True)
class ModelReply:
    """A model call's reply text and the tokens its provider reported (None: none reported)."""

    text: str
    tokens: Tokens | None = None


def call_model(
    model: Any, messages: list[tuple[str, str]], timeout: float | None = None
) -> ModelReply:
    """Invokes the model, waiting at most ``timeout`` seconds; any failure becomes one clear
    :class:`ModelCallError` line, an interrupt while waiting :class:`ModelCallInterrupted`."""
    try:
        reply = _invoke(model, messages, timeout)
    except ModelCallError:
        raise
    except Exception as e:
        from cadet_magic.text import redact, secrets_of

        # Provider errors may quote the request or a server's echo of it: never the key.
        first = first_line(redact(str(e), secrets_of(model)), 300, mark="").rstrip(".")
        raise ModelCallError(
            f"The model call failed ({type(e).__name__}): {first}. "
            "Check the model name, API key, network and rate limits, then run the cell again."
        ) from e
    return ModelReply(content_text(getattr(reply, "content", reply)), usage_of(reply))


def read_schema(state: AskState, ctx: Context) -> dict:
    """Takes the schema once per question (the runners cache it per connection)."""
    try:
        schema = ctx.schema if ctx.schema is not None else ctx.runner.schema()
    except (FailedTransactionError, ResultTooLarge):
        raise  # one line for the user: nothing the model can fix
    except Exception as e:  # noqa: BLE001 - the attempt will meet (and diagnose) the same error
        log.warning("[schema] could not be read: %s", error_text(e))
        schema = Schema()
    log.info("[schema] %d table(s)", len(schema.tables))
    shown = shared_view(schema, state, ctx)
    return {
        "schema": schema,
        "schema_text": link(shown, state["question"], state["options"].schema_budget).text,
        "allowed_tables": schema.table_names() if schema.tables else None,
        "functions": schema.functions,
    }


def shared_view(schema: Schema, state: AskState, ctx: Context) -> Schema:
    """The schema as ``AskMagic.share`` lets the model see it (``stats`` reads its figures
    through the runner, each query passed by the safety check first)."""
    options = state["options"]
    shown = shared_schema(schema, options.share)
    if options.share != "stats" or not schema.tables or ctx.rerun:
        return shown  # (a rerun sends no prompt: no figures to read)
    tables, functions = schema.table_names(), schema.functions

    def fetch(sql: str, timeout: float) -> list[tuple]:
        run = ctx.runner.run(sql, limit=1, timeout=min(timeout, options.timeout), max_bytes=2**16)
        return run.rows

    return with_stats(
        shown,
        fetch,
        lambda sql: validate_sql(
            sql, state["dialect"], tables, functions, ansi_quotes=schema.ansi_quotes
        ),
    )


def generate(state: AskState, ctx: Context) -> dict:
    """Asks the model for SQL, with the earlier attempts and the feedback on a retry (as
    ``AskMagic.share`` lets the model see them)."""
    attempts = shared_attempts(
        [a for a in state["attempts"] if a.phase == state["phase"]], state["options"].share
    )
    messages = build_messages(
        state["question"], state["dialect"], state["schema_text"], attempts, ctx.preamble
    )
    return ask_model(state, ctx, messages)


def ask_model(state: AskState, ctx: Context, messages: list[tuple[str, str]]) -> dict:
    """Calls the model with ``messages``: the reply and its SQL, or the model's error; with the
    tokens the provider reported and the seconds the call took."""
    t0 = time.perf_counter()
    ctx.prompts.append([{"role": role, "content": text} for role, text in messages])
    try:
        reply = call_model(ctx.model, messages, state["options"].model_timeout)
    except ModelCallError as e:
        seconds = time.perf_counter() - t0
        return {
            "model_error": str(e),
            "reply": "",
            "sql": None,
            "tokens": None,
            "model_seconds": seconds,
            "timings": timed(state, "generate", seconds),
        }
    finally:
        ctx.model_calls += 1
    seconds = time.perf_counter() - t0
    return {
        "reply": reply.text,
        "sql": extract_sql(reply.text),
        "tokens": reply.tokens,
        "model_seconds": seconds,
        "timings": timed(state, "generate", seconds),
    }


def check(state: AskState, ctx: Context) -> dict:
    """Runs the safety check on the SQL."""
    t0 = time.perf_counter()
    schema = state.get("schema")
    verdict = validate_sql(
        state["sql"] or "",
        state["dialect"],
        state.get("allowed_tables"),
        state.get("functions"),
        columns={t.name: t.column_names() for t in schema.tables} if schema else None,
        ansi_quotes=getattr(schema, "ansi_quotes", False),
    )
    update: dict[str, Any] = {"check": verdict}
    query = verdict.query
    if query is not None and query.double_quoted:
        update["sql"] = query.written  # the user gets the strings in single quotes
    return {**update, "timings": timed(state, "check", time.perf_counter() - t0)}


def execute(state: AskState, ctx: Context) -> dict:
    """Runs the checked SQL on the user's connection (limited, timed, rolled back)."""
    return run_sql(state, ctx, state["options"].row_limit)


def run_sql(state: AskState, ctx: Context, limit: int) -> dict:
    """Runs the checked SQL fetching ``limit`` rows at most: the result, or the engine's error
    as data for the diagnosis."""
    t0 = time.perf_counter()
    try:
        options = state["options"]
        checked = state["check"]
        assert checked is not None  # the route executes only checked SQL
        result = ctx.runner.run(
            checked.sql, limit=limit, timeout=options.timeout, max_bytes=options.result_bytes
        )
    except (FailedTransactionError, ResultTooLarge):
        raise  # one line for the user: nothing the model can fix
    except Exception as e:  # noqa: BLE001 - the engine's error is data for the diagnosis
        return {
            "execution": None,
            "error": e,
            "timings": timed(state, "execute", time.perf_counter() - t0),
        }
    return {
        "execution": result,
        "error": None,
        "timings": timed(state, "execute", time.perf_counter() - t0),
    }


def repeated_attempt(state: AskState) -> tuple[int, bool] | None:
    """The earlier SQL attempt whose query this attempt writes again, up to formatting: its
    number and whether it is the previous attempt (else the model alternates); None.

    Example:
        >>> from cadet_magic.result import Attempt, Phase
        >>> a = [Attempt(1, "SELECT a FROM t", "error", phase=Phase.sql),
        ...      Attempt(2, "SELECT b FROM t", "error", phase=Phase.sql)]
        >>> repeated_attempt({"sql": "select a from t", "attempts": a, "dialect": None})
        (1, False)
        >>> repeated_attempt({"sql": "SELECT b  FROM t", "attempts": a, "dialect": None})
        (2, True)
    """
    sql = state.get("sql")
    previous = [a for a in state.get("attempts", ()) if a.phase == Phase.sql and a.sql]
    if not (sql and previous):
        return None
    dialect = state.get("dialect")
    mine = normalize_sql(sql, dialect)
    for a in reversed(previous):
        if normalize_sql(a.sql or "", dialect) == mine:
            return a.number, a is previous[-1]
    return None


def diagnose(state: AskState, ctx: Context) -> dict:
    """Works out why the attempt failed and what to tell the model (one :class:`Diagnosis`,
    through :func:`cadet_magic.diagnose.failures.diagnose`)."""
    t0 = time.perf_counter()
    verdict = state.get("check")
    where: dict[str, Any] = {
        "sql": state.get("sql"),
        "dialect": state["dialect"],
        "schema": state["schema"],
    }
    if not state.get("sql"):
        diagnosis = diagnose_failure(NoSQL(state.get("reply") or ""))
    elif verdict is not None and not verdict.ok:
        diagnosis = diagnose_failure(SafetyRefusal(verdict.issues), **where)
    else:
        # The diagnosis names functions as the model wrote them (the check's CheckedQuery
        # knows what it renamed).
        diagnosis = diagnose_failure(state["error"], **where)
    again = repeated_attempt(state)
    if again is not None and diagnosis.retryable:  # the same failed query again: say so
        diagnosis = repeated(
            diagnosis,
            state.get("sql"),
            again[0],
            last=again[1],
            schema=state["schema"],
            dialect=state["dialect"],
        )
    return {"diagnosis": diagnosis, "timings": timed(state, "diagnose", time.perf_counter() - t0)}
