"""The SQL phase: the model's SQL checked, run and its result checked.

Its steps (each takes the state and the run's context and returns the next state): ask the
model for SQL (:func:`generate`), the safety check (the shared
:func:`~cadet_magic.agent.steps.check_sql`), the read-only run (:func:`execute`), the result check (:func:`check_result`) and the diagnosis of a failure
(:func:`diagnose`). Its hooks, named by its declaration
(:data:`cadet_magic.agent.phases.SQL_PHASE`): the tests that let an attempt go on, its
provisional record, whether it answered, the candidate answer it offers (:func:`candidate`: a
suspect result, in case no clean one follows), the answer's warnings, when it repeats itself
(:func:`unchanged`) and when it hands over to the phase that follows (:func:`hands_over`: the
vote, or the fallback, each saying itself whether it runs).

A run that does not compute what the question names (a median answered by ``AVG``:
:func:`cadet_magic.result_check.computation.missing_computation`) and a failure on a function
or construct the engine lacks (``MEDIAN`` on SQLite: :func:`~cadet_magic.result_check.
computation.engine_lacks`) end the phase at once when the fallback may follow: the state's
``entry`` says why (``computation_missing``, ``engine_lacks``), the vote is skipped (its
candidates answer the same prompt, with the same lack) and the fallback starts.

A run the result check finds suspect (a value it filters on does not occur while a close one
does) is diagnosed ``value_not_found`` by :func:`check_result` itself and retried like a
failure; the pipeline holds it as a candidate and answers with the best one, with warnings,
when no clean answer follows.

Example:
    >>> from cadet_magic.agent.state import initial_state
    >>> has_sql(initial_state("q", target="sqlite").with_work(sql="SELECT 1"))
    True
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from cadet_magic.agent.prompts import build_messages
from cadet_magic.agent.record import provisional_attempt as _provisional
from cadet_magic.agent.record import same_phase, same_query
from cadet_magic.agent.state import AskState, Candidate, Work
from cadet_magic.agent.steps import (
    CANDIDATE_TEMPERATURE,
    FIRST_ROUND,
    Context,
    ask_model,
    run_sql,
)
from cadet_magic.diagnose.category import Category
from cadet_magic.diagnose.failures import NoSQL, SuspectResult
from cadet_magic.diagnose.failures import diagnose as diagnose_failure
from cadet_magic.diagnose.found import found
from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.diagnose.repeat import repeated
from cadet_magic.diagnose.shared import with_shared_feedback
from cadet_magic.kinds import Outcome, StepName, StopReason
from cadet_magic.result import Attempt, Phase
from cadet_magic.result_check.computation import (
    MissingComputation,
    engine_lacks,
    lacks_named,
    missing_computation,
)
from cadet_magic.result_check.findings import ValueCheck
from cadet_magic.result_check.probe_database import EMPTY_WARNING, check_through
from cadet_magic.schema.share import shared_attempts
from cadet_magic.sql.refusal import SafetyRefusal


@dataclass(frozen=True)
class SqlWork(Work):
    """An SQL attempt in progress: the fields of every attempt, the result check of its run
    (None until it ran) and what the question names that its query does not compute (None:
    nothing, or not checked)."""

    value_check: ValueCheck | None = None
    computation: MissingComputation | None = None


# -- the steps ---------------------------------------------------------------------------------


def generate(state: AskState, ctx: Context) -> AskState:
    """Asks the model for SQL, with the earlier attempts and the feedback on a retry (as
    ``AskMagic.share`` lets the model see them)."""
    attempts = shared_attempts(same_phase(state), state.options.share)
    messages = build_messages(
        state.question, state.target, state.schema_text, attempts, ctx.preamble
    )
    more = (state.options.candidates or 1) - 1  # the vote's candidates (the answer is one)
    if attempts or ctx.drawn or more < 1:
        return ask_model(state, ctx, messages)
    # the first prompt is the vote's: its first candidates come with the answer
    first = min(FIRST_ROUND, more)
    return ask_model(state, ctx, messages, candidates=first, temperature=CANDIDATE_TEMPERATURE)


def execute(state: AskState, ctx: Context) -> AskState:
    """Runs the checked SQL on the user's connection (limited, timed, rolled back)."""
    return run_sql(state, ctx, state.options.row_limit)


def check_result(state: AskState, ctx: Context) -> AskState:
    """Checks that the string values the executed query filters on occur; a suspect run is
    diagnosed here (``value_not_found``)."""
    t0 = time.perf_counter()
    work = state.work
    if work.execution is None or work.query is None:  # pragma: no cover - routed only after a run
        return state
    vc = check_through(
        ctx.runner,
        work.query,
        attempt=state.attempt,
        rows=len(work.execution.rows),
        schema=state.schema,
        target=state.target,
        timeout=state.options.timeout,
        budget=state.options.check_budget,
    )
    checked = state.with_work(value_check=vc).timed(StepName.check_result, time.perf_counter() - t0)
    if vc.suspect:
        suspect = SuspectResult(vc, work.sql or work.query)
        checked = checked.with_work(diagnosis=diagnose_failure(suspect))
    elif state.options.fallback:
        missing = missing_computation(state.question, work.query.tree)
        if missing is not None:  # a vote's candidate gives no answer then: the fallback follows
            checked = checked.with_work(
                computation=missing, diagnosis=computation_diagnosis(missing)
            )
            if gives_way(state):
                checked = checked.replace(entry=StopReason.computation_missing)
    return checked


def gives_way(state: AskState) -> bool:
    """Whether the SQL phase may give up early for the fallback: in the SQL phase itself (the
    vote's candidates are only checked), with the fallback allowed."""
    return state.phase == Phase.sql and state.options.fallback


def computation_diagnosis(missing: MissingComputation) -> Diagnosis:
    """A run that computes something else than the question names: the fallback follows."""
    return Diagnosis(
        Category.computation_missing,
        True,
        found(Category.computation_missing, message=missing.message()),
        [],
        f"{missing.message()} Compute the {missing.name} in pandas from the rows.",
        outcome=Outcome.suspect,
        error=missing.message(),
    )


def repeated_attempt(state: AskState) -> tuple[int, bool] | None:
    """The earlier SQL attempt whose query this attempt writes again, up to formatting: its
    number and whether it is the previous attempt (else the model alternates); None.

    Example:
        >>> from cadet_magic.agent.state import initial_state
        >>> a = (Attempt(1, "SELECT a FROM t", "error", phase=Phase.sql),
        ...      Attempt(2, "SELECT b FROM t", "error", phase=Phase.sql))
        >>> s = initial_state("q", target="sqlite").replace(attempts=a)
        >>> repeated_attempt(s.with_work(sql="select a from t"))
        (1, False)
        >>> repeated_attempt(s.with_work(sql="SELECT b  FROM t"))
        (2, True)
    """
    previous = [a for a in state.attempts if a.phase == Phase.sql and a.sql]
    if not (state.work.sql and previous):
        return None
    for a in reversed(previous):
        if same_query(state, a):
            return a.number, a is previous[-1]
    return None


def diagnose(state: AskState, ctx: Context) -> AskState:
    """Works out why the attempt failed and what to tell the model (one :class:`Diagnosis`,
    through :func:`cadet_magic.diagnose.failures.diagnose`)."""
    t0 = time.perf_counter()
    work = state.work
    query = work.check.query if work.check is not None else None  # the check's tree
    where: dict[str, Any] = {
        "sql": work.sql,
        "target": state.target,
        "schema": state.schema,
        "query": query,
    }
    if not work.sql:
        diagnosis = diagnose_failure(NoSQL(work.reply.text if work.reply is not None else ""))
    elif work.check is not None and not work.check.ok:
        diagnosis = diagnose_failure(SafetyRefusal(work.check.issues), **where)
    else:
        # The runner read the engine's error in terms of the CheckedQuery (functions named as
        # the model wrote them); below samples the feedback is the shareable copy's.
        assert work.error is not None, "the query was checked and ran: its error is kept"
        diagnosis = with_shared_feedback(
            diagnose_failure(work.error, **where), work.error, share=state.options.share, **where
        )
    lacking = engine_lacks(query.tree, state.target) if query is not None else ()
    if not lacking and (work.error is not None or not work.checked):
        # the question names a statistic the engine has no function for, and the attempt
        # that tried to compute it by hand failed (measured: the local model's hand-written
        # medians on SQLite fail, and it writes the same failing query again)
        lacking = lacks_named(state.question, state.target)
    early = None
    if (work.error is not None or not work.checked) and lacking and gives_way(state):
        early = StopReason.engine_lacks
        said = ", ".join(lacking)
        diagnosis = dataclasses.replace(
            diagnosis, error=f"{diagnosis.error} (the engine has no {said})"
        )
    again = repeated_attempt(state)
    if again is not None and diagnosis.retryable:  # the same failed query again: say so
        diagnosis = repeated(
            diagnosis,
            work.sql,
            again[0],
            last=again[1],
            schema=state.schema,
            target=state.target,
            query=query,
        )
    diagnosed = state.with_work(diagnosis=diagnosis)
    if early is not None:
        diagnosed = diagnosed.replace(entry=early)
    return diagnosed.timed(StepName.diagnose, time.perf_counter() - t0)


# -- the tests that let an attempt go on -------------------------------------------------------


def has_sql(state: AskState) -> bool:
    return bool(state.work.sql)


def checked(state: AskState) -> bool:
    """Whether the safety check passed the attempt's SQL."""
    return state.work.checked


def ran(state: AskState) -> bool:
    return state.work.execution is not None


def value_check(state: AskState) -> ValueCheck | None:
    """The result check of the attempt in progress (None before it ran)."""
    work = state.work
    return work.value_check if isinstance(work, SqlWork) else None


def suspect_now(state: AskState) -> bool:
    """Whether the attempt in progress ran and the result check found it suspect."""
    vc = value_check(state)
    return vc is not None and vc.suspect and state.work.execution is not None


def computes_other(state: AskState) -> bool:
    """Whether the attempt in progress ran and computes something else than the question
    names (checked only when the fallback may follow)."""
    work = state.work
    return isinstance(work, SqlWork) and work.computation is not None


def clean(state: AskState) -> bool:
    """The result check did not find the run suspect, nor computing something else."""
    return not suspect_now(state) and not computes_other(state)


# -- the phase's hooks -------------------------------------------------------------------------


def ran_clean(state: AskState) -> bool:
    """Whether the attempt in progress gave the answer: it ran and the result check did not
    find it suspect."""
    return ran(state) and clean(state)


def provisional_attempt(state: AskState) -> Attempt:
    """The record of the attempt in progress, ``suspect`` once the result check found it so
    (it ran, so the record would otherwise say ``ok``)."""
    return _provisional(state, ok=False if suspect_now(state) else None)


def candidate(state: AskState) -> Candidate | None:
    """The attempt's result as a candidate answer: a run the result check found suspect
    (fewer missing values, then rows rather than none, then the later one ranks better)."""
    vc, execution = value_check(state), state.work.execution
    if vc is None or not vc.suspect or execution is None:
        return None
    return Candidate(state.attempt, state.work.sql, execution, vc.rank(), tuple(vc.warnings()))


def warnings(state: AskState) -> tuple[str, ...]:
    """A clean answer's warnings: the result check's (a missing value without a close one, a
    comparison no stored value meets), or an empty result's."""
    vc = value_check(state)
    if vc is not None:
        return tuple(vc.warnings())
    execution = state.work.execution
    return (EMPTY_WARNING,) if execution is not None and not execution.rows else ()


def unchanged(state: AskState) -> bool:
    """The retry policy's guard: the attempt repeats the previous SQL attempt, which repeated
    the one before it (the model was told it repeats itself, :mod:`cadet_magic.diagnose.repeat`,
    and did again); a suspect result repeating the previous attempt stops at once (the best
    candidate answers)."""
    previous = [a for a in state.attempts if a.phase == Phase.sql]
    if not previous:
        return False
    if suspect_now(state):  # a suspect result written again: its answer stands
        return same_query(state, previous[-1])
    return (
        len(previous) >= 2
        and same_query(state, previous[-1])
        and same_query(state, previous[-2], later=previous[-1])
    )


def hands_over(state: AskState) -> bool:
    """Whether the SQL phase may hand over to the phase that follows it (the vote when it holds
    one, the fallback when it is allowed and no answer was found): not after a model error."""
    return not state.work.model_error
