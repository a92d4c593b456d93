"""Comparing an answer with the gold query's rows, and keeping the comparison.

Execution match: the answer's rows against the gold query's rows on the same connection, as
multisets of rows (numbers compared by value, rounded to 6 decimals; text as is), in order only
when the gold query has an outer ORDER BY. Each comparison is appended to
``test-artifacts/llm/answers.jsonl`` (question, SQL, attempts, tokens, match), so a run of the
``llm`` tests leaves what the real model did beside its pass/fail.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "llm"


def value(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int | float | Decimal):
        return round(float(v), 6)
    return v


def ordered(gold: str, dialect: str) -> bool:
    """Whether the gold query's outermost SELECT has an ORDER BY."""
    tree = sqlglot.parse_one(gold, read=dialect)
    return isinstance(tree, exp.Query) and tree.args.get("order") is not None


def gold_rows(con: Any, gold: str) -> list[tuple]:
    cursor = con.execute(gold)
    return [tuple(r) for r in cursor.fetchall()]


def matches(rows: list[tuple], expected: list[tuple], in_order: bool) -> bool:
    got = [tuple(value(v) for v in r) for r in rows]
    want = [tuple(value(v) for v in r) for r in expected]
    return got == want if in_order else Counter(got) == Counter(want)


def record(name: str, result: Any, gold: str, match: bool | None) -> dict:
    """Appends the question's outcome and its comparison with gold to the artifacts file."""
    entry = {
        "test": name,
        "question": result.question,
        "gold": gold,
        "ok": result.ok,
        "answered_by": result.answered_by,
        "sql": result.final_sql,
        "match": match,
        "attempts": [
            {
                "phase": a.phase,
                "outcome": a.outcome,
                "category": a.category,
                "sql": a.sql,
                "tokens": list(a.tokens) if a.tokens else None,
                "model_seconds": a.model_seconds,
            }
            for a in result.all_attempts
        ],
        "elapsed": round(result.elapsed, 2),
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with (ARTIFACTS / "answers.jsonl").open("a") as f:
        f.write(json.dumps(entry, default=str) + "\n")
    return entry
