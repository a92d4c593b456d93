"""The corruption generator's mutation functions, one by one."""

from __future__ import annotations

import random

import pytest
import sqlglot

from benchmarks.corruption_mutate import MUTATIONS, typo
from cadet_magic.schema.structure import Column, Schema, Table

SCHEMA = Schema(
    (
        Table("singer", (Column("singer_id", "INTEGER"), Column("name", "TEXT"),
                         Column("age", "INTEGER"), Column("country", "TEXT"))),
        Table("concert", (Column("concert_id", "INTEGER"), Column("singer_id", "INTEGER"),
                          Column("year", "TEXT"))),
        Table("stadium", (Column("stadium_id", "INTEGER"), Column("name", "TEXT"))),
    )
)  # fmt: skip
JOIN = (
    "SELECT T1.name, COUNT(*) FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = "
    "T2.singer_id WHERE T1.country = 'France' GROUP BY T1.name HAVING COUNT(*) > 1"
)


def _mutate(kind: str, sql: str = JOIN, engine: str = "sqlite", seed: int = 0):
    tree = sqlglot.parse_one(sql, read="sqlite")
    return MUTATIONS[kind](tree, SCHEMA, random.Random(seed), engine)


#: Queries the realistic mistakes need besides JOIN (a joined table's column in SELECT, an
#: aggregate in ORDER BY).
USES_JOIN = (
    "SELECT T1.name, T2.year FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = "
    "T2.singer_id WHERE T1.age > 20"
)
ORDERED = (
    "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id "
    "GROUP BY T1.name ORDER BY COUNT(*) DESC LIMIT 1"
)
QUERY_FOR = {"dropped_join": USES_JOIN, "aggregate_in_order_by": ORDERED}


def test_every_kind_applies_to_a_rich_query():
    for kind in MUTATIONS:
        for engine in ("duckdb", "sqlite", "postgresql"):
            sql = QUERY_FOR.get(kind, JOIN)
            m = _mutate(kind, sql, engine=engine)
            assert m is not None, (kind, engine)
            assert (
                m.sql
                != sqlglot.transpile(
                    sql, read="sqlite", write={"postgresql": "postgres"}.get(engine, engine)
                )[0]
            )


@pytest.mark.parametrize("seed", range(20))
def test_misspelled_and_invented_columns_are_not_real(seed):
    real = {c.lower() for t in SCHEMA.tables for c in t.column_names()}
    for kind in ("misspelled_column", "invented_column"):
        m = _mutate(kind, seed=seed)
        assert m.category == "column_not_found"
        (target,) = m.targets
        table, col = target.split(".")
        assert col in real and table in {"singer", "concert"}
        used = {c.name.lower() for c in sqlglot.parse_one(m.sql).find_all(sqlglot.exp.Column)}
        assert used - real, m.sql


def test_typo_changes_the_name():
    rng = random.Random(4)
    assert all(typo("country", rng) != "country" for _ in range(50))


def test_wrong_table_keeps_the_original_as_target():
    m = _mutate("wrong_table", "SELECT name FROM singer WHERE age > 20")
    assert m.targets == ("singer",) and SCHEMA.table(m.sql.split("FROM ")[1].split()[0]) is None


def test_dropped_group_by_keeps_the_column_in_select():
    m = _mutate("dropped_group_by")
    assert "GROUP BY" not in m.sql and m.targets == ("singer.name",)
    assert _mutate("dropped_group_by", "SELECT name FROM singer") is None


def test_unqualified_shared_column():
    m = _mutate("unqualified_shared_column")
    assert m.category == "join_error" and m.targets[0].endswith(".singer_id")
    assert " singer_id = " in m.sql or "ON singer_id" in m.sql or "= singer_id" in m.sql


def test_text_vs_number():
    m = _mutate("text_vs_number")
    assert m.category == "type_mismatch" and "country = 'France'" not in m.sql
    m = _mutate("text_vs_number", "SELECT name FROM singer WHERE age > 20")
    assert "age > 'none'" in m.sql or "age > 'N/A'" in m.sql or "age > 'high'" in m.sql


def test_syntax_slip_and_division():
    assert _mutate("syntax_slip").category == "syntax_error"
    assert "//" in _mutate("division_by_zero", "SELECT age FROM singer", "duckdb").sql
    assert "/ 0" in _mutate("division_by_zero", "SELECT age FROM singer", "postgresql").sql


def test_foreign_function_is_foreign_to_the_engine():
    from benchmarks.corruption_mutate import FOREIGN_FUNCTIONS

    for engine, pool in FOREIGN_FUNCTIONS.items():
        m = _mutate("foreign_function", "SELECT name FROM singer", engine)
        assert any(f"{name.upper()}(" in m.sql for name, _ in pool), m.sql


def test_aggregate_in_where_moves_having():
    m = _mutate("aggregate_in_where")
    assert "HAVING" not in m.sql and "COUNT(*) > 1" in m.sql.split("WHERE")[1]


def test_dropped_join_keeps_its_columns():
    m = _mutate("dropped_join", USES_JOIN)
    assert "JOIN" not in m.sql and "T2.year" in m.sql
    assert (m.category, m.detail, m.targets) == ("join_error", "missing_join", ("concert.year",))
    assert _mutate("dropped_join") is None  # the joined table is used only in its ON


def test_unjoined_qualifier_names_a_table_outside_the_query():
    m = _mutate("unjoined_qualifier")
    assert "stadium.name" in m.sql and m.targets == ("singer.name",)


def test_nested_aggregate_and_aggregate_in_order_by():
    assert "MAX(COUNT(*))" in _mutate("nested_aggregate").sql
    m = _mutate("aggregate_in_order_by", ORDERED)
    assert "GROUP BY" not in m.sql and "ORDER BY COUNT(*)" in m.sql
    assert m.targets == ("singer.name",) and m.detail == "missing_group_by"
    assert _mutate("aggregate_in_order_by") is None  # HAVING needs its GROUP BY


@pytest.mark.parametrize("seed", range(20))
def test_cut_short_ends_mid_name_or_after_a_keyword(seed):
    m = _mutate("cut_short", seed=seed)
    full = sqlglot.transpile(JOIN, read="sqlite", write="sqlite")[0]
    assert full.startswith(m.sql) and len(m.sql) < len(full) and m.detail == "truncated"
    if m.targets:
        (word,) = m.targets
        last = m.sql.split()[-1].split(".")[-1].lower()
        assert word.startswith(last) and len(word) >= len(last) + 2


@pytest.mark.parametrize("seed", range(10))
def test_placeholder_replaces_a_literal(seed):
    from cadet_magic.diagnose.malformed import placeholders

    m = _mutate("placeholder", seed=seed)
    assert placeholders(m.sql) and m.category == "syntax_error"


def test_foreign_table_comes_from_another_database():
    m = _mutate("foreign_table", "SELECT name, age FROM singer WHERE age > 20")
    table = m.sql.split("FROM ")[1].split()[0]
    assert SCHEMA.table(table) is None and m.targets == ("singer",)
