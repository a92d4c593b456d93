"""Agent overhead per attempt, without the model and the query, against a bare ``sqlglot.parse_one``.

Part of ``python -m benchmarks`` (:mod:`benchmarks.perf`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import SPIDER, Measure, _median


class _Reply:
    def __init__(self, content: str) -> None:
        self.content = content


class _InstantModel:
    """Replies with the SQL it was given, at once."""

    def __init__(self) -> None:
        self.sql = ""

    def invoke(self, messages: Any) -> _Reply:
        return _Reply(f"```sql\n{self.sql}\n```")


class _InstantRunner:
    """Returns one row at once, or raises the error it was given."""

    dialect = "sqlite"
    label = "instant"

    def __init__(self) -> None:
        self.error: Exception | None = None

    def run(self, sql: str, *, limit: int, timeout: float, max_bytes: int | None = None) -> Any:
        from cadet_magic.runner import RunResult

        if self.error is not None:
            raise self.error
        return RunResult(["x"], [(1,)], False, 0.0, sql)

    def schema(self) -> Any:  # pragma: no cover - the benchmark passes the schema in
        raise NotImplementedError


def spider_gold(limit: int | None = None) -> list[dict]:
    """Spider dev questions with their gold SQL and database (``limit``: every k-th).

    Questions on ``wta_1``, whose SQLite file is not in the dev set, are left out.
    """
    items = [
        d for d in json.loads((SPIDER / "dev.json").read_text()) if _spider_db(d["db_id"]).exists()
    ]
    if limit is not None and limit < len(items):
        step = len(items) / limit
        items = [items[int(i * step)] for i in range(limit)]
    return items


def _spider_db(db_id: str) -> Path:
    return SPIDER / "database" / db_id / f"{db_id}.sqlite"


def agent_overhead(n_queries: int | None = None, reps: int = 3) -> Measure:
    """Agent work per attempt (no model, no query) against a bare sqlglot parse of the SQL.

    The nodes of one attempt run as the agent runs them, with a model that
    answers at once and a runner that returns (or fails) at once: the success
    path is generate (prompt + reply parsing), check, execute, finish; the
    failure path adds the diagnosis of a ``no such column`` error and the
    feedback for the next attempt.
    """
    import sqlglot

    from cadet_magic.agent import pipeline, steps
    from cadet_magic.agent.phases import PHASES, SQL_PHASE
    from cadet_magic.agent.state import initial_state
    from cadet_magic.db.sqlite import sqlite_schema

    items = spider_gold(n_queries)
    schemas: dict[str, Any] = {}
    for d in items:
        if d["db_id"] not in schemas:
            con = sqlite3.connect(f"file:{_spider_db(d['db_id'])}?mode=ro", uri=True)
            schemas[d["db_id"]] = sqlite_schema(con, samples=True)
            con.close()
    model, runner = _InstantModel(), _InstantRunner()
    prepared = []
    for d in items:
        ctx = steps.Context(model=model, runner=runner, schema=schemas[d["db_id"]])
        state = steps.read_schema(initial_state(d["question"], target="sqlite"), ctx)
        prepared.append((d["query"], state, ctx))

    def attempt(sql: str, state: Any, ctx: Any, fail: bool) -> float:
        model.sql = sql
        runner.error = sqlite3.OperationalError("no such column: amout") if fail else None
        names = (
            ("generate", "check", "execute", "diagnose", "next_attempt")
            if fail
            else ("generate", "check", "execute", "finish")
        )
        nodes = [pipeline.node(PHASES, SQL_PHASE, name) for name in names]
        t0 = time.perf_counter()
        s = state
        for step in nodes:
            s = step(s, ctx)
        return time.perf_counter() - t0

    parse: list[list[float]] = [[] for _ in prepared]
    ok: list[list[float]] = [[] for _ in prepared]
    failed: list[list[float]] = [[] for _ in prepared]
    for _ in range(reps):
        for i, (sql, state, ctx) in enumerate(prepared):
            t0 = time.perf_counter()
            sqlglot.parse_one(sql, read="sqlite")
            parse[i].append(time.perf_counter() - t0)
            ok[i].append(attempt(sql, state, ctx, False))
            failed[i].append(attempt(sql, state, ctx, True))
    p = [min(x) for x in parse]
    a = [min(x) for x in ok]
    f = [min(x) for x in failed]
    ratio_ok = _median([x / y for x, y in zip(a, p, strict=True)])
    ratio_fail = _median([x / y for x, y in zip(f, p, strict=True)])
    m = Measure(
        "agent overhead per attempt (Spider dev gold, sqlite)",
        f"{_median(a) * 1e6:,.0f} µs success / {_median(f) * 1e6:,.0f} µs failed",
        f"{_median(p) * 1e6:,.0f} µs sqlglot.parse_one",
        f"{ratio_ok:.1f}x / {ratio_fail:.1f}x",
        "reported",
        None,
    )
    m.notes.append(
        f"{len(prepared)} gold queries × {reps} interleaved repetitions, best per query, median "
        "over queries; ratio = median of per-query ratios. Success attempt = prompt building, "
        "reply parsing, safety check (parse, tree checks, generation), execute bookkeeping, "
        "attempt record with SQL diff; failed attempt adds the diagnosis (classification, "
        "nearest names from the schema) and the feedback."
    )
    return m
