"""Attempt records: the outcome and message derived once from the diagnosis; provisional
records while an attempt runs."""

import doctest

import pytest

import cadet_magic.agent.record as record
from cadet_magic.agent.state import initial_state
from cadet_magic.diagnose.model import Category, Diagnosis
from cadet_magic.options import AskOptions
from cadet_magic.result import Phase
from cadet_magic.runner import RunResult
from cadet_magic.sql.validate import validate_sql


def state(attempts=(), **work):
    """A state whose SQL attempt 2 is in progress with the fields ``work``."""
    s = initial_state("q", target="sqlite", options=AskOptions()).replace(attempts=attempts)
    return s.replace(phase=Phase.sql).with_work(number=work.pop("attempt", 2), **work)


def test_doctests():
    assert doctest.testmod(record).failed == 0


@pytest.mark.parametrize(
    ("fields", "outcome", "category"),
    [
        ({"sql": "SELECT 1", "execution": RunResult([], [])}, "ok", None),
        ({"model_error": "The model call failed."}, "model_error", None),
        (
            {
                "sql": "SELECT x FROM t",
                "diagnosis": Diagnosis(
                    Category.column_not_found, True, outcome="error", error="no such column: x"
                ),
            },
            "error",
            "column_not_found",
        ),
        (
            {
                "sql": "DROP TABLE t",
                "diagnosis": Diagnosis(Category.forbidden, True, outcome="refused", error="DROP"),
            },
            "refused",
            "forbidden",
        ),
    ],
)
def test_outcome_comes_from_the_diagnosis(fields, outcome, category):
    a = record.close_attempt(state(**fields), feedback_sent=False)
    assert (str(a.outcome), a.category, a.number, a.running) == (outcome, category, 2, False)


def test_feedback_is_recorded_only_when_sent():
    d = Diagnosis(Category.column_not_found, True, feedback="Use y.", outcome="error", error="e")
    s = state(sql="SELECT x FROM t", diagnosis=d)
    assert record.close_attempt(s, feedback_sent=True).feedback == "Use y."
    assert record.close_attempt(s, feedback_sent=False).feedback is None


def test_provisional_record_shows_a_refusal_before_the_diagnosis():
    verdict = validate_sql("DELETE FROM t", "sqlite")
    a = record.provisional_attempt(state(sql="DELETE FROM t", check=verdict))
    assert a.running and str(a.outcome) == "refused" and a.error


def test_a_later_phase_adds_its_own_refusals_and_failure():
    a = record.provisional_attempt(state(sql="SELECT a FROM t"), None, ["no imports"], None)
    assert str(a.outcome) == "refused" and a.error == "no imports"
    a = record.provisional_attempt(state(sql="SELECT a FROM t"), None, [], "KeyError: 'b'")
    assert str(a.outcome) == "error" and a.error == "KeyError: 'b'"


def test_the_diff_against_the_previous_attempt_of_the_phase():
    ran = RunResult([], [])
    first = record.close_attempt(state(attempt=1, sql="SELECT a FROM t", execution=ran), False)
    s = state(sql="SELECT b FROM t", execution=ran, attempts=(first,))
    assert record.sql_change(s) and record.same_phase(s) == [first]
