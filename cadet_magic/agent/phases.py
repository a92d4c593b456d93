"""The phases, declared in the order they run: each names its attempt's steps and hooks; the
pipeline runs them.

The SQL phase asks for SQL, checks it, runs it, checks the result. When it ends, with an answer
or without, the vote follows when the ``candidates`` option asks for one: more candidate
answers, the answer most of them give. When no answer was found, the fallback phase follows
(when allowed): it asks for a simple SELECT plus pandas code, checks both, runs the SELECT,
then the code. Routing, the retry policy and the control steps (next attempt, hand over,
finish) are the same for all three (:mod:`cadet_magic.agent.pipeline`,
:mod:`cadet_magic.agent.routes`); a phase hands over to one after it in :data:`PHASES`.

Example:
    >>> from cadet_magic.agent.state import initial_state
    >>> waiting = initial_state("q", target="sqlite").replace(work=fb.CodeWork(code="result = df"))
    >>> [str(s.name) for s in FALLBACK_PHASE.steps if s.when(waiting)]
    ['generate', 'check_code', 'execute', 'run_code']
    >>> [str(spec.name) for spec in PHASES]
    ['sql', 'vote', 'fallback']
"""

from __future__ import annotations

from cadet_magic.agent import fallback_phase as fb
from cadet_magic.agent import record, steps
from cadet_magic.agent import sql_phase as sql
from cadet_magic.agent import vote_phase as vote
from cadet_magic.agent.phase_spec import (
    AnswerHooks,
    AttemptHooks,
    Ending,
    Entry,
    Phases,
    PhaseSpec,
    Step,
)
from cadet_magic.agent.state import AskState
from cadet_magic.kinds import StepName
from cadet_magic.result import Phase


def _always(state: AskState) -> bool:
    return True


def _never(state: AskState) -> bool:
    return False


#: The SQL phase: the model's SQL checked, run and its result checked; a suspect result is
#: offered as a candidate answer.
SQL_PHASE = PhaseSpec(
    name=Phase.sql,
    steps=(
        Step(StepName.generate, sql.generate, sql.has_sql),
        Step(StepName.check, steps.check_sql, sql.checked),
        Step(StepName.execute, sql.execute, sql.ran),
        Step(StepName.check_result, sql.check_result, sql.clean),
    ),
    attempt=AttemptHooks(
        diagnose=sql.diagnose,
        close=record.close_attempt,
        provisional=sql.provisional_attempt,
        begin=sql.SqlWork,
    ),
    answer=AnswerHooks(answered=sql.ran_clean, candidate=sql.candidate, warnings=sql.warnings),
    ending=Ending(unchanged=sql.unchanged, hands_over=sql.hands_over),
)

#: The vote: more candidate answers (the SQL phase's first prompt, sampled), each checked, run
#: and its result checked; every one reaches the tally, which adds its answer to the vote;
#: drawn while the vote is not clear, up to the ``candidates`` option. The answer most
#: candidates gave is the vote's candidate (the pipeline answers with it); with none, the
#: fallback follows.
VOTE_PHASE = PhaseSpec(
    name=Phase.vote,
    steps=(
        Step(StepName.generate, vote.generate, _always),
        Step(StepName.check, steps.check_sql, _always, when=sql.has_sql),
        Step(StepName.execute, sql.execute, _always, when=sql.checked),
        Step(StepName.check_result, sql.check_result, _always, when=sql.ran),
        Step(StepName.tally, vote.tally, _always),
    ),
    attempt=AttemptHooks(
        diagnose=vote.nothing_to_diagnose,
        close=vote.close_attempt,
        provisional=vote.provisional_attempt,
        begin=sql.SqlWork,
    ),
    answer=AnswerHooks(answered=_never, candidate=vote.candidate),
    ending=Ending(unchanged=_never, limit=vote.limit, more=vote.more, hands_over=vote.hands_over),
    entry=Entry(start=vote.start, enters=vote.enters, after_answer=True),
)

#: The fallback phase: a simple SELECT plus pandas code (both checked, then run).
FALLBACK_PHASE = PhaseSpec(
    name=Phase.fallback,
    steps=(
        Step(StepName.generate, fb.generate, fb.has_blocks),
        # The code's check runs even when the SELECT's fails: the feedback names both.
        Step(StepName.check, fb.check, fb.has_code, when=fb.to_check),
        Step(StepName.check_code, fb.check_code, fb.both_checked),
        Step(StepName.execute, fb.execute, fb.rows_fetched, when=fb.to_execute),
        Step(StepName.run_code, fb.run_code, fb.code_ran_ok),
    ),
    attempt=AttemptHooks(
        diagnose=fb.diagnose,
        close=fb.close_attempt,
        provisional=fb.provisional_attempt,
        begin=fb.CodeWork,
    ),
    answer=AnswerHooks(answered=fb.code_ran_ok, warnings=fb.warnings),
    ending=Ending(unchanged=fb.unchanged),
    entry=Entry(start=fb.start, prepare=fb.prepare, enters=fb.enters),
)

#: The phases, in the order they run: a phase hands over to one after it here (the fallback,
#: the last, to none).
PHASES: Phases = (SQL_PHASE, VOTE_PHASE, FALLBACK_PHASE)
