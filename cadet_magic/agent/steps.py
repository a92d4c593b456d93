"""The building blocks every phase's steps use: the run's :class:`Context`, the model call
(:func:`ask_model`), the safety check (:func:`check_sql`), the SQL run (:func:`run_sql`), and
the run's first step (:func:`read_schema`).

A step takes the state and the context and returns the next state (a copy: the state is never
changed). The phases' own steps are in :mod:`cadet_magic.agent.sql_phase` and
:mod:`cadet_magic.agent.fallback_phase`; the control steps every phase shares (next attempt,
hand over, finish) in :mod:`cadet_magic.agent.pipeline`.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.agent.reply import content_text, extract_sql, usage_of
from cadet_magic.agent.state import AskState, Reply
from cadet_magic.errors import (
    FailedTransactionError,
    ModelCallError,
    ModelCallInterrupted,
    ResultTooLarge,
)
from cadet_magic.kinds import StepName
from cadet_magic.runner import Runner
from cadet_magic.schema.link import link
from cadet_magic.schema.render import prompt_representation, with_shown_comments
from cadet_magic.schema.share import shared_schema, with_stats
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import validate_sql
from cadet_magic.text import error_text, first_line

log = logging.getLogger("cadet_magic")


@dataclass
class Context:
    """What the steps need besides the state: the model and the runner, passed in.

    ``code_runner(code, df, timeout=..., memory=..., ...)`` runs the fallback phase's pandas code and
    ``frame_maker(columns, rows)`` turns its SELECT's rows into ``df`` (None: that phase's
    defaults, see :mod:`cadet_magic.agent.fallback_phase`). The options are the state's.
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
    #: How the vote draws sampled replies from ``model`` when the model cannot itself
    #: (``sampler(messages, count=, seed=, temperature=)``: a LangChain model's, given by the
    #: edge, :func:`cadet_magic.llm.sampling.sampler_for`); None: ``model.cadet_sample``, else
    #: one ``invoke`` per candidate.
    sampler: Callable[..., list[Any]] | None = None
    #: Sampled replies drawn in one request and not used yet (the vote takes them in order).
    drawn: list[Any] = field(default_factory=list)


def invoke_within(model: Any, messages: list[tuple[str, str]], timeout: float | None) -> Any:
    """``model.invoke(messages)``, waited for at most ``timeout`` seconds.

    The call runs on a daemon thread while this thread waits, so a model that never answers
    cannot hang the cell (the provider client's own timeout ends the thread later) and an
    interrupt while waiting stops the wait. Where threads cannot start (Pyodide) or without a
    timeout, the call runs here, bounded only by the client's own timeout. A model that runs in
    this process and whose calls always end (``cadet_in_process``: llama.cpp's, bounded by its
    reply's token limit) is waited for as long as it takes: abandoning it would not stop it, only
    leave the CPU busy with a reply nobody reads; an interrupt still stops the wait.
    """
    if timeout is None or sys.platform == "emscripten":  # Pyodide cannot start a thread
        return model.invoke(messages)
    if getattr(model, "cadet_in_process", False):
        timeout = float("inf")
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


def call_model(
    model: Any, messages: list[tuple[str, str]], timeout: float | None = None, owner: Any = None
) -> Reply:
    """Invokes the model, waiting at most ``timeout`` seconds: its reply's text and the tokens
    its provider reported. Any failure becomes one clear :class:`ModelCallError` line (never
    quoting a key ``model``, or ``owner`` when ``model`` calls it, holds), an interrupt while
    waiting :class:`ModelCallInterrupted`."""
    try:
        reply = invoke_within(model, messages, timeout)
    except ModelCallError:
        raise
    except Exception as e:
        from cadet_magic.text import redact, secrets_of

        # Provider errors may quote the request or a server's echo of it: never the key.
        held = secrets_of(model if owner is None else owner)
        first = first_line(redact(str(e), held), 300, mark="").rstrip(".")
        raise ModelCallError(
            f"The model call failed ({type(e).__name__}): {first}. "
            "Check the model name, API key, network and rate limits, then run the cell again."
        ) from e
    return Reply(content_text(getattr(reply, "content", reply)), usage_of(reply))


#: Candidates of the vote drawn in the answer's own call where the model decodes several replies
#: together (the in-kernel model): the vote's first round.
FIRST_ROUND = 1
#: The temperature the vote's candidates are sampled at (measured: docs/benchmarks-history.md,
#: "the vote's settings"; ``vote_phase.TEMPERATURE`` names it there).
CANDIDATE_TEMPERATURE = 0.7


def answer_and_sample(ctx: Context) -> Callable[..., list[Any]] | None:
    """How the model gives the answer and sampled candidates in one call
    (``f(messages, count=, seed=, temperature=)``: the answer first), None where it cannot."""
    own = getattr(ctx.model, "cadet_answer_and_sample", None)
    return own if callable(own) and getattr(ctx.model, "cadet_batched", False) else None


class _WithCandidates:
    """``invoke(messages)``: the answer, the candidates drawn with it kept in ``ctx.drawn``."""

    def __init__(
        self, ctx: Context, call: Callable[..., list[Any]], count: int, temperature: float
    ) -> None:
        self.ctx, self.call, self.count, self.temperature = ctx, call, count, temperature
        self.cadet_in_process = bool(getattr(ctx.model, "cadet_in_process", False))

    def invoke(self, messages: Any) -> Any:
        replies = self.call(messages, count=self.count, seed=1, temperature=self.temperature)
        if not replies:
            raise ModelCallError("The model returned no reply.")
        self.ctx.drawn = list(replies[1:])
        return replies[0]


def ask_model(
    state: AskState,
    ctx: Context,
    messages: list[tuple[str, str]],
    candidates: int = 0,
    temperature: float = 0.0,
) -> AskState:
    """Calls the model with ``messages``: the attempt gets the reply and its SQL, or the model's
    error; with the tokens the provider reported and the seconds the call took. ``candidates``
    sampled replies (at ``temperature``, seeds from 1: the vote's first) are drawn in the same
    call where the model can (:func:`answer_and_sample`), kept in ``ctx.drawn``."""
    t0 = time.perf_counter()
    ctx.prompts.append([{"role": role, "content": text} for role, text in messages])
    call = answer_and_sample(ctx) if candidates > 0 else None
    model: Any = ctx.model if call is None else _WithCandidates(ctx, call, candidates, temperature)
    try:
        reply = call_model(model, messages, state.options.model_timeout, owner=ctx.model)
    except ModelCallError as e:
        seconds = time.perf_counter() - t0
        failed = state.with_work(model_error=str(e), reply=Reply(seconds=seconds), sql=None)
        return failed.timed(StepName.generate, seconds)
    finally:
        ctx.model_calls += 1
    seconds = time.perf_counter() - t0
    answered = Reply(reply.text, reply.tokens, seconds)
    return state.with_work(reply=answered, sql=extract_sql(reply.text)).timed(
        StepName.generate, seconds
    )


def run_sql(state: AskState, ctx: Context, limit: int) -> AskState:
    """Runs the attempt's checked SQL fetching ``limit`` rows at most: the attempt gets the
    result, or the engine's error as data for the diagnosis."""
    t0 = time.perf_counter()
    try:
        options = state.options
        query = state.work.query
        assert query is not None  # the route executes only checked SQL
        result = ctx.runner.run(
            query, limit=limit, timeout=options.timeout, max_bytes=options.result_bytes
        )
    except (FailedTransactionError, ResultTooLarge):
        raise  # one line for the user: nothing the model can fix
    except Exception as e:  # noqa: BLE001 - the engine's error is data for the diagnosis
        failed = state.with_work(execution=None, error=e)
        return failed.timed(StepName.execute, time.perf_counter() - t0)
    ran = state.with_work(execution=result, error=None)
    return ran.timed(StepName.execute, time.perf_counter() - t0)


def check_sql(state: AskState, ctx: Context) -> AskState:
    """Runs the safety check on the attempt's SQL (every phase's SQL goes through it)."""
    t0 = time.perf_counter()
    verdict = validate_sql(state.work.sql or "", state.target)
    checked = state.with_work(check=verdict)
    query = verdict.query
    if query is not None and query.double_quoted:
        checked = checked.with_work(sql=query.written)  # the user gets the strings in single quotes
    return checked.timed(StepName.check, time.perf_counter() - t0)


def read_schema(state: AskState, ctx: Context) -> AskState:
    """The run's first step: takes the schema once per question (the runners cache it per
    connection), what the prompt shows of it, and the run's target knowing its names (the
    tables, columns, functions and quoting the check and the diagnosis take from it)."""
    try:
        schema = ctx.schema if ctx.schema is not None else ctx.runner.schema()
    except (FailedTransactionError, ResultTooLarge):
        raise  # one line for the user: nothing the model can fix
    except Exception as e:  # noqa: BLE001 - the attempt will meet (and diagnose) the same error
        log.warning("[schema] could not be read: %s", error_text(e))
        schema = Schema()
    log.info("[schema] %d table(s)", len(schema.tables))
    target = state.target.with_schema(schema)
    allowed = state.options.allow_functions
    if allowed and target.functions is not None:  # the user's own choice, by name
        target = dataclasses.replace(target, functions=target.functions.allowing(allowed))
    shown = shared_view(schema, state, ctx, target)
    return state.replace(
        schema=schema,
        schema_text=link(
            shown,
            state.question,
            state.options.schema_budget,
            prompt_representation(),
        ).text,
        target=target,
    )


def shared_view(schema: Schema, state: AskState, ctx: Context, target: Target) -> Schema:
    """The schema as ``AskMagic.share`` lets the model see it (``stats`` reads its figures
    through the runner, each query passed by the safety check of ``target`` first)."""
    options = state.options
    shown = with_shown_comments(shared_schema(schema, options.share))
    if options.share != "stats" or not schema.tables or ctx.rerun:
        return shown  # (a rerun sends no prompt: no figures to read)

    def fetch(sql: str, timeout: float) -> list[tuple]:
        run = ctx.runner.run(sql, limit=1, timeout=min(timeout, options.timeout), max_bytes=2**16)
        return run.rows

    return with_stats(shown, fetch, lambda sql: validate_sql(sql, target))
