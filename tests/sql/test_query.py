"""Reading a checked query costs work linear in its length: which functions it renames
(:attr:`CheckedQuery.renamed`), and a whole question's diagnosis of its failure, on long
queries a **scripted** hostile model writes (``long_queries.json``). The work is counted as
the characters sqlglot generates (writing each node's whole subtree made a 1,500-term ``OR``
cost minutes); never timed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlglot import exp

from cadet_magic.api import ask
from cadet_magic.sql.validate import validate_sql
from tests.helpers import connect_with, sql_reply

CASES = json.loads(Path(__file__).with_name("long_queries.json").read_text())["cases"]
#: Characters sqlglot may generate per character of the query, for everything a question does.
PER_CHARACTER = 10


def long_query(case) -> str:
    if "open" in case:
        body = case["open"] * case["times"] + case["inner"] + case["close"] * case["times"]
    else:
        body = case["join"].join(case["term"].format(i=i) for i in range(case["times"]))
    return case["head"] + body + case["tail"]


class OverBudget(BaseException):
    """More generated than the budget (a BaseException: no ``except Exception`` hides it)."""


@pytest.fixture
def generation_budget(monkeypatch):
    """``limit(n)``: from then on, sqlglot generating more than ``n`` characters in all raises
    :class:`OverBudget`; returns what it generated so far."""
    sqlglot_sql = exp.Expression.sql
    spent = {"chars": 0, "limit": None}

    def counted(self, *args, **kwargs):
        text = sqlglot_sql(self, *args, **kwargs)
        spent["chars"] += len(text)
        if spent["limit"] is not None and spent["chars"] > spent["limit"]:
            raise OverBudget(f"{spent['chars']:,} characters generated")
        return text

    monkeypatch.setattr(exp.Expression, "sql", counted)

    def limit(n: int) -> dict:
        spent.update(chars=0, limit=n)
        return spent

    return limit


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_renamed_functions_are_read_in_linear_work(case, dialect, generation_budget):
    sql = long_query(case)
    query = validate_sql(sql, dialect).query
    assert query is not None
    generation_budget(4 * len(sql))  # each node written alone: its own arguments, as "?"
    renamed = query.renamed
    if "median" in sql and dialect != "duckdb":
        assert renamed == {"PERCENTILE_CONT": "MEDIAN"}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", CASES[:3], ids=[c["name"] for c in CASES[:3]])
def test_a_long_failing_query_is_diagnosed_in_linear_work(case, engine, generation_budget):
    """The whole question on a real engine: the check, the run, the engine's error read and
    diagnosed, with the query as the model wrote it."""
    sql = long_query(case)
    con = connect_with(engine, ["CREATE TABLE orders (customer TEXT, amount REAL)"])

    class Scripted:
        cadet_scripted = True

        def invoke(self, messages):
            return SimpleNamespace(content=sql_reply(sql))

    spent = generation_budget(PER_CHARACTER * len(sql))
    r = ask("Which orders?", con=con, model=Scripted(), candidates=1, max_attempts=1)
    assert not r.ok and r.attempts[0].category is not None
    assert spent["chars"] <= PER_CHARACTER * len(sql)
