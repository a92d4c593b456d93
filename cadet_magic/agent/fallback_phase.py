"""The fallback phase: a simple SELECT plus pandas code, after the SQL phase gave up.

The SQL phase hands over (its ``hand_over`` step) when every SQL attempt failed on an
error a rewrite could fix and the fallback is allowed; :func:`start` seeds this phase with the
SQL attempts (the model sees them, briefly) and restarts the attempt counter. Each attempt asks
for both blocks, checks the SELECT (the safety check, then the simple-SELECT rule) and the code
(its Python syntax tree), runs the SELECT, then the code on its rows. It retries with feedback
up to the same maximum; it never hands over again.

This module holds the phase's own steps (each returns the next state; they use the shared
model call, SQL run and attempt record of :mod:`cadet_magic.agent.steps` and
:mod:`cadet_magic.agent.record`), the record of its attempt in progress (:class:`CodeWork`) and
the tests that let an attempt go on; the phase itself is a declaration
(:data:`cadet_magic.agent.phases.FALLBACK_PHASE`) run by the one attempt pipeline
(:mod:`cadet_magic.agent.pipeline`: routes, retry policy, ``finish``).

Example:
    >>> from cadet_magic.agent.state import initial_state
    >>> s = initial_state("q", target="sqlite").replace(work=CodeWork(code="result = df"))
    >>> has_blocks(s), has_sql(s)
    (True, False)
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cadet_magic.agent import record
from cadet_magic.agent.fallback_prompts import (
    FrameColumn,
    build_fallback_messages,
    build_pandas_messages,
    frame_text,
)
from cadet_magic.agent.reply import extract_code
from cadet_magic.agent.state import AskState, Work
from cadet_magic.agent.steps import Context, ask_model, check_sql, run_sql
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
from cadet_magic.diagnose.shared import with_shared_feedback
from cadet_magic.fallback.code_check import CodeCheck
from cadet_magic.fallback.code_check import check_code as check_python
from cadet_magic.fallback.in_process import CodeError, CodeRun
from cadet_magic.fallback.rows_select import MAX_SCHEMA_TABLES, FetchPlan, fetch_select
from cadet_magic.kinds import StepName
from cadet_magic.result import Attempt, Fallback, Phase, StopReason
from cadet_magic.result_check.probe_database import EMPTY_WARNING
from cadet_magic.schema.queried import tables_read
from cadet_magic.schema.share import shared_attempts
from cadet_magic.sql.normalize import sql_diff
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.simple import check_simple_select
from cadet_magic.sql.validate import Validation

log = logging.getLogger("cadet_magic")


# -- the phase's state -------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeWork(Work):
    """A fallback attempt in progress: the fields of every attempt (its SELECT's), and the
    pandas code, its check's verdict and its run."""

    code: str | None = None
    code_check: CodeCheck | None = None
    code_run: CodeRun | None = None
    #: The product's SELECT, when it wrote one (the model then wrote only the code).
    fetched: FetchPlan | None = None
    #: ``df``'s columns and dtypes, as the prompt showed them (for the feedback on the code).
    dtypes: tuple[tuple[str, str], ...] = ()


def code_work(state: AskState) -> CodeWork:
    """The fallback attempt in progress (the phase's own record of it)."""
    work = state.work
    assert isinstance(work, CodeWork)  # the fallback phase starts every attempt as one
    return work


#: Why the SQL phase handed over when it did not give up early (the state's ``entry``).
HANDED_OVER_AFTER = StopReason.max_attempts


# -- entering the phase ------------------------------------------------------------------------


def prepare(ctx: Context) -> None:
    """Lets the code runner get ready (start its worker process) while the model still writes
    SQL: called by the runner after a failed SQL attempt when this phase may follow."""
    prepare = getattr(code_runner(ctx), "prepare", None)
    if callable(prepare):
        prepare()


def code_runner(ctx: Context) -> Callable[..., CodeRun]:
    """The run's code runner (default :func:`cadet_magic.fallback.code_runner.run_fallback_code`: a
    confined worker process, in-process on Pyodide; ``memory=`` is passed when it takes it)."""
    if ctx.code_runner is not None:
        return ctx.code_runner
    from cadet_magic.fallback.code_runner import run_fallback_code

    return run_fallback_code


def frame_maker(ctx: Context) -> Callable[[list[str], list[tuple]], Any]:
    """The run's ``df`` builder (default :func:`cadet_magic.fallback.in_process.make_frame`, which
    imports pandas only then)."""
    if ctx.frame_maker is not None:
        return ctx.frame_maker
    from cadet_magic.fallback.in_process import make_frame

    return make_frame


def repeated_itself(state: AskState) -> bool:
    """Whether the SQL phase ended because the model wrote its failed SQL again after being
    told it repeats itself (the retry policy's unchanged guard)."""
    sql = [a for a in state.attempts if a.phase == Phase.sql]
    if state.phase == Phase.sql:  # the SQL phase decides on its attempt in progress
        return (
            len(sql) >= 2
            and record.same_query(state, sql[-1])
            and record.same_query(state, sql[-2], later=sql[-1])
        )
    return (
        len(sql) >= 3
        and record.same_query(state, sql[-2], later=sql[-1])
        and record.same_query(state, sql[-3], later=sql[-2])
    )


def enters(state: AskState) -> bool:
    """Whether the fallback runs after the phases before it found no answer: when the option
    allows it, and, when the model writes the fallback's SELECT (:data:`PRODUCT_SELECT` off),
    not after a model that kept writing the same failed SQL. Its SELECT then repeated that SQL
    too: on the evaluation's questions (the real local model, the fixed Spider sample, targeted
    and raw feedback) the fallback answered none of the 79 questions it ran on after that,
    while spending more than one call on each. The product's own SELECT repeats nothing, and
    measured by hand on the fallback benchmark, the local model's hand-written median on
    SQLite failed, was written again twice (``unchanged_sql``), and the vote then answered
    with ``AVG`` named ``median_order_value``."""
    if not state.options.fallback:
        return False
    return PRODUCT_SELECT or not repeated_itself(state)


def start(state: AskState, ctx: Context) -> AskState:
    """Enters the fallback, seeded with the SQL attempts in ``state``: its attempt counter
    restarts and its code runner gets ready while the model writes."""
    sql_attempts = [a for a in state.attempts if a.phase == Phase.sql]
    log.info("[fallback] %d SQL attempt(s) failed: simple SELECT + pandas next", len(sql_attempts))
    prepare(ctx)
    return state.replace(phase=Phase.fallback, work=CodeWork(1))


# -- steps -------------------------------------------------------------------------------------


def generate(state: AskState, ctx: Context) -> AskState:
    """Asks the model for the attempt's pandas code. The product writes the simple SELECT
    itself when it can (:func:`fetch`: every column of the tables the SQL attempts read, joined
    along their foreign keys) and runs it first, so the model writes only pandas, shown what
    ``df`` holds; otherwise the model writes both blocks, as before."""
    fetched = fetch(state, ctx)
    if fetched is not None:
        return ask_pandas(fetched, ctx)
    return ask_both(state, ctx)


#: Whether the product writes the fallback's SELECT when it can (the model then writes only
#: pandas). Measured against the model writing both blocks on the fallback benchmark
#: (its ``model`` arm, ``python -m benchmarks.fallback --arms model``, turns it off).
PRODUCT_SELECT = True


def fetch(state: AskState, ctx: Context) -> AskState | None:
    """The attempt with the product's SELECT checked and run (all its rows fetched), or None
    when there is none: :data:`PRODUCT_SELECT` off, no table known, or it was refused, failed
    or fetched too many rows."""
    if not PRODUCT_SELECT:
        return None
    reads = [t for a, t in zip(state.attempts, state.tables, strict=False) if a.phase == Phase.sql]
    tables = tables_read(reads)
    if not tables and len(state.schema.tables) <= MAX_SCHEMA_TABLES:
        tables = [t.name for t in state.schema.tables]
    plan = fetch_select(state.schema, tables, state.target) if tables else None
    if plan is None:
        return None
    checked = check(state.with_work(sql=plan.sql), ctx)
    if not checked.work.checked:
        return None
    ran = execute(checked, ctx)
    execution = ran.work.execution
    if execution is None or execution.truncated:
        return None
    return ran.with_work(fetched=plan)


def ask_pandas(state: AskState, ctx: Context) -> AskState:
    """The pandas-only prompt: the question, the SQL attempts in brief, what ``df`` holds."""
    work = code_work(state)
    plan, execution = work.fetched, work.execution
    assert plan is not None and execution is not None  # fetched by the caller
    try:
        df = frame_maker(ctx)(list(execution.columns), list(execution.rows))
    except ImportError:
        df = None  # the code cannot run here either: run_code says so
    share = state.options.share
    columns = frame_columns(df, plan, examples=share == "samples") if df is not None else []
    rows = len(execution.rows) if share != "schema" else None
    frame = frame_text(rows, columns, plan.sql, plan.tables)
    context = f"\n\n{ctx.preamble.strip()}" if ctx.preamble.strip() else ""
    messages = build_pandas_messages(
        state.question + context,
        frame,
        shared_attempts([a for a in state.attempts if a.phase == Phase.sql], share),
        shared_attempts(record.same_phase(state), share),
    )
    sql = work.sql
    answered = ask_model(state, ctx, messages)
    reply = answered.work.reply
    dtypes = tuple((c.name, c.dtype) for c in columns)
    answered = answered.with_work(sql=sql, dtypes=dtypes)  # the model wrote no SQL
    if answered.work.model_error or reply is None:
        return answered
    return answered.with_work(code=extract_code(reply.text))


#: First distinct values of a column the prompt shows.
EXAMPLES = 3


def frame_columns(df: Any, plan: FetchPlan, examples: bool = True) -> list[FrameColumn]:
    """Each column of ``df``: its name, dtype, source and, with ``examples`` (the ``samples``
    sharing level only), its first distinct values (read through the frame's own methods:
    pandas is not imported here)."""
    out = []
    sources = dict(zip(plan.columns, plan.sources, strict=False))
    for name in df.columns:
        column = df[name]
        first = column.dropna().unique()[:EXAMPLES] if examples else []
        values = [str(v).removesuffix(" 00:00:00") for v in first]
        values = [v if len(v) <= 40 else v[:37] + "..." for v in values]
        out.append(FrameColumn(str(name), str(column.dtype), sources.get(name, ""), tuple(values)))
    return out


def ask_both(state: AskState, ctx: Context) -> AskState:
    """Asks the model for a simple SELECT plus pandas code, with the failed SQL attempts, the
    earlier fallback attempts and the feedback on a retry."""
    sql_attempts = [a for a in state.attempts if a.phase == Phase.sql]
    share = state.options.share
    # a follow-up's previous answer and the kept examples follow the question, as in the SQL
    # phase's prompt
    context = f"\n\n{ctx.preamble.strip()}" if ctx.preamble.strip() else ""
    messages = build_fallback_messages(
        state.question + context,
        state.target,
        state.schema_text,
        shared_attempts(sql_attempts, share),
        shared_attempts(record.same_phase(state), share),
    )
    answered = ask_model(state, ctx, messages)
    reply = answered.work.reply
    if answered.work.model_error or reply is None:
        return answered
    return answered.with_work(code=extract_code(reply.text))


def check(state: AskState, ctx: Context) -> AskState:
    """The safety check on the SELECT, then the simple-SELECT rule."""
    checked = check_sql(state, ctx)
    verdict = checked.work.check
    if verdict is not None and verdict.ok:
        simple = check_simple_select(verdict.sql, state.target)
        if not simple.ok:
            checked = checked.with_work(check=Validation(False, simple.issues, verdict.sql))
    return checked


def check_code(state: AskState, ctx: Context) -> AskState:
    """Runs the code check on the pandas code (its Python syntax tree)."""
    t0 = time.perf_counter()
    verdict = check_python(code_work(state).code or "")
    return state.with_work(code_check=verdict).timed(StepName.check_code, time.perf_counter() - t0)


def execute(state: AskState, ctx: Context) -> AskState:
    """Runs the checked SELECT, fetching at most ``fallback_row_limit`` rows."""
    return run_sql(state, ctx, state.options.fallback_row_limit)


def run_code(state: AskState, ctx: Context) -> AskState:
    """Runs the checked pandas code on the SELECT's rows (fresh namespace, timed)."""
    t0 = time.perf_counter()
    execution = state.work.execution
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
        options = state.options
        result = code_runner(ctx)(
            code_work(state).code,
            df,
            timeout=options.timeout,
            memory=options.fallback_memory,
            unconfined=options.fallback_unconfined,
            row_limit=options.row_limit,
            result_bytes=options.result_bytes,
        )
    return state.with_work(code_run=result).timed(StepName.run_code, time.perf_counter() - t0)


def diagnose(state: AskState, ctx: Context) -> AskState:
    """The attempt's failure as one :class:`Diagnosis` (see :func:`diagnosis`)."""
    t0 = time.perf_counter()
    found = diagnosis(state)
    return state.with_work(diagnosis=found).timed(StepName.diagnose, time.perf_counter() - t0)


def diagnosis(state: AskState) -> Diagnosis:
    """The fallback attempt's failure: the first problem's category, feedback on all of them.

    SQL problems come first (missing blocks, the safety check, the simple-SELECT rule), then
    the code check, then what happened when running: the engine's error (through the usual
    diagnosis), too many rows, the Python error, the time limit, a missing ``result``.
    """
    work = code_work(state)
    sql, code = work.sql, work.code
    verdict, code_check = work.check, work.code_check
    query = verdict.query if verdict is not None else None  # the check's tree
    where: dict[str, Any] = {
        "sql": sql,
        "target": state.target,
        "schema": state.schema,
        "query": query,
    }
    found: list[tuple[Any, str | None]] = []
    if not sql or not code:
        found.append((NoBlocks(bool(sql), bool(code), work.fetched is not None), None))
    if verdict is not None and not verdict.ok:
        codes = {i.code for i in verdict.issues}
        refusal = NotSimple(verdict.issues) if codes == {"not_simple"} else None
        found.append((refusal or SafetyRefusal(verdict.issues), "SQL"))
    if code and code_check is not None and not code_check.ok:  # no code: said just above
        found.append((CodeRefused(code_check.issues), "Python"))
    execution, run = work.execution, work.code_run
    if not found and work.error is not None:
        found.append((work.error, None))
    elif not found and execution is not None and execution.truncated:
        found.append((TooManyRows(state.options.fallback_row_limit), None))
    elif not found and run is not None and not run.ok:
        columns = list(getattr(execution, "columns", []) or [])
        found.append((CodeFailed(run.error, columns, work.dtypes, work.fetched is not None), None))
    if not found:  # pragma: no cover - diagnose is only reached after a failure
        found.append((CodeFailed(None), None))
    share = state.options.share
    return combine(
        [
            with_shared_feedback(diagnose_failure(f, **where), f, share=share, **where)
            for f, _ in found
        ],
        [lb for _, lb in found],
    )


def warnings(state: AskState) -> tuple[str, ...]:
    """The fallback answer's warnings, as an SQL answer's: an empty result says so."""
    run = code_work(state).code_run
    frame = run.result if run is not None and run.ok else None
    empty = frame is not None and len(frame) == 0
    return (EMPTY_WARNING,) if empty else ()


def code_ran_ok(state: AskState) -> bool:
    """Whether the attempt's code gave the answer."""
    run = code_work(state).code_run
    return run is not None and run.ok


def change(state: AskState) -> str | None:
    """The SQL diff plus how many lines of the pandas code changed (None on the first)."""
    previous = record.same_phase(state)
    if not previous:
        return None
    work = code_work(state)
    sql_change = None
    if work.sql:
        same = record.same_query(state, previous[-1])
        sql_change = sql_diff(previous[-1].sql, work.sql, target=state.target, same=same)
    return _with_code_diff(sql_change, previous[-1].code, work.code)


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


def close_attempt(state: AskState, feedback_sent: bool, ok: bool) -> Attempt:
    """The record of the fallback attempt in progress (``ok``: whether it answered)."""
    code = code_work(state).code
    return record.close_attempt(state, feedback_sent, ok=ok, change=change, code=code)


def provisional_attempt(state: AskState) -> Attempt:
    """The record of the fallback attempt in progress as far as it went (``running=True``)."""
    work = code_work(state)
    code_check, run = work.code_check, work.code_run
    refusals = []
    if code_check is not None and not code_check.ok:
        refusals.append("; ".join(str(getattr(i, "message", i)) for i in code_check.issues))
    failure = None
    if run is not None and not run.ok:
        failure = getattr(run.error, "message", None) or str(run.error)
    attempt = record.provisional_attempt(state, code_ran_ok(state), refusals, failure)
    return dataclasses.replace(attempt, code=work.code)


def fallback_result(state: AskState) -> tuple[Fallback, Any]:
    """The phase's record for the result, and its answer (a DataFrame) when it answered."""
    attempts = [a for a in state.attempts if a.phase == Phase.fallback]
    last = attempts[-1] if attempts else None
    run = code_work(state).code_run
    ok = state.stop_reason == StopReason.success and run is not None and run.ok
    answer = run.result if ok and run is not None else None
    fallback = Fallback(
        sql=last.sql if last else None,
        code=last.code if last else None,
        result=answer,
        ok=ok,
        attempts=attempts,
        reason=state.entry or HANDED_OVER_AFTER,
    )
    return fallback, answer


# -- the attempt's tests ---------------------------------------------------------------------


def _code_key(code: str | None) -> str:
    return "\n".join(line.rstrip() for line in (code or "").strip().splitlines() if line.strip())


def unchanged(state: AskState) -> bool:
    """The attempt repeats the previous fallback attempt (its SELECT and its code)."""
    previous = [a for a in state.attempts if a.phase == Phase.fallback]
    if not previous or not record.same_query(state, previous[-1]):
        return False
    return _code_key(code_work(state).code) == _code_key(previous[-1].code)


def has_blocks(state: AskState) -> bool:
    """The reply holds a SELECT or code (what is missing is diagnosed after the checks)."""
    return bool(state.work.sql or code_work(state).code)


def has_sql(state: AskState) -> bool:
    return bool(state.work.sql)


def has_code(state: AskState) -> bool:
    return bool(code_work(state).code)


def to_check(state: AskState) -> bool:
    """The attempt has a SELECT the safety check has not seen (the product's was checked
    before it ran)."""
    return has_sql(state) and state.work.check is None


def to_execute(state: AskState) -> bool:
    """The attempt's SELECT has not run yet (the product's ran before the model was asked)."""
    return state.work.execution is None


def both_checked(state: AskState) -> bool:
    """Both checks passed: the SELECT's (safety, simple-SELECT) and the code's. The reply must
    hold code: the product's own SELECT skips the SQL check, so nothing else asks for it."""
    code_check = code_work(state).code_check
    return has_code(state) and state.work.checked and code_check is not None and code_check.ok


def rows_fetched(state: AskState) -> bool:
    """The SELECT ran and fetched all its rows (within ``fallback_row_limit``)."""
    execution = state.work.execution
    return execution is not None and not execution.truncated
