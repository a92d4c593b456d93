"""Model calls per answered question on the success path (Spider dev, gold SQL as scripted replies).

Part of ``python -m benchmarks`` (:mod:`benchmarks.perf`).
"""

from __future__ import annotations

import sqlite3
import statistics

from benchmarks.agent_overhead import _spider_db, spider_gold
from benchmarks.measure import Measure


def model_calls(n_questions: int | None = None) -> Measure:
    """Model calls per answered question when the first SQL is right (scripted gold SQL)."""
    import cadet_magic
    from cadet_magic.db.schema_cache import SCHEMA_CACHE
    from cadet_magic.llm import ScriptedModel

    items = spider_gold(n_questions)
    cons: dict[str, sqlite3.Connection] = {}
    answered, calls, asked = 0, [], 0
    SCHEMA_CACHE.clear()
    for d in items:
        con = cons.get(d["db_id"])
        if con is None:
            con = cons[d["db_id"]] = sqlite3.connect(
                f"file:{_spider_db(d['db_id'])}?mode=ro", uri=True
            )
        model = ScriptedModel({d["question"]: [f"```sql\n{d['query']}\n```"]})
        r = cadet_magic.ask(d["question"], con=con, model=model, timeout=30)
        asked += 1
        if r.ok:
            answered += 1
            calls.append(r.model_calls)
    reads = SCHEMA_CACHE.reads
    for con in cons.values():
        con.close()
    mean = statistics.mean(calls) if calls else float("nan")
    m = Measure(
        "model calls per answered question",
        f"{mean:.2f} (max {max(calls) if calls else 0})",
        f"{answered}/{asked} answered",
        "",
        "exactly 1",
        bool(calls) and max(calls) == 1 and min(calls) == 1,
    )
    m.notes.append(
        f"Spider dev questions on their SQLite databases, each with its gold SQL as the scripted "
        f"reply, through `cadet_magic.ask` (schema read {reads} times for {len(cons)} "
        "connections: once per connection)."
    )
    return m
