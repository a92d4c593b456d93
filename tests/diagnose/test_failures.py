"""One entry point for every failure: diagnose/failures.py."""

import doctest
import sqlite3

import pytest

import cadet_magic.diagnose.failures as failures
from cadet_magic.db.driver_errors import diagnose_error, engine_error
from cadet_magic.diagnose.failures import (
    CodeFailed,
    CodeRefused,
    NoBlocks,
    NoSQL,
    NotSimple,
    TooManyRows,
    combine,
    diagnose,
)
from cadet_magic.fallback.in_process import CodeError
from cadet_magic.result import Outcome
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.validate import Issue


def test_doctests():
    assert doctest.testmod(failures).failed == 0


CASES = [
    (NoSQL("no"), "no_sql", Outcome.no_sql, "The reply contained no SQL."),
    (NoBlocks(False, True), "no_blocks", Outcome.no_sql, "The reply contained no SQL."),
    (NotSimple([Issue("not_simple", "join")]), "not_simple", Outcome.refused, "join"),
    (CodeRefused(["imports"]), "code_refused", Outcome.refused, "imports"),
    (TooManyRows(5), "too_many_rows", Outcome.error, "The SELECT returned more than 5 rows."),
    (CodeFailed(CodeError("timeout", "Timeout", "too slow")), "code_timeout", Outcome.timeout, None),
    (CodeFailed(CodeError("error", "KeyError", "'x'", 1), ["a"]), "python_error", Outcome.error, None),
    (SafetyRefusal([Issue("forbidden_statement", "DROP")]), "forbidden", Outcome.refused, "DROP"),
    (engine_error("no such table: x", "sqlite"), "table_not_found", Outcome.error, "no such table: x"),
]  # fmt: skip


@pytest.mark.parametrize(("failure", "category", "outcome", "error"), CASES)
def test_every_failure_kind(failure, category, outcome, error):
    d = diagnose(failure, sql="SELECT 1", target="sqlite")
    assert d.category == category and d.outcome == outcome and d.feedback
    if error is not None:
        assert d.error == error


def test_unknown_failure():
    with pytest.raises(TypeError):
        diagnose(object())


def test_the_exception_stays_with_the_diagnosis():
    """Naming a function as the model wrote it keeps the driver's exception (class, state)."""
    con = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError) as info:
        con.execute("SELECT percentile_cont(1)")
    d = diagnose_error(info.value, engine="sqlite", sql="SELECT median(1)")
    assert d.exception.__cause__ is info.value and d.exception.kinds == ("OperationalError",)
    # the record names what the model wrote, not what the check regenerated for SQLite
    assert "MEDIAN" in d.details.message.upper()
    assert d.error == "no such function: MEDIAN" and "percentile" not in d.feedback.lower()
    assert d.details.name == "MEDIAN"


def test_combine_labels_and_retryable():
    d = combine(
        [diagnose(NoBlocks(True, False)), diagnose(CodeFailed(CodeError("worker", "W", "gone")))]
    )
    assert not d.retryable and d.outcome == Outcome.no_sql
