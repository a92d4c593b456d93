"""MySQL/MariaDB errors (server error numbers, SQLSTATEs) read into the right category and
suggestions: recorded messages offline, raw and SQLAlchemy-wrapped, and the live server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.db.driver_errors import diagnose_error, engine_error

HERE = Path(__file__).parent / "data"
SHARED = json.loads((HERE / "engine_cases.json").read_text())
DATA = json.loads((HERE / "mysql_cases.json").read_text())
SCHEMA = SHARED["schema"]
ERRORS = [c for c in DATA["cases"] if c["expect"] is not None]


def _error(case: dict) -> BaseException:
    pymysql = pytest.importorskip("pymysql")
    cls = getattr(pymysql.err, case["class"])
    e = cls(case["errno"], case["message"])
    e.sqlstate = case["sqlstate"]
    return e


def _check(case: dict, error: BaseException | str) -> None:
    d = diagnose_error(error, engine="mysql", sql=case["sql"], schema=SCHEMA)
    assert d.category.value == case["expect"], (case["id"], str(error))
    if case["suggestion"]:
        assert case["suggestion"] in d.suggestions[:3], (case["id"], d.suggestions)
    assert d.feedback.startswith("Your previous query failed:")


@pytest.mark.parametrize("case", ERRORS, ids=[c["id"] for c in ERRORS])
def test_recorded_pymysql_error(case):
    _check(case, _error(case))


@pytest.mark.parametrize("case", ERRORS, ids=[c["id"] for c in ERRORS])
def test_recorded_sqlalchemy_text(case):
    """The text SQLAlchemy wraps a PyMySQL error in (as logged, or shown by jupysql)."""
    text = (
        f"(pymysql.err.{case['class']}) ({case['errno']}, {json.dumps(case['message'])})\n"
        f"[SQL: {case['sql']}]\n(Background on this error at: https://sqlalche.me/e/20/e3q8)"
    )
    _check(case, engine_error(text))


def test_the_reader_keeps_the_server_number_and_state():
    case = next(c for c in ERRORS if c["id"] == "col")
    error = engine_error(_error(case))
    assert error.primary == "Unknown column 'amout' in 'SELECT'"
    assert error.sqlstate == "42703" and error.code == "1054" and error.engine == "mysql"
    assert error.kind.value == "column_not_found" and error.identifier.text == "amout"
    assert error.details == {"mysql_errno": 1054, "mysql_sqlstate": "42S22"}


@pytest.mark.parametrize(
    ("errno", "message", "category"),
    [
        (1969, "Query execution was interrupted (max_statement_time exceeded)", "timeout"),
        (
            3024,
            "Query execution was interrupted, maximum statement execution time exceeded",
            "timeout",
        ),
        (1317, "Query execution was interrupted", "timeout"),
        (1792, "Cannot execute statement in a READ ONLY transaction", "permission_denied"),
        (
            1142,
            "SELECT command denied to user 'ro'@'localhost' for table 'orders'",
            "permission_denied",
        ),
        (2013, "Lost connection to server during query", "connection_error"),
        (1111, "Invalid use of group function", "aggregation_error"),
        (1055, "'d.orders.status' isn't in GROUP BY", "aggregation_error"),
        (1292, "Incorrect datetime value: '2024-13-45'", "datetime_format"),
        (1690, "BIGINT UNSIGNED value is out of range in '1 - 2'", "type_mismatch"),
    ],
)
def test_error_numbers(errno, message, category):
    pymysql = pytest.importorskip("pymysql")
    d = diagnose_error(pymysql.err.OperationalError(errno, message), engine="mysql")
    assert d.category.value == category


@pytest.fixture(scope="module")
def mariadb_cursor(mysql_server):
    import pymysql

    from workloads.mariadb import connect_args

    con = pymysql.connect(**connect_args(mysql_server), autocommit=True)
    cur = con.cursor()
    cur.execute("DROP DATABASE IF EXISTS diag")
    cur.execute("CREATE DATABASE diag")
    cur.execute("USE diag")
    for s in SHARED["ddl"]:
        cur.execute(s)
    yield cur
    cur.execute("DROP DATABASE diag")
    con.close()


@pytest.mark.mysql
@pytest.mark.parametrize("case", DATA["cases"], ids=[c["id"] for c in DATA["cases"]])
def test_live_mariadb(mariadb_cursor, case):
    """The live server raises the recorded error (or accepts the query) and it reads right."""
    try:
        mariadb_cursor.execute(case["sql"])
        mariadb_cursor.fetchall()
        error = None
    except Exception as e:  # noqa: BLE001
        error = e
    if case["expect"] is None:
        assert error is None, (case["id"], error)
        return
    assert error is not None and error.args[0] == case["errno"], (case["id"], error)
    _check(case, error)
