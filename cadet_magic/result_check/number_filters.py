"""Comparisons of a numeric column with numbers in an executed query (``age > 200``,
``price BETWEEN 1 AND 9``), read on its syntax tree with each column resolved in its own scope
as :mod:`.values` resolves text filters: the result check (:mod:`.result_check`) warns when no
stored value can satisfy one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from cadet_magic.result_check.values import resolve_column, walk_scopes
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.target import Target

_NUMBER_TYPES = ("int", "real", "float", "double", "numeric", "decimal", "number")
_RANGE_OPS: dict[type, str] = {exp.EQ: "=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}


@dataclass(frozen=True)
class NumberFilter:
    """A comparison of a numeric column with numbers (``op`` one of ``= > >= < <=`` with one
    value, or ``BETWEEN`` with two)."""

    table: str
    db: str | None
    column: str
    op: str
    values: tuple[float, ...]

    @property
    def where(self) -> str:
        return f"{self.table}.{self.column}"

    def text(self) -> str:
        """The comparison in words, e.g. ``age > 200``."""
        nums = [f"{v:g}" for v in self.values]
        if self.op == "BETWEEN":
            return f"{self.column} BETWEEN {nums[0]} AND {nums[1]}"
        return f"{self.column} {self.op} {nums[0]}"

    def outside(self, low: float, high: float) -> bool:
        """Whether no value in [low, high] can satisfy the comparison.

        Example:
            >>> NumberFilter("t", None, "age", ">", (200,)).outside(18, 60)
            True
            >>> NumberFilter("t", None, "age", "BETWEEN", (10, 20)).outside(18, 60)
            False
        """
        v = self.values
        return {
            "=": lambda: not low <= v[0] <= high,
            ">": lambda: high <= v[0],
            ">=": lambda: high < v[0],
            "<": lambda: low >= v[0],
            "<=": lambda: low > v[0],
            "BETWEEN": lambda: v[1] < low or v[0] > high,
        }[self.op]()


def _number(node: Any) -> float | None:
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return -inner if inner is not None else None
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return float(node.this)
        except ValueError:
            return None
    return None


def number_filters(sql: str, target: Target, schema: Schema) -> list[NumberFilter]:
    """Every comparison of a numeric column of a catalog table with numbers in ``sql``.

    Example:
        >>> from cadet_magic.schema.structure import Column, Schema, Table
        >>> s = Schema((Table("t", (Column("age", "INT"), Column("name", "TEXT"))),))
        >>> [f.text() for f in number_filters(
        ...     "SELECT * FROM t WHERE age > 200 AND 5 >= age AND age BETWEEN 1 AND 9", Target.named("sqlite"), s)]
        ['age > 200', 'age <= 5', 'age BETWEEN 1 AND 9']
    """
    walked = walk_scopes(sql, target)
    if walked is None:
        return []
    tree, scopes = walked
    out: dict[tuple, NumberFilter] = {}
    for node in tree.find_all(*_RANGE_OPS, exp.Between, bfs=False):
        nums: tuple[float | None, ...]
        if isinstance(node, exp.Between):
            col, nums = node.this, (_number(node.args.get("low")), _number(node.args.get("high")))
            op = "BETWEEN"
        else:
            col, other, op = node.this, node.expression, _RANGE_OPS[type(node)]
            if not isinstance(col, exp.Column):
                col, other, op = other, col, _FLIPPED[op]
            nums = (_number(other),)
        if not isinstance(col, exp.Column) or any(n is None for n in nums):
            continue
        resolved = resolve_column(col, scopes, schema)
        if resolved is None or not any(k in resolved[1].type.lower() for k in _NUMBER_TYPES):
            continue
        table, column = resolved
        f = NumberFilter(
            table.name, table.schema, column.name, op, tuple(n for n in nums if n is not None)
        )
        out.setdefault((f.table, f.column, f.op, f.values), f)
    return list(out.values())
