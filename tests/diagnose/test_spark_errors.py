"""Spark's error conditions and SQLSTATEs (classic and Spark Connect) read into the same
categories and suggestions as the other engines, on the SQL of engine_cases.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.db.driver_errors import diagnose_error

pytestmark = pytest.mark.spark

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "engine_cases.json").read_text())
SPARK = json.loads((DATA / "spark_cases.json").read_text())
_READY: set[int] = set()


def _setup(spark) -> None:
    if id(spark) in _READY:
        return
    spark.sql("CREATE DATABASE IF NOT EXISTS diag")
    for s in CASES["ddl"]:
        s = (
            s.replace("INTEGER", "INT")
            .replace("TABLE ", "TABLE diag.")
            .replace("INTO ", "INTO diag.")
        )
        if s.startswith("CREATE"):
            spark.sql(s.replace("CREATE TABLE ", "DROP TABLE IF EXISTS ").split(" (")[0])
            spark.sql(s + " USING parquet")
        else:
            spark.sql(s.replace("'2024-01-01')", "DATE'2024-01-01')"))
    _READY.add(id(spark))


def _qualified(sql: str) -> str:
    """The case's SQL reading the tables of the ``diag`` database (the session's current one
    stays as it is)."""
    import re

    return re.sub(r"\b(FROM|JOIN) (orders|customers)\b", r"\1 diag.\2", sql)


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["id"] for c in CASES["cases"]])
def test_spark_error_category(spark, case):
    _setup(spark)
    expected = SPARK["expect"][case["id"]]
    sql = _qualified(case["sql"])
    try:
        spark.sql(sql).limit(5).collect()
        error = None
    except Exception as e:  # noqa: BLE001 - Spark's own error is what is read
        error = e
    if expected is None:
        assert error is None, error
        return
    assert error is not None, f"{case['id']}: Spark accepted it"
    d = diagnose_error(error, engine="spark", sql=sql, schema=CASES["schema"])
    assert d.category.value == expected, (case["id"], str(error)[:300])
    assert d.details.sqlstate and d.details.code  # Spark's SQLSTATE and condition
    suggestion = SPARK["suggestion"].get(case["id"], case["suggestion"])
    if suggestion:
        assert suggestion in d.suggestions[:3], (case["id"], d.suggestions)
    assert d.feedback.startswith("Your previous query failed:")
    assert "SQLSTATE" not in d.details.primary and "`" not in d.details.primary
