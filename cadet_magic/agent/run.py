"""The loop: run the nodes, follow the routes, emit an event per step and one at the end
(:mod:`cadet_magic.agent.events`).

Example (a scripted model and stdlib sqlite3):
    >>> import sqlite3
    >>> from cadet_magic.db.sqlite import SQLiteRunner
    >>> con = sqlite3.connect(":memory:")
    >>> _ = con.execute("CREATE TABLE t (x INTEGER)"); _ = con.execute("INSERT INTO t VALUES (1), (2)")
    >>> class Model:
    ...     def invoke(self, messages):
    ...         return type("Reply", (), {"content": "```sql\\nSELECT sum(x) AS s FROM t\\n```"})()
    >>> r = run_agent("What is the total?", model=Model(), runner=SQLiteRunner(con))
    >>> r.ok, r.rows, len(r.attempts)
    (True, [(3,)], 1)
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

from cadet_magic.agent import fallback_phase, pipeline, routes, steps, vote_phase
from cadet_magic.agent.events import AttemptProvisional, Event, RunDone, StepDone
from cadet_magic.agent.inputs import RunInputs
from cadet_magic.agent.phase_spec import Phases, PhaseSpec, named
from cadet_magic.agent.phases import FALLBACK_PHASE, PHASES, SQL_PHASE
from cadet_magic.agent.read_only import read_only_note
from cadet_magic.agent.state import AskState, initial_state
from cadet_magic.kinds import StepName
from cadet_magic.options import AskOptions, merged
from cadet_magic.provenance import build as build_provenance
from cadet_magic.result import AskResult, Attempt, Phase
from cadet_magic.runner import Runner, target_of
from cadet_magic.schema.structure import Schema
from cadet_magic.text import first_line
from cadet_magic.vote.default_size import candidates_for


def without_generate(phase: PhaseSpec) -> PhaseSpec:
    """``phase`` for a rerun: its attempt without the ``generate`` step (the query is known, no
    model is called), with the same checks and runners. A rerun runs it alone (once: no phase
    follows it to hand over to)."""
    steps = tuple(s for s in phase.steps if s.name != StepName.generate)
    return dataclasses.replace(phase, steps=steps)


#: A rerun of an SQL answer: its recorded SQL checked, run read-only and its result checked.
RERUN_SQL = without_generate(SQL_PHASE)
#: A rerun of a fallback answer: its recorded SELECT and pandas code checked and run (the
#: SELECT on the read-only runner, the code in the confined worker).
RERUN_FALLBACK = without_generate(FALLBACK_PHASE)


def _anticipate(
    phases: Phases, step: StepName, state: AskState, phase: PhaseSpec, ctx: steps.Context
) -> None:
    """After a failed attempt that the next phase may follow, the next phase gets ready (the
    fallback's code runner starts its worker) while the model writes the next attempt."""
    if step != StepName.diagnose or not phase.ending.hands_over(state):
        return
    nxt = routes.following(phases, phase, state, answered=False)
    if nxt is not None and nxt.entry.prepare:
        nxt.entry.prepare(ctx)


def progress(step: StepName, state: AskState, elapsed: float, spec: PhaseSpec) -> Event:
    """The event after ``step``: where the run is (``spec``: the declaration of the phase it
    is in) and, while an attempt is in progress, its provisional record."""
    phase, number = Phase(state.phase), state.attempt
    where = (
        step,
        phase,
        number,
        spec.ending.limit(state),
        state.target.name or "",
        state.connection,
    )
    recorded = any(a.phase == phase and a.number == number for a in state.attempts)
    if step == StepName.read_schema or recorded:
        return StepDone(*where, state.attempts, elapsed)
    return AttemptProvisional(*where, state.attempts, elapsed, spec.attempt.provisional(state))


def run_agent(
    question: str,
    *,
    model: Any,
    runner: Runner,
    options: AskOptions | None = None,
    code_runner: Callable[..., Any] | None = None,
    frame_maker: Callable[[list[str], list[tuple]], Any] | None = None,
    schema: Schema | None = None,
    on_event: Callable[[Event], None] | None = None,
    inputs: RunInputs | None = None,
    sampler: Callable[..., list[Any]] | None = None,
    **overrides: Any,
) -> AskResult:
    """Answers ``question`` with SQL on ``runner``, retrying with feedback up to ``max_attempts``.

    ``options`` is an :class:`AskOptions` (default: its defaults); ``overrides`` are option
    names such as ``max_attempts=2`` applied on top. ``options.model`` is not read: ``model`` is the
    loaded chat model.

    When every SQL attempt failed on a retryable error and ``fallback`` is set, the model is
    asked once per fallback attempt for a simple SELECT plus pandas code (run by
    ``code_runner(code, df, timeout=..., memory=..., unconfined=..., row_limit=...,
    result_bytes=...)``, default :func:`cadet_magic.fallback.code_runner.run_fallback_code`: an
    isolated worker process, in-process on Pyodide; ``df`` made from the SELECT's rows by
    ``frame_maker(columns, rows)``, default :func:`cadet_magic.fallback.in_process.make_frame`) with
    its own ``max_attempts``; the fallback SELECT may fetch
    ``fallback_row_limit`` rows and its code allocate ``fallback_memory`` bytes.
    Every result holds at most about ``result_bytes`` bytes of values (then it is truncated).
    Each model call may take ``model_timeout`` seconds at most (None: no limit of ours).

    ``inputs`` (a :class:`~cadet_magic.agent.inputs.RunInputs`) is what the run is given
    besides: the model's label, the prompt's preamble (a follow-up's previous answer, kept
    examples; see :mod:`cadet_magic.conversation`), what the provenance records of them, the
    answer's number in the session. With ``inputs.rerun`` (a recorded answer) the run is a
    rerun: the phase runs without its ``generate`` step (:data:`RERUN_SQL`), so that SQL goes
    through the same check, runner and result check as the model's would, once, and ``model``
    is never called; with the recorded pandas code too, a fallback answer's SELECT and code run
    through the fallback phase's checks and runners (:data:`RERUN_FALLBACK`).

    With ``candidates`` above 1 the vote follows the SQL phase (:mod:`.vote_phase`): more
    answers sampled from the first prompt, each checked and run like an attempt, the answer
    most of them give; ``sampler(messages, count=, seed=, temperature=)`` draws sampled
    replies from a model that cannot itself (the edge's
    :func:`cadet_magic.llm.sampling.sampler_for`).
    """
    # a stand-in's replies are a script: it votes only when asked to. A stand-in declares
    # itself (``cadet_scripted``), or the edge that loaded it says so (``inputs.scripted``)
    inputs = inputs if inputs is not None else RunInputs()
    recorded = inputs.rerun
    stand_in = inputs.scripted or bool(getattr(model, "cadet_scripted", False))
    opts = candidates_for(merged(options, **overrides), stand_in)
    phases: Phases = PHASES
    if recorded is not None:
        opts = opts.replace(max_attempts=1)
        phases = (RERUN_SQL if recorded.code is None else RERUN_FALLBACK,)
    ctx = steps.Context(
        model=model,
        runner=runner,
        schema=schema,
        code_runner=code_runner,
        frame_maker=frame_maker,
        preamble=inputs.preamble,
        rerun=recorded is not None,
        sampler=sampler,
    )
    state = initial_state(
        question, target=target_of(runner), connection=getattr(runner, "label", ""), options=opts
    )
    first = phases[0]
    state = state.replace(phase=first.name, work=first.attempt.begin(1))
    if recorded is not None:
        state = state.with_work(sql=recorded.sql)
        if recorded.code is not None:
            fallback_phase.prepare(ctx)
            state = state.with_work(code=recorded.code)
    start = time.perf_counter()
    step = StepName.read_schema
    max_steps = 20 * (opts.max_attempts + (opts.candidates or 1) + 2)
    for _ in range(max_steps):
        phase = named(phases, state.phase)
        run = (
            steps.read_schema
            if step == StepName.read_schema
            else pipeline.node(phases, phase, step)
        )
        state = run(state, ctx)
        if on_event is not None:
            now = named(phases, state.phase)
            on_event(progress(step, state, time.perf_counter() - start, now))
        _anticipate(phases, step, state, phase, ctx)
        step = routes.route(phases, phase, step, state)
        if step == StepName.end:
            break
    else:  # pragma: no cover - the routes guarantee termination
        raise RuntimeError("agent did not terminate")
    elapsed = time.perf_counter() - start
    result = to_result(state, named(phases, state.phase), ctx, elapsed, inputs)
    if on_event is not None:
        on_event(RunDone(result, elapsed))
    return result


def truncation_note(why: str, state: AskState) -> str:
    """Why an answer was cut, in the words the displays show.

    Example:
        >>> truncation_note("bytes", initial_state("q", target="sqlite"))
        'truncated at the 64 MiB result budget (AskMagic.result_bytes): more rows exist'
    """
    if why == "bytes":
        mib = state.options.result_bytes / 2**20
        return (
            f"truncated at the {mib:g} MiB result budget (AskMagic.result_bytes): more rows exist"
        )
    return "truncated at the row limit: more rows exist"


def to_result(
    state: AskState,
    phase: PhaseSpec,
    ctx: steps.Context,
    elapsed: float,
    inputs: RunInputs,
) -> AskResult:
    """The final state as an :class:`AskResult`, built once (rows as plain tuples; the edge adds
    a DataFrame for SQL answers; a fallback answer is already one); ``phase``: the one the run
    ended in; ``inputs``: what the run was given (its label, provenance, number, rerun)."""
    answer = state.answer
    execution = answer.execution if answer is not None else state.work.execution
    attempts = [a for a in state.attempts if a.phase == Phase.sql]
    candidates = [a for a in state.attempts if a.phase == Phase.vote]
    row_limit = state.options.row_limit
    fallback = None
    df = None
    if state.phase == Phase.fallback:
        fallback, df = fallback_phase.fallback_result(state)
        ok = fallback.ok
        frame = df
        columns = [str(c) for c in frame.columns] if ok else []
        rows = list(frame.head(row_limit).itertuples(index=False, name=None)) if ok else []
        truncated = ok and len(frame) > row_limit
        if truncated:
            df = frame.head(row_limit)
    else:
        ok = execution is not None
        columns = list(execution.columns) if execution is not None else []
        rows = list(execution.rows) if execution is not None else []
        truncated = bool(execution.truncated) if execution is not None else False
    note = None
    if truncated:
        why = getattr(execution, "truncation", "") if fallback is None else "rows"
        note = truncation_note(why, state)
    if not ok:
        sql = None
    elif fallback is not None:
        sql = fallback.sql
    else:
        sql = (answer.sql if answer is not None else None) or attempts[-1].sql
    if not ok:
        warnings: list[str] = []
    elif answer is not None and answer.warnings:
        warnings = list(answer.warnings)
    else:
        warnings = list(phase.answer.warnings(state))
    agreement, competing, uncertain = (
        vote_phase.outcome(state) if ok and fallback is None else (None, [], False)
    )
    # no clear lead: the answer names the readings and asks the user to choose
    asking = ok and fallback is None and state.options.ask_readings
    readings = vote_phase.readings(state) if asking else ()
    fb_attempts = list(fallback.attempts) if fallback is not None else []
    draft = AskResult(
        question=state.question,
        ok=ok,
        sql=sql,
        df=df,
        columns=columns,
        rows=rows,
        truncated=truncated,
        truncation_note=note,
        attempts=attempts,
        fallback=fallback,
        stop_reason=state.stop_reason,
        model=inputs.model_label,
        scripted=inputs.scripted,
        dialect=state.target.name,
        connection=state.connection,
        elapsed=elapsed,
        model_calls=ctx.model_calls,
        warnings=warnings,
        candidates=candidates,
        agreement=agreement,
        competing=competing,
        uncertain=uncertain,
        readings=readings,
        asks=bool(readings),
        # a request to change data is answered read-only, and says so
        notice=read_only_note(state.question, [*attempts, *candidates, *fb_attempts])
        if ok
        else None,
        prompts=list(ctx.prompts),
    )
    provenance = build_provenance(
        draft, schema=state.schema, share=state.options.share, extra=inputs.context_record()
    )
    if inputs.number is not None and draft.final_sql:
        provenance["number"] = inputs.number
    recorded = inputs.rerun
    if recorded is None:
        message = None if ok else failure_message(draft)
    else:
        now = (provenance.get("database") or {}).get("schema_fingerprint")
        changed = bool(recorded.schema_fingerprint and now and recorded.schema_fingerprint != now)
        message = None if ok else rerun_failure(draft, changed)
        if ok and changed:
            warnings = [*warnings, SCHEMA_CHANGED]
    return dataclasses.replace(draft, message=message, provenance=provenance, warnings=warnings)


#: The warning of a rerun whose recorded SQL still runs on a schema that changed since.
SCHEMA_CHANGED = (
    "The schema changed since this SQL was recorded; it still runs, but check the "
    "answer (or run %%ask without --rerun to ask the model again)."
)


def rerun_failure(result: AskResult, changed: bool) -> str:
    """The one line a rerun that no longer runs shows (``changed``: the schema changed since the
    answer was recorded)."""
    last = result.all_attempts[-1] if result.all_attempts else None
    what = (last.category or last.outcome) if last is not None else "failed"
    if last is not None and last.error:
        what += f" ({first_line(last.error, 160)})"
    since = " (the schema changed since it was recorded)" if changed else ""
    return (
        f"The recorded SQL no longer runs here{since}: {what}. Run %%ask without --rerun "
        "to ask the model again."
    )


#: The browser kernel (Pyodide): what to do without pandas differs there.
IN_BROWSER = sys.platform == "emscripten"

_REASONS = {
    "max_attempts": "all {n} attempt(s) failed",
    "unchanged_sql": "the model wrote the same SQL again, so retrying would not help",
    "not_retryable": "the error cannot be fixed by rewriting the query",
    "model_error": "the model could not be called",
}


def _shorten(text: str, width: int = 200) -> str:
    """The first line of ``text``, cut at a word boundary with an ellipsis when too long."""
    return first_line(text, width, at_word=True)


def _attempt_line(a: Attempt, label: str) -> str:
    what = a.category or a.outcome
    return f"  {label} {a.number}: {what}: {_shorten(a.error or '')}".rstrip(": ")


def failure_message(result: AskResult) -> str:
    """The ask-for-clarification summary: what was tried, why it failed, what to do."""
    fallback = result.fallback
    tried = result.all_attempts  # in the order they ran: SQL, the vote's candidates, fallback
    last = tried[-1] if tried else None
    if result.stop_reason == "model_error" and last is not None and fallback is None:
        return last.error or "The model call failed."
    reason = _REASONS.get(result.stop_reason or "", "the question could not be answered")
    if fallback is not None:
        n = len(fallback.attempts)
        lines = [
            f"No answer: all {len(result.attempts)} SQL attempt(s) failed, and the fallback "
            f"(simple SELECT + pandas) failed too: {reason.format(n=n)}."
        ]
    else:
        lines = [f"No answer: {reason.format(n=len(result.attempts))}."]
    for a in result.attempts:
        lines.append(_attempt_line(a, "Attempt"))
    if fallback is not None:
        for a in fallback.attempts:
            lines.append(_attempt_line(a, "Fallback attempt"))
    if last is not None and last.suggestions:
        lines.append(f"Closest real names: {', '.join(last.suggestions[:5])}.")
    if (
        result.stop_reason == "not_retryable"
        and last is not None
        and last.category == "connection_error"
    ):
        lines.append("Check that the database is reachable, reconnect with %sql, then ask again.")
    elif last is not None and "fallback_unconfined" in (last.error or ""):
        lines.append(first_line(last.error, None))  # why the code did not run, and how
    elif last is not None and last.category == "unavailable" and IN_BROWSER:
        lines.append(
            "This browser kernel has no pandas, so the fallback cannot run here, and an offline "
            "site cannot install it: rephrase the question with the table or column names you "
            "mean (the SQL path needs no pandas). A site that loads Pyodide's full distribution "
            "from its CDN can %pip install pandas first."
        )
    elif last is not None and last.category == "unavailable":
        lines.append(
            "Install pandas and pyarrow in this kernel (pip install pandas pyarrow) to let the "
            "fallback run (the line above says what failed), or rephrase the question."
        )
    elif result.stop_reason == "not_retryable":
        lines.append("Check the connection's permissions, then ask again.")
    elif result.stop_reason == "model_error":
        lines.append(
            "The model could not be called (the last line says why): check the model, its server "
            "and %config AskMagic.model_timeout, then run the cell again."
        )
    else:
        lines.append(
            "Try rephrasing the question with the table or column names you mean, "
            "or narrow it down (a time range, a specific table)."
        )
    return "\n".join(lines)
