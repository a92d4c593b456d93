"""The attempt records: what happened to an attempt, as the :class:`Attempt` the result and
the displays show (finished, or provisional while it runs), and the log lines for it; and the
one test of an attempt that writes an earlier query again (:func:`same_query`).

The outcome and the message are derived once, from the attempt's diagnosis.

Example:
    >>> from cadet_magic.agent.state import initial_state
    >>> from cadet_magic.runner import RunResult
    >>> s = initial_state("q", target="sqlite").with_work(sql="SELECT 1", execution=RunResult([], []))
    >>> a = close_attempt(s, feedback_sent=False)
    >>> str(a.outcome), a.category, a.feedback
    ('ok', None, None)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from cadet_magic.agent.state import AskState
from cadet_magic.diagnose.category import Category
from cadet_magic.diagnose.model import Diagnosis
from cadet_magic.result import Attempt, Outcome, Phase
from cadet_magic.schema.queried import tables_in
from cadet_magic.sql.normalize import normalize_sql, sql_diff
from cadet_magic.text import error_text

log = logging.getLogger("cadet_magic")


def executed(state: AskState) -> bool:
    """Whether the attempt in progress ran its SQL."""
    return state.work.execution is not None


def outcome_of(state: AskState, ok: bool) -> tuple[Outcome, str | None]:
    """The attempt's outcome and message, derived once from its diagnosis."""
    work = state.work
    if work.model_error:
        return Outcome.model_error, work.model_error
    if ok:
        return Outcome.ok, None
    if work.diagnosis is None:  # pragma: no cover - a failed attempt is always diagnosed
        return Outcome.error, None
    return Outcome(work.diagnosis.outcome), work.diagnosis.error


def same_phase(state: AskState) -> list[Attempt]:
    """The finished attempts of the phase in progress."""
    return [a for a in state.attempts if a.phase == state.phase]


def normal_form(state: AskState) -> str:
    """The attempt in progress's SQL up to formatting: its checked query's normal form (the
    check's tree, not parsed again), or the text's when the check did not parse it; "" without
    SQL."""
    work = state.work
    if not work.sql:
        return ""
    query = work.check.query if work.check is not None else None
    return query.normalized if query is not None else normalize_sql(work.sql, state.target)


def form_of(state: AskState, attempt: Attempt) -> str:
    """The normal form of a finished attempt's SQL (made when it closed; an attempt recorded
    elsewhere, without one, has its text's)."""
    for done, form in zip(state.attempts, state.forms, strict=False):
        if done is attempt:
            return form
    return normalize_sql(attempt.sql, state.target) if attempt.sql else ""


def same_query(state: AskState, earlier: Attempt, later: Attempt | None = None) -> bool:
    """Whether ``later`` (default: the attempt in progress) writes ``earlier``'s SQL again, up
    to formatting: the one test of a repeated query (the retry policy's guard, the diagnosis'
    note, the diff of a retry and the fallback's repeated attempt use it).

    Example:
        >>> from cadet_magic.agent.state import initial_state
        >>> first = Attempt(1, "SELECT a FROM t", "error")
        >>> s = initial_state("q", target="sqlite").replace(attempts=(first,))
        >>> same_query(s.with_work(sql="select a\\nfrom t;"), first)
        True
        >>> same_query(s.with_work(sql=None), first)
        False
    """
    if later is None:
        mine = normal_form(state) if state.work.sql else ""
    else:
        mine = form_of(state, later) if later.sql else ""
    return bool(mine and earlier.sql) and mine == form_of(state, earlier)


def closed(state: AskState, attempt: Attempt) -> AskState:
    """The state with the attempt in progress recorded as ``attempt`` (and its SQL's form and
    the tables its checked query reads)."""
    query = state.work.query
    read = tables_in(query.tree if query is not None else None, state.schema)
    return state.replace(
        attempts=(*state.attempts, attempt),
        forms=(*state.forms, normal_form(state)),
        tables=(*state.tables, read),
    )


def sql_change(state: AskState) -> str | None:
    """How the attempt's SQL differs from the previous attempt's of its phase (None first)."""
    previous = same_phase(state)
    if not (previous and state.work.sql):
        return None
    same = same_query(state, previous[-1])
    return sql_diff(previous[-1].sql, state.work.sql, target=state.target, same=same)


def _reply_fields(state: AskState) -> dict[str, Any]:
    reply = state.work.reply
    return {
        "reply": reply.text if reply is not None else "",
        "tokens": reply.tokens if reply is not None else None,
        "model_seconds": reply.seconds if reply is not None else None,
    }


def provisional_attempt(
    state: AskState,
    ok: bool | None = None,
    refusals: Sequence[str] = (),
    failure: str | None = None,
) -> Attempt:
    """The record of the attempt in progress as far as it went (``running=True``): what the
    check refused, the engine's error, the diagnosis once there is one. A later phase passes
    what its own checks refused (``refusals``) and how its own step failed (``failure``).

    Example:
        >>> from cadet_magic.agent.state import initial_state
        >>> s = initial_state("q", target="sqlite").with_work(sql="SELECT 1").timed("generate", 0.1)
        >>> a = provisional_attempt(s)
        >>> a.running, str(a.outcome), a.sql
        (True, 'ok', 'SELECT 1')
    """
    work = state.work
    diagnosis = work.diagnosis
    if diagnosis is not None or work.model_error:
        outcome, error = outcome_of(state, executed(state) if ok is None else bool(ok))
    else:
        outcome, error = Outcome.ok, None
        verdict = work.check
        refused = [
            *(
                ["; ".join(str(getattr(i, "message", i)) for i in verdict.issues)]
                if verdict is not None and not verdict.ok
                else []
            ),
            *refusals,
        ]
        if refused:
            outcome, error = Outcome.refused, "; ".join(refused)
        elif work.error is not None:
            outcome, error = Outcome.error, error_text(work.error)
        elif failure is not None:
            outcome, error = Outcome.error, failure
    return Attempt(
        number=state.attempt,
        sql=work.sql,
        outcome=outcome,
        category=Category(diagnosis.category) if diagnosis is not None else None,
        error=error,
        timings=dict(work.timings),
        phase=state.phase,
        running=True,
        **_reply_fields(state),
    )


def feedback_text(diagnosis: Diagnosis, mode: str | None, share: str = "samples") -> str:
    """What the model is told after a failed attempt: the diagnosis's feedback, or with
    ``mode="raw"`` only the error text the attempt failed with (the engine's words, the safety
    check's refusal, or the result check's finding; no advice, suggested names or JOIN paths).

    Example:
        >>> from cadet_magic.diagnose.model import Diagnosis
        >>> d = Diagnosis("column_not_found", True, feedback="Use t.name (no column nme).",
        ...               error="no such column: nme")
        >>> feedback_text(d, "targeted"), feedback_text(d, "raw")
        ('Use t.name (no column nme).', 'no such column: nme')
        >>> feedback_text(d, "raw", share="schema")
        'column_not_found (the error text is not shared at share=schema)'
    """
    if mode == "raw" and share != "samples" and str(diagnosis.outcome) != "refused":
        # below samples the engine's (or the child's) words are never sent; the check's are
        what = getattr(diagnosis.category, "value", diagnosis.category)
        return f"{what} (the error text is not shared at share={share})"
    if mode == "raw":
        return diagnosis.error or str(diagnosis.exception or "") or diagnosis.feedback
    return diagnosis.feedback


def close_attempt(
    state: AskState,
    feedback_sent: bool,
    ok: bool | None = None,
    change: Callable[[Any], str | None] = sql_change,
    code: str | None = None,
) -> Attempt:
    """The record of the attempt in progress; ``ok`` says whether it answered (default: the SQL
    ran), ``change`` describes how it differs from the previous one, ``code`` is a later
    phase's program besides the SQL."""
    outcome, error = outcome_of(state, executed(state) if ok is None else ok)
    diagnosis = state.work.diagnosis
    attempt = Attempt(
        number=state.attempt,
        sql=state.work.sql,
        outcome=outcome,
        category=(
            Category(diagnosis.category)
            if diagnosis is not None and outcome != Outcome.ok
            else None
        ),
        error=error,
        feedback=(
            feedback_text(diagnosis, state.options.feedback, state.options.share)
            if (feedback_sent and diagnosis is not None)
            else None
        ),
        suggestions=list(diagnosis.suggestions) if diagnosis is not None else [],
        diff=change(state),
        timings=dict(state.work.timings),
        phase=state.phase,
        retryable=diagnosis.retryable if diagnosis is not None else True,
        code=code,
        **_reply_fields(state),
    )
    _log_attempt(attempt, state.options.max_attempts)
    return attempt


def _log_attempt(a: Attempt, max_attempts: int) -> None:
    log.info(
        "[attempt %d/%d] %s%s%s",
        a.number,
        max_attempts,
        "" if a.phase == Phase.sql else f"{a.phase} ",
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
