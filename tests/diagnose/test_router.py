"""diagnose's contract (engine errors): categories, retryability, details, suggestions, feedback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.db import error_table
from cadet_magic.db.driver_errors import diagnose_error
from cadet_magic.diagnose import Category, Diagnosis, diagnose, no_sql_feedback
from cadet_magic.errors import QueryTimeout
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import Issue

SCHEMA = {
    "orders": ["order_id", "customer_id", "amount", "status"],
    "customers": ["customer_id", "Name"],
}
MESSAGES = json.loads((Path(__file__).parent / "data" / "messages.json").read_text())


#: The categories of a failed SQL attempt: a public contract (values, in this order).
SQL_CATEGORIES = [
    "column_not_found", "table_not_found", "syntax_error", "type_mismatch", "join_error",
    "aggregation_error", "function_not_found", "division_by_zero", "datetime_format",
    "timeout", "permission_denied", "connection_error", "forbidden",
    "multiple_statements", "no_sql", "unknown", "value_not_found",
]  # fmt: skip
#: The fallback phase's own categories (the same enum: one vocabulary for both phases).
FALLBACK_CATEGORIES = [
    "no_blocks", "not_simple", "too_many_rows", "code_refused", "python_error", "code_timeout",
    "code_memory", "no_result", "bad_result", "unavailable",
]  # fmt: skip


def test_category_values_keep_the_contract():
    values = [c.value for c in Category]
    assert values[: len(SQL_CATEGORIES)] == SQL_CATEGORIES
    assert set(FALLBACK_CATEGORIES) <= set(values)
    assert isinstance(Category.timeout, str) and Category.timeout == "timeout"


def test_every_error_kind_is_a_category():
    """The engine edge's vocabulary (ErrorKind) is the diagnosis' categories of engine errors:
    the router turns one into the other by value, so a kind added at the edge without its
    category would fail there."""
    from cadet_magic.errors import ErrorKind

    assert {k.value for k in ErrorKind} <= {c.value for c in Category}
    assert {k.value for k in ErrorKind} <= set(SQL_CATEGORIES)


def test_one_entry():
    """The diagnosis has one entry; the package's public ``diagnose_error`` reads an engine's
    error through that engine's reader, then diagnoses it there."""
    import cadet_magic
    import cadet_magic.diagnose as package

    assert cadet_magic.diagnose_error is diagnose_error
    assert package.diagnose is diagnose
    assert package.Category is Category and package.Diagnosis is Diagnosis
    assert error_table.KIND_ORDER and error_table.STANDARD.rules  # the rules are public


@pytest.mark.parametrize("case", MESSAGES, ids=[m["id"] for m in MESSAGES])
def test_messages(case):
    """Recorded messages (system errors, wrappers, other engines' texts) by category, each
    read by its engine's reader (by every engine's when the engine is not known)."""
    d = diagnose_error(case["message"], engine=case.get("engine"), sql=case.get("sql"),
                       schema=SCHEMA)  # fmt: skip
    assert d.category.value == case["expect"]
    assert d.retryable is (case["expect"] not in ("permission_denied", "connection_error"))
    if "suggestion" in case:
        assert case["suggestion"] in d.suggestions[:3]
    if "identifier" in case:
        assert d.details.name == case["identifier"]


def test_priority_group_by_beats_column():
    d = diagnose_error('column "orders.status" must appear in the GROUP BY clause or be used in '
                       "an aggregate function", sql="SELECT status, SUM(amount) FROM orders",
                       engine="postgresql", schema=SCHEMA)  # fmt: skip
    assert d.category is Category.aggregation_error
    assert d.suggestions == ["orders.status"]
    assert "Keep every aggregation" in d.feedback and "orders.status" in d.feedback


def test_sqlstate_attribute_wins_over_text():
    """The driver's SQLSTATE, read at the edge (the PostgreSQL runner's reader), classifies."""

    class UndefinedTable(Exception):
        sqlstate = "42P01"

    d = diagnose_error(UndefinedTable('relation "ordrs" does not exist'), engine="postgresql",
                       schema=SCHEMA)  # fmt: skip
    assert d.category is Category.table_not_found and d.suggestions[0] == "orders"


def test_wrapped_orig_and_cause():
    class OperationalError(Exception):
        sqlite_errorname = "SQLITE_ERROR"

    class ProgrammingError(Exception):
        def __init__(self, orig):
            super().__init__(f"(sqlite3.OperationalError) {orig}\n[SQL: SELECT amout FROM orders]")
            self.orig = orig

    wrapped = ProgrammingError(OperationalError("no such column: amout"))
    d = diagnose_error(wrapped, sql="SELECT amout FROM orders", engine="sqlite", schema=SCHEMA)
    assert d.category is Category.column_not_found and d.suggestions[0] == "orders.amount"
    assert d.details.exception == "OperationalError"
    assert d.details.position == 8
    try:
        try:
            raise OperationalError("no such table: ordes")
        except OperationalError as e:
            raise RuntimeError("query failed") from e
    except RuntimeError as outer:
        d = diagnose_error(outer, schema=SCHEMA)
    assert d.category is Category.table_not_found and d.suggestions[0] == "orders"


def test_query_timeout():
    d = diagnose(QueryTimeout(5), sql="SELECT * FROM orders a, orders b")
    assert d.category is Category.timeout and d.retryable
    assert d.details.seconds == 5
    assert "LIMIT" in d.feedback and "WHERE" in d.feedback


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("multiple_statements", Category.multiple_statements),
        ("unknown_table", Category.table_not_found),
        ("parse_error", Category.syntax_error),
        ("forbidden_statement", Category.forbidden),
        ("comment", Category.forbidden),
    ],
)
def test_safety_refusal(code, expected):
    message = {
        "unknown_table": "Unknown table 'ordrs'; tables you may use: customers, orders",
    }.get(code, f"refused: {code}")
    err = SafetyRefusal([Issue(code, message)])
    d = diagnose(err, sql="SELECT * FROM ordrs", target="duckdb", schema=SCHEMA)
    assert d.category is expected
    assert d.details.codes == (code,)
    assert message in d.feedback  # the feedback uses the issue messages
    if code == "unknown_table":
        assert d.suggestions[0] == "orders"


def test_schema_object_and_mapping_agree():
    err = "no such column: amout"
    a = diagnose_error(err, engine="sqlite", sql="SELECT amout FROM orders", schema=SCHEMA)
    b = diagnose_error(
        err, engine="sqlite", sql="SELECT amout FROM orders", schema=Schema.from_mapping(SCHEMA)
    )
    assert a.suggestions == b.suggestions == ["orders.amount"]


def test_no_schema_keeps_engine_candidates():
    d = diagnose_error('Binder Error: Referenced column "amout" not found in FROM clause!\n'
                       'Candidate bindings: "amount", "status"', engine="duckdb")  # fmt: skip
    assert d.suggestions == ["amount", "status"]


def test_case_sensitive_column_feedback():
    d = diagnose_error('column "name" does not exist', sql="SELECT name FROM customers",
                       engine="postgresql", schema=SCHEMA)  # fmt: skip
    assert d.suggestions[0] == "customers.Name" and d.details.case_sensitive
    assert "double quotes" in d.feedback


def test_derived_table_alias_gets_cte_advice():
    d = diagnose_error("no such column: t.x", sql="SELECT t.x FROM (SELECT amount AS y FROM orders) t",
                       engine="sqlite", schema=SCHEMA)  # fmt: skip
    assert d.category is Category.column_not_found and "CTE" in d.feedback


def test_dateadd_day_is_a_foreign_function():
    d = diagnose_error('column "day" does not exist', sql="SELECT DATEADD(day, 1, created) FROM orders",
                       engine="postgresql", schema=SCHEMA)  # fmt: skip
    assert d.category is Category.function_not_found and d.details.name == "DATEADD"
    assert "INTERVAL" in d.feedback


@pytest.mark.parametrize(
    ("message", "dialect", "needle"),
    [
        ("division by zero", "postgresql", "NULLIF"),
        ('invalid input syntax for type date: "yesterday"', "postgresql", "to_date"),
        ('Conversion Error: invalid date field format: "01/02/2024"', "duckdb", "strptime"),
        ("no such function: date_format", "sqlite", "strftime"),
        (
            "Binder Error: Cannot compare values of type VARCHAR and type INTEGER_LITERAL",
            "duckdb",
            "CAST",
        ),
        ("aggregate functions are not allowed in WHERE", "postgresql", "HAVING"),
        ('relation "t" does not exist', "postgresql", "CTE"),
    ],
)
def test_specific_feedback(message, dialect, needle):
    d = diagnose_error(message, sql="SELECT 1", engine=dialect, schema=SCHEMA)
    assert needle in d.feedback, d.feedback


@pytest.mark.parametrize("category", list(Category))
def test_feedback_is_short_and_shows_the_sql(category):
    from cadet_magic.diagnose.feedback import render
    from cadet_magic.diagnose.found import found

    sql = "SELECT amout FROM orders"
    names = ("orders.amount", "orders.status", "customers.Name")
    what = found(category, identifier="amout", issues=("Refused.",), suggestions=names)
    text = render(sql, what, Target.named("postgresql"))
    guidance = text.split("```\n", 2)[-1]
    assert text.startswith("Your previous query failed:") and sql in text
    assert len(guidance.split()) <= 62, (category, len(guidance.split()), guidance)


def test_no_sql_feedback():
    assert "```sql" in no_sql_feedback("Sure, here is the answer")


def test_double_quoted_string_literal():
    sql = 'SELECT status FROM orders WHERE status = "JetBlue Airways"'
    d = diagnose_error('column "JetBlue Airways" does not exist', sql=sql, engine="postgresql")
    assert d.category is Category.column_not_found and "single quotes" in d.feedback


def test_subquery_without_alias():
    d = diagnose_error("subquery in FROM must have an alias", sql="SELECT 1", engine="postgresql")
    assert d.category is Category.syntax_error and "CTE" in d.feedback
