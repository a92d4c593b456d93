"""The phases, declared: each names its attempt's steps and hooks; the pipeline runs them.

The SQL phase asks for SQL, checks it, runs it, checks the result; at the maximum it hands
over to the fallback phase, which asks for a simple SELECT plus pandas code, checks both,
runs the SELECT, then the code. Routing, the retry policy and the control steps (next
attempt, hand over, finish) are the same for both (:mod:`cadet_magic.agent.pipeline`,
:mod:`cadet_magic.agent.routes`).

Example:
    >>> from cadet_magic.agent.state import initial_state
    >>> waiting = initial_state("q", dialect="sqlite").replace(work=fb.CodeWork(code="result = df"))
    >>> [s.name for s in FALLBACK_PHASE.steps if s.when(waiting)]
    ['generate', 'check_code', 'execute', 'run_code']
    >>> [str(name) for name in PHASES]
    ['sql', 'fallback']
"""

from __future__ import annotations

from cadet_magic.agent import fallback_phase as fb
from cadet_magic.agent import record, steps
from cadet_magic.agent import sql_phase as sql
from cadet_magic.agent.pipeline import PhaseSpec, Step
from cadet_magic.agent.state import SqlWork
from cadet_magic.result import Phase

#: The fallback phase: a simple SELECT plus pandas code (both checked, then run).
FALLBACK_PHASE = PhaseSpec(
    name=Phase.fallback,
    steps=(
        Step("generate", fb.generate, fb.has_blocks),
        # The code's check runs even when the SELECT's fails: the feedback names both.
        Step("check", fb.check, fb.has_code, when=fb.has_sql),
        Step("check_code", fb.check_code, fb.both_checked),
        Step("execute", fb.execute, fb.rows_fetched),
        Step("run_code", fb.run_code, fb.code_ran_ok),
    ),
    diagnose=fb.diagnose,
    close=fb.close_attempt,
    provisional=fb.provisional_attempt,
    answered=fb.code_ran_ok,
    unchanged=fb.unchanged,
    begin=fb.CodeWork,
    start=fb.start,
    prepare=fb.prepare,
)

#: The SQL phase: the model's SQL checked, run and its result checked; a suspect result is
#: kept as a candidate answer.
SQL_PHASE = PhaseSpec(
    name=Phase.sql,
    steps=(
        Step("generate", sql.generate, sql.has_sql),
        Step("check", steps.check_sql, sql.checked),
        Step("execute", sql.execute, sql.ran),
        Step("check_result", sql.check_result, sql.clean),
    ),
    diagnose=sql.diagnose,
    close=record.close_attempt,
    provisional=sql.provisional_attempt,
    answered=sql.ran_clean,
    unchanged=sql.unchanged,
    begin=SqlWork,
    keep=sql.keep,
    warnings=sql.warnings,
    next=FALLBACK_PHASE,
    hands_over=sql.fallback_due,
)

#: Each phase by name, in the order they run.
PHASES: dict[str, PhaseSpec] = {Phase.sql: SQL_PHASE, Phase.fallback: FALLBACK_PHASE}
