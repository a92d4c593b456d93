"""The phases, declared: each names its attempt's steps and hooks; the pipeline runs them.

The SQL phase asks for SQL, checks it, runs it, checks the result; at the maximum it hands
over to the fallback phase, which asks for a simple SELECT plus pandas code, checks both,
runs the SELECT, then the code. Routing, the retry policy and the control steps (next
attempt, hand over, finish) are the same for both (:mod:`cadet_magic.agent.pipeline`,
:mod:`cadet_magic.agent.routes`).

Example:
    >>> [s.name for s in FALLBACK_PHASE.steps if s.when({"sql": None, "code": "result = df"})]
    ['generate', 'check_code', 'execute', 'run_code']
    >>> [str(name) for name in PHASES]
    ['sql', 'fallback']
"""

from __future__ import annotations

from cadet_magic.agent import fallback_phase as fb
from cadet_magic.agent import nodes, record, result_step, routes
from cadet_magic.agent.pipeline import PhaseSpec, Step
from cadet_magic.agent.state import AskState
from cadet_magic.result import Phase


def has_sql(state: AskState) -> bool:
    return bool(state.get("sql"))


def ran(state: AskState) -> bool:
    return state.get("execution") is not None


def clean(state: AskState) -> bool:
    """The result check did not find the run suspect."""
    return not result_step.suspect_now(state)


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
    fields=fb.FIELDS,
    start=fb.start,
    prepare=fb.prepare,
)

#: The SQL phase: the model's SQL checked, run and its result checked.
SQL_PHASE = PhaseSpec(
    name=Phase.sql,
    steps=(
        Step("generate", nodes.generate, has_sql),
        Step("check", nodes.check, routes.checked),
        Step("execute", nodes.execute, ran),
        Step("check_result", result_step.check_result, clean),
    ),
    diagnose=nodes.diagnose,
    close=record.close_attempt,
    provisional=result_step.provisional_attempt,
    answered=result_step.ran_clean,
    unchanged=routes.unchanged_sql,
    next=FALLBACK_PHASE,
    hands_over=routes.fallback_due,
)

#: Each phase by name, in the order they run.
PHASES: dict[str, PhaseSpec] = {Phase.sql: SQL_PHASE, Phase.fallback: FALLBACK_PHASE}
