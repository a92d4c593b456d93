"""The vote: more candidate answers to the question, and the answer most of them give.

When ``AskMagic.candidates`` is above 1, the SQL phase hands over to this phase when it ends,
with an answer (the attempt that answered, or its suspect best candidate) or without one
(:func:`start`: that answer, or none, is the first candidate). Each attempt of this phase is
one more candidate: the model answers the SQL phase's first prompt again, sampled at
:data:`TEMPERATURE` with the attempt's number as its seed (:func:`generate`; a server caching
the prompt's prefix reads it once), and the candidate's SQL passes the same safety check, runs
read-only within the same bounds and goes through the same result check as any SQL attempt.
:func:`tally` adds its result to the vote (:mod:`cadet_magic.vote.tally`: results compared as
the evaluation compares them; a candidate that failed gives no answer). Candidates are drawn
until the vote's outcome is clear (:data:`RULE`) or ``candidates`` answers were drawn, the
first one included; no feedback is sent. Where the model draws several candidates at about the
cost of one (:func:`together`: the in-kernel model decodes them in one batch, a served one takes
them in one request or side by side), they come in rounds (:func:`round_size`): the first drawn
in the answer's own call (:func:`~cadet_magic.agent.steps.ask_model`), the rest in one more.

The answer is the result most candidates gave, the SQL phase's first on a tie (:func:`candidate`
offers it to the pipeline, which answers with it); ``AskResult.agreement`` says how many gave
it, of how many were drawn, ``AskResult.competing`` the other answers. When another answer
competed with it and its lead is not clear by the vote's own stop rule, the answer warns so
(:data:`DISAGREE_WARNING`; a candidate that gave no answer alone does not warn, except against
an answer found after a correction that no other candidate gave: :data:`UNCONFIRMED_WARNING`,
:func:`unconfirmed`); ``AskResult.uncertain`` says whether it does (:func:`doubt`). When no
candidate gave an answer, the fallback follows as it follows the SQL phase.

Example:
    >>> from cadet_magic.agent.state import initial_state
    >>> enters(initial_state("q", target="sqlite", candidates=3)), enters(initial_state("q", target="sqlite"))
    (True, False)
"""

from __future__ import annotations

import logging
import time
from typing import Any

from cadet_magic.agent import record, sql_phase
from cadet_magic.agent.prompts import build_messages
from cadet_magic.agent.reply import content_text, extract_sql, usage_of
from cadet_magic.agent.state import AskState, Candidate, Reply
from cadet_magic.agent.steps import CANDIDATE_TEMPERATURE, FIRST_ROUND, Context, call_model
from cadet_magic.diagnose.failures import NoSQL
from cadet_magic.diagnose.failures import diagnose as diagnose_failure
from cadet_magic.errors import ModelCallError, ModelCallInterrupted
from cadet_magic.kinds import StepName
from cadet_magic.result import Attempt, Outcome, Phase
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.vote.answers import Agreement, Competing
from cadet_magic.vote.readings import Reading
from cadet_magic.vote.readings import readings as make_readings
from cadet_magic.vote.stopping import BetaStop, Rule, stop
from cadet_magic.vote.tally import Ballot, Tally

log = logging.getLogger("cadet_magic")

#: The temperature candidates are sampled at (measured: docs/benchmarks-history.md, "the vote's settings").
TEMPERATURE = CANDIDATE_TEMPERATURE
#: When the vote's outcome is clear enough to stop drawing candidates (measured likewise).
RULE: Rule = BetaStop(0.8)
#: The answer's warning when it needed a correction and no other candidate gave it (every other
#: one gave none).
UNCONFIRMED_WARNING = (
    "No other candidate answer confirmed this answer, found after a correction ({failed} of "
    "{drawn} candidates gave none). It may be wrong; check it."
)
#: Rows of a competing answer the result keeps for its preview.
PREVIEW_ROWS = 5
#: The answer's warning when another answer competed with it.
DISAGREE_WARNING = (
    "The candidate answers disagree: {agreement} gave this answer{others}. It may be wrong; "
    "compare the other answers shown."
)

# -- entering the phase ------------------------------------------------------------------------


def enters(state: AskState) -> bool:
    """Whether the run holds a vote (``candidates`` above 1), not after the SQL phase gave up
    early for the fallback (the state's ``entry``: its candidates would answer the same first
    prompt and meet the same lack)."""
    return (state.options.candidates or 1) > 1 and state.entry is None


def limit(state: AskState) -> int:
    """Candidates this phase draws at most (the first answer is the SQL phase's)."""
    return (state.options.candidates or 1) - 1


def _first_ballot(state: AskState) -> Ballot | None:
    """The SQL phase's answer as the vote's first candidate: its last attempt when it answered,
    else its suspect best candidate; None when it found none."""
    last = state.attempts[-1] if state.attempts else None
    work = state.work
    if last is not None and last.outcome == Outcome.ok and work.execution is not None:
        warnings = sql_phase.warnings(state)
        answer = Candidate(last.number, work.sql, work.execution, (), warnings)
    elif state.best_candidate is not None:
        answer = state.best_candidate
    else:
        return None
    return ballot(0, answer)


def ballot(index: int, answer: Candidate) -> Ballot:
    """A candidate answer as a ballot of the vote (the answer itself kept with it)."""
    run = answer.execution
    return Ballot(
        index,
        answer.sql or "",
        tuple(tuple(r) for r in run.rows),
        tuple(run.columns),
        bool(run.truncated),
        extra=answer,
    )


def start(state: AskState, ctx: Context) -> AskState:
    """Enters the vote, the SQL phase's answer (or its lack of one) the first candidate."""
    first = _first_ballot(state)
    log.info("[vote] up to %d candidate(s) more", limit(state))
    tally = Tally().add(first)
    return state.replace(phase=Phase.vote, work=sql_phase.SqlWork(1), vote=tally)


# -- the steps ---------------------------------------------------------------------------------


class _Sampled:
    """``invoke(messages)``: the next of ``count`` replies sampled with seeds from ``seed`` (the
    others wait in ``ctx.drawn``), for :func:`~cadet_magic.agent.steps.call_model`."""

    def __init__(self, ctx: Context, count: int, seed: int) -> None:
        self.ctx, self.count, self.seed = ctx, count, seed
        # a model run in this process is waited for past the timeout, its candidates too
        self.cadet_in_process = bool(getattr(ctx.model, "cadet_in_process", False))

    def invoke(self, messages: Any) -> Any:
        model = self.ctx.model
        sample = self.ctx.sampler or getattr(model, "cadet_sample", None)
        if sample is None:  # a scripted stand-in: its next reply
            return model.invoke(messages)
        replies = sample(messages, count=self.count, seed=self.seed, temperature=TEMPERATURE)
        if not replies:
            raise ModelCallError("The model returned no reply for a candidate answer.")
        self.ctx.drawn = list(replies[1:])
        return replies[0]


def together(ctx: Context) -> bool:
    """Whether the model draws several candidates at about the cost of one: decoded together
    (``cadet_batched``: the in-kernel model) or asked for in one request or side by side
    (``ctx.sampler.together``: a served model)."""
    return bool(getattr(ctx.model, "cadet_batched", False)) or bool(
        getattr(ctx.sampler, "together", False)
    )


def round_size(state: AskState, ctx: Context) -> int:
    """Candidates the next request draws: one at a time where each costs a generation; else
    rounds, the first of :data:`~cadet_magic.agent.steps.FIRST_ROUND` (most questions stop
    there: the answer and one more agree), then all the candidates left. The stop rule is
    asked after each candidate, as when they come one at a time; a round's candidates it
    leaves unused are dropped.

    Example:
        >>> from cadet_magic.agent.state import initial_state
        >>> s = initial_state("q", target="sqlite", candidates=5)
        >>> class Batched: cadet_batched = True
        >>> ctx = Context(model=Batched(), runner=None)
        >>> [round_size(s.with_work(number=k), ctx) for k in (1, 2)]
        [1, 3]
        >>> round_size(s, Context(model=object(), runner=None))
        1
    """
    if not together(ctx):
        return 1
    left = limit(state) - state.attempt + 1
    return min(FIRST_ROUND, left) if state.attempt == 1 else left


def draw(state: AskState, ctx: Context, messages: list[tuple[str, str]]) -> Reply:
    """One sampled reply to ``messages``: one kept from an earlier request asking for several,
    else a new request (for all the candidates left at once where the provider answers several
    in one request, else for this one)."""
    if ctx.drawn:
        reply = ctx.drawn.pop(0)
        return Reply(content_text(getattr(reply, "content", reply)), usage_of(reply), 0.0)
    count = round_size(state, ctx)
    ctx.model_calls += 1
    sampled = _Sampled(ctx, count, seed=state.attempt)
    return call_model(sampled, messages, state.options.model_timeout, owner=ctx.model)


def generate(state: AskState, ctx: Context) -> AskState:
    """Asks the model for one more candidate: the SQL phase's first prompt, sampled."""
    messages = build_messages(state.question, state.target, state.schema_text, [], ctx.preamble)
    t0 = time.perf_counter()
    ctx.prompts.append([{"role": role, "content": text} for role, text in messages])
    try:
        reply = draw(state, ctx, messages)
    except (ModelCallError, ModelCallInterrupted) as e:
        # the vote ends with the candidates drawn so far: the answer found stands
        seconds = time.perf_counter() - t0
        why = str(e) or "Interrupted while drawing candidate answers: the answer found stands."
        failed = state.with_work(model_error=why, reply=Reply(seconds=seconds), sql=None)
        return failed.timed(StepName.generate, seconds)
    seconds = time.perf_counter() - t0
    answered = Reply(reply.text, reply.tokens, seconds)
    return state.with_work(reply=answered, sql=extract_sql(reply.text)).timed(
        StepName.generate, seconds
    )


def _diagnosis(state: AskState) -> Any:
    """Why a candidate gave no answer (for its record: no feedback is sent)."""
    work = state.work
    if work.diagnosis is not None:  # the result check's own (a suspect result)
        return work.diagnosis
    if not work.sql:
        return diagnose_failure(NoSQL(work.reply.text if work.reply is not None else ""))
    where: dict[str, Any] = {
        "sql": work.sql,
        "target": state.target,
        "schema": state.schema,
        "query": work.check.query if work.check is not None else None,  # the check's tree
    }
    if work.check is not None and not work.check.ok:
        return diagnose_failure(SafetyRefusal(work.check.issues), **where)
    assert work.error is not None, "the query was checked and ran: its error is kept"
    return diagnose_failure(work.error, **where)


def tally(state: AskState, ctx: Context) -> AskState:
    """Adds the candidate's answer to the vote (none when it did not run cleanly)."""
    assert state.vote is not None  # the phase starts with its tally
    if sql_phase.ran_clean(state):
        work = state.work
        assert work.execution is not None
        answer = Candidate(state.attempt, work.sql, work.execution, (), sql_phase.warnings(state))
        return state.replace(vote=state.vote.add(ballot(state.attempt, answer)))
    return state.replace(vote=state.vote.add(None)).with_work(diagnosis=_diagnosis(state))


# -- the phase's hooks -------------------------------------------------------------------------


def nothing_to_diagnose(state: AskState, ctx: Context) -> AskState:
    """The phase's diagnosis step, never routed to: every candidate reaches :func:`tally`,
    which records why one gave no answer (no feedback is sent)."""
    return state


def more(state: AskState) -> bool:
    """Whether the vote's outcome is not clear yet (another candidate is drawn)."""
    return state.vote is not None and not stop(RULE, state.vote, state.options.candidates or 1)


def candidate(state: AskState) -> Candidate | None:
    """The answer most candidates gave so far, with its warnings and the vote's (ranked first:
    the vote decides over any candidate held before it)."""
    vote = state.vote
    winner = vote.winner if vote is not None else None
    if winner is None:
        return None
    answer: Candidate = winner.first.extra
    said = doubt(state)
    warnings = answer.warnings if said is None else (*answer.warnings, said)
    return Candidate(answer.attempt, answer.sql, answer.execution, (), warnings)


def doubt(state: AskState) -> str | None:
    """The vote's warning on its answer, None when the vote leaves no doubt about it: another
    answer competed and the answer's lead over it is not clear by the vote's own stop rule
    (:data:`RULE`; a clear lead shows its agreement and the competing answers without a
    warning), or the answer is :func:`unconfirmed`.

    Example:
        >>> from cadet_magic.agent.state import initial_state
        >>> a, b = Ballot(0, "SELECT 1", ((1,),)), Ballot(1, "SELECT 2", ((2,),))
        >>> s = initial_state("q", target="sqlite", candidates=5)
        >>> doubt(s.replace(vote=Tally().add(a).add(b).add(a).add(a))) is None  # 3 to 1
        True
        >>> print(doubt(s.replace(vote=Tally().add(a).add(b).add(a).add(b).add(a))))  # 3 to 2
        The candidate answers disagree: 3 of 5 candidate answers gave this answer (1 other answer). It may be wrong; compare the other answers shown.
    """
    vote = state.vote
    if vote is None or vote.winner is None:
        return None
    if vote.contested:
        return None if RULE.clear(vote) else disagreement(vote)
    if unconfirmed(state):
        failed = vote.drawn - vote.answered
        return UNCONFIRMED_WARNING.format(failed=failed, drawn=vote.drawn)
    return None


def unconfirmed(state: AskState) -> bool:
    """Whether the answer is the SQL phase's, found after a correction (it made more than one
    attempt), and no other candidate drawn gave it (every other one gave none).

    Example:
        >>> from cadet_magic.agent.state import initial_state
        >>> s = initial_state("q", target="sqlite", candidates=3)
        >>> a1, a2 = Attempt(1, "SELECT nme FROM t", "error"), Attempt(2, "SELECT name FROM t", "ok")
        >>> first = Ballot(0, a2.sql, (), extra=Candidate(2, a2.sql, None, ()))
        >>> s = s.replace(attempts=(a1, a2), vote=Tally().add(first).add(None))
        >>> unconfirmed(s), unconfirmed(s.replace(attempts=(a2,)))
        (True, False)
    """
    vote = state.vote
    winner = vote.winner if vote is not None else None
    if vote is None or winner is None or vote.drawn < 2 or winner.votes > 1 or vote.contested:
        return False
    corrected = sum(1 for a in state.attempts if a.phase == Phase.sql) > 1
    return corrected and winner.first.index == 0


def disagreement(vote: Tally) -> str:
    """The warning of an answer another answer competed with (the candidates that gave none
    are counted in it too)."""
    agreement = vote.agreement
    assert agreement is not None
    others = len(vote.groups) - 1
    failed = vote.drawn - vote.answered
    parts = []
    if others:
        parts.append(f"{others} other answer{'s' if others > 1 else ''}")
    if failed:
        parts.append(f"{failed} gave none")
    return DISAGREE_WARNING.format(
        agreement=f"{agreement} candidate answers",
        others=f" ({', '.join(parts)})" if parts else "",
    )


def close_attempt(state: AskState, feedback_sent: bool, ok: bool) -> Attempt:
    """The candidate's record (``ok`` when it ran cleanly: it gave an answer to the vote)."""
    return record.close_attempt(state, False, ok=sql_phase.ran_clean(state))


def provisional_attempt(state: AskState) -> Attempt:
    return record.provisional_attempt(state, ok=False if sql_phase.suspect_now(state) else None)


def outcome(state: AskState) -> tuple[Agreement | None, list[Competing], bool]:
    """What the result says of the vote: the agreement, the competing answers, and whether the
    vote left the answer in doubt (it carries the vote's warning: :func:`doubt`)."""
    vote = state.vote
    if vote is None or vote.winner is None or vote.drawn < 2:
        return None, [], False  # no other candidate was drawn (the model failed first): no vote
    competing = [
        Competing(
            g.first.sql,
            g.votes,
            g.first.columns,
            g.first.rows[:PREVIEW_ROWS],
            more=len(g.first.rows) > PREVIEW_ROWS or g.first.truncated,
        )
        for g in vote.groups[1:]
    ]
    return vote.agreement, competing, doubt(state) is not None


def no_clear_lead(state: AskState) -> bool:
    """Whether another answer competed with the winning one and its lead is not clear by the
    vote's own stop rule (:data:`RULE`): the candidates read the question in different ways."""
    vote = state.vote
    return vote is not None and vote.winner is not None and vote.contested and not RULE.clear(vote)


def readings(state: AskState) -> tuple[Reading, ...]:
    """The vote's answers as readings to choose from when its answer has no clear lead
    (:func:`no_clear_lead`), the leading one first; none otherwise. Each keeps its own
    warnings (the result check's), not the vote's."""
    vote = state.vote
    if vote is None or not no_clear_lead(state):
        return ()
    answers = []
    for g in vote.groups:
        first = g.first
        own = first.extra.warnings if isinstance(first.extra, Candidate) else ()
        answers.append((first.sql, g.votes, first.columns, first.rows, first.truncated, own))
    return make_readings(answers, state.target.dialect if state.target is not None else None)


def hands_over(state: AskState) -> bool:
    """Whether the fallback may follow a vote that found no answer."""
    return not state.work.model_error
