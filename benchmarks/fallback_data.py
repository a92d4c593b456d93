"""The fallback benchmark's questions, databases, gold answers and comparison (no model here).

The questions (``benchmarks/fallback/questions.json``, written for this repository) ask for a
computation that SQL lacks or makes long: statistics the engine lacks (median, percentiles,
standard deviation on SQLite), time series (rolling averages, growth, running totals, cumulative
shares), pivots, rank within groups, string and date work. Each holds its gold answer as a short
pandas program over the database's tables as DataFrames (``t[name]``, read in full), and how an
answer is compared with it:

- ``value``: the answer has one row, and one of its cells is the gold value (numbers within the
  question's relative ``tolerance``, or 0.005 absolute, text exactly, case aside);
- ``rows``: for each of the gold's columns one of the answer's columns holds its values, and the
  rows agree as multisets (extra answer columns are allowed: an index pandas kept, a count);
- ``rows_ordered``: the same, rows in the gold's order.

Databases: the sample shop (:mod:`cadet_magic.examples.shop`) built in SQLite and in DuckDB,
and Spider dev databases read in place (``$CADET_DATA/spider-dev``, SQLite). Every third
question (its position in the file, 0, 3, 6, ...) is a **tuning** question: where the route is
tried and chosen; the figures are reported on the others (**held out**), apart.

Example:
    >>> same_answer(["m"], [(2.5,)], {"compare": "value", "tolerance": 0.001}, 2.5)
    True
    >>> import pandas as pd
    >>> gold = pd.DataFrame({"k": ["a", "b"], "v": [1.0, 2.0]})
    >>> same_answer(["v", "k", "n"], [(2.0, "b", 7), (1.0, "a", 3)], {"compare": "rows"}, gold)
    True
    >>> same_answer(["v", "k"], [(2.0, "b"), (1.0, "a")], {"compare": "rows_ordered"}, gold)
    False
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import sqlite3
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "fallback"
QUESTIONS = HERE / "questions.json"
#: Absolute tolerance for numbers besides the relative one (a model rounding to cents).
ABS_TOLERANCE = 0.005


def questions() -> list[dict]:
    """Every question, each with its ``set`` (``tuning`` or ``held_out``) and position."""
    found = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    for n, q in enumerate(found):
        q["position"] = n
        q["set"] = "tuning" if n % 3 == 0 else "held_out"
    return found


def cases(engines: tuple[str, ...] = ("sqlite", "duckdb")) -> list[tuple[dict, str]]:
    """(question, engine) pairs in running order: each question on each of its engines."""
    return [(q, e) for q in questions() for e in q["engines"] if e in engines]


# -- databases ---------------------------------------------------------------------------------


@cache
def shop_sqlite_path() -> Path:
    """The sample shop as a SQLite file (built once per process, in a temporary folder)."""
    from cadet_magic.examples.shop import shop_statements

    path = Path(tempfile.mkdtemp(prefix="cadet-fallback-bench-")) / "shop.sqlite"
    con = sqlite3.connect(path)
    with con:
        for statement in shop_statements(comments=False):
            con.execute(statement)
    con.close()
    return path


@cache
def shop_duckdb_path() -> Path:
    """The sample shop as a DuckDB file (with its comments), built once per process."""
    from cadet_magic.examples.shop import create_shop

    path = Path(tempfile.mkdtemp(prefix="cadet-fallback-bench-")) / "shop.duckdb"
    create_shop(path).close()
    return path


def spider_path(db: str) -> Path:
    from workloads.gold import DATA

    return DATA / "spider-dev" / "database" / db / f"{db}.sqlite"


def connect(db: str, engine: str) -> Any:
    """A fresh connection to ``db`` on ``engine`` (Spider's files read-only)."""
    if db == "shop" and engine == "duckdb":
        import duckdb

        return duckdb.connect(str(shop_duckdb_path()))
    if db == "shop":
        return sqlite3.connect(shop_sqlite_path(), check_same_thread=False)
    return sqlite3.connect(f"file:{spider_path(db)}?mode=ro", uri=True, check_same_thread=False)


@cache
def tables(db: str) -> dict[str, Any]:
    """Every table of ``db`` as a DataFrame (the SQLite copy: the same data on both engines)."""
    import pandas as pd

    con = connect(db, "sqlite")
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {n: pd.read_sql_query(f'SELECT * FROM "{n}"', con) for n in names}
    finally:
        con.close()


def gold(question: dict) -> Any:
    """The gold answer: the question's pandas program run on its tables (copies)."""
    import numpy as np
    import pandas as pd

    t = {name: frame.copy() for name, frame in tables(question["db"]).items()}
    namespace: dict[str, Any] = {"t": t, "pd": pd, "np": np}
    exec("\n".join(question["gold"]), namespace)  # this repository's own programs
    return namespace["result"]


# -- comparison --------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__.startswith("numpy"):
        value = item()
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    try:
        import decimal

        if isinstance(value, decimal.Decimal):
            return float(value)
    except ImportError:  # pragma: no cover
        pass
    return None


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(getattr(value, "isoformat", lambda: value)()).strip().lower()


def same_value(a: Any, b: Any, tolerance: float) -> bool:
    """Numbers within ``tolerance`` (relative) or :data:`ABS_TOLERANCE`; else text, case aside.

    >>> same_value(10.0, 10.004, 0), same_value(100, 100.5, 0.01), same_value("Books", "books", 0)
    (True, True, True)
    """
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return abs(x - y) <= max(ABS_TOLERANCE, tolerance * max(abs(x), abs(y)))
    if x is not None or y is not None:  # a number written as text ("12.5")
        try:
            return same_value(float(str(a)), float(str(b)), tolerance)
        except ValueError:
            return False
    return _text(a) == _text(b)


def _gold_table(value: Any) -> tuple[list[str], list[tuple]]:
    import pandas as pd

    if isinstance(value, pd.Series):
        value = value.reset_index()
    if isinstance(value, pd.DataFrame):
        return [str(c) for c in value.columns], list(value.itertuples(index=False, name=None))
    return ["value"], [(value,)]


def _key(value: Any) -> Any:
    x = _number(value)
    if x is None and isinstance(value, str):
        with contextlib.suppress(ValueError):
            x = float(value)  # a number written as text ("2025")
    return ("n", round(x, 1)) if x is not None else ("t", _text(value))


def same_answer(columns: list[str], rows: list[tuple], question: dict, gold_value: Any) -> bool:
    """Whether the answer (``columns``, ``rows``) is the gold one under the question's
    ``compare`` rule (module description)."""
    tolerance = float(question.get("tolerance") or 0)
    if question["compare"] == "value":
        if len(rows) != 1:
            return False
        return any(same_value(cell, gold_value, tolerance) for cell in rows[0])
    _, gold_rows = _gold_table(gold_value)
    if len(rows) != len(gold_rows) or not gold_rows:
        return len(rows) == len(gold_rows)
    width = len(gold_rows[0])
    answer_width = len(rows[0]) if rows else 0
    ordered = question["compare"] == "rows_ordered"
    # each gold column's candidates: answer columns holding the same values (as multisets)
    candidates = []
    for j in range(width):
        want = Counter(_key(r[j]) for r in gold_rows)
        found = [k for k in range(answer_width) if Counter(_key(r[k]) for r in rows) == want]
        if not found:
            return False
        candidates.append(found)
    for pick in itertools.islice(itertools.product(*candidates), 2000):
        if len(set(pick)) != width:
            continue
        if _rows_agree(gold_rows, [tuple(r[k] for k in pick) for r in rows], ordered, tolerance):
            return True
    return False


def _rows_agree(gold: list[tuple], answer: list[tuple], ordered: bool, tolerance: float) -> bool:
    def same(g: tuple, a: tuple) -> bool:
        return all(same_value(x, y, tolerance) for x, y in zip(g, a, strict=True))

    if ordered:
        return all(same(g, a) for g, a in zip(gold, answer, strict=True))
    left = list(answer)
    for g in gold:
        match = next((i for i, a in enumerate(left) if same(g, a)), None)
        if match is None:
            return False
        left.pop(match)
    return True
