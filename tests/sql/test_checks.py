"""The tree rules: one module each, chained in order from RULES (issues in tree order)."""

from __future__ import annotations

import pytest
import sqlglot

from cadet_magic.sql import checks
from cadet_magic.sql.checks import RULES, Context, check_tree
from cadet_magic.sql.target import Target

CASES = [
    ("SELECT * FROM t FOR UPDATE", "postgres", ["row_lock"]),
    ("SELECT * INTO t2 FROM t", "postgres", ["select_into", "unknown_table"]),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "postgres", ["data_modifying_cte"]),
    ("SELECT pg_sleep(1) FROM t", "postgres", ["forbidden_function"]),
    ("SELECT * FROM nope", "duckdb", ["unknown_table"]),
    ("SELECT pg_sleep(1) FROM nope FOR UPDATE", "postgres", None),
    ("SELECT @x := 1, @@datadir FROM t", "mysql", ["variable", "variable"]),
    ("SELECT 1 FROM DUAL", "mysql", []),
    ("SELECT 1 FROM `DUAL`", "mysql", ["unknown_table"]),
]


@pytest.mark.parametrize(("sql", "dialect", "codes"), CASES)
def test_rules_in_tree_order(sql: str, dialect: str, codes: list[str] | None) -> None:
    tree = sqlglot.parse_one(sql, read=dialect)
    found = [i.code for i in check_tree(tree, Context(Target.named(dialect).with_names(["t"])))]
    if codes is None:  # several at once: each rule speaks, unknown tables last
        assert set(found) == {"forbidden_function", "row_lock", "unknown_table"}
        assert found[-1] == "unknown_table"
    else:
        assert found == codes


def test_every_rule_is_a_module_with_the_same_shape() -> None:
    assert [r.__name__.rsplit(".", 1)[1] for r in RULES] == [
        "side_effects",
        "select_into",
        "row_lock",
        "variables",
        "function_calls",
        "server_facts",
        "substitution",
        "tables",
    ]
    for rule in RULES:
        assert rule.__name__.startswith(checks.__name__ + ".")
        assert isinstance(rule.NODES, tuple) and callable(rule.check) and callable(rule.finish)
        assert rule.__doc__ and ">>>" in rule.__doc__
