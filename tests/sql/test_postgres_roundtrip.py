"""BIRD's PostgreSQL gold queries still bind on PostgreSQL after the check and the limit.

BIRD ships no data; its annotated DDL builds empty tables (one schema per database).
Whatever the gold query does on them (rows or an error), the SQL the safety check
returns and its row-limited form must do the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.sql.limit import add_limit
from cadet_magic.sql.validate import validate_sql
from workloads import gold as bench

pytestmark = pytest.mark.postgres


def _outcome(con, sql: str) -> str:
    try:
        with con.cursor() as cur:
            cur.execute(sql)
            return f"ok:{len(cur.fetchall())}"
    except Exception as e:  # noqa: BLE001 - compared, not raised
        return f"error:{getattr(e, 'sqlstate', type(e).__name__)}"


def test_bird_postgres_gold_round_trip(pg_url: str, shared_data: Path) -> None:
    import psycopg

    root = shared_data / "bird-minidev"
    with psycopg.connect(
        pg_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
    ) as con:
        con.execute("SET statement_timeout = '10s'")
        for ddl in sorted((root / "schemas").glob("*.sql")):
            con.execute(f'CREATE SCHEMA "{ddl.stem}"')
            con.execute(f'SET search_path TO "{ddl.stem}"')
            con.execute(ddl.read_text().replace(" datetime", " timestamp"))
        dataset = {c.id: c for c in bench.bird(shared_data, "postgresql").cases}
        items = json.loads((root / "mini_dev_postgresql.json").read_text())
        bound = 0
        differ = []
        for q in items:
            case = dataset[f"bird-postgresql-{q['question_id']}"]
            con.execute(f'SET search_path TO "{q["db_id"]}"')
            v = validate_sql(case.sql, "postgres", case.tables)
            assert v.ok, (case.id, v.issues)
            gold = _outcome(con, case.sql)
            bound += gold.startswith("ok")
            for sql in (v.sql, add_limit(v.sql, v.sql.target, 1001)):
                if _outcome(con, sql) != gold:
                    differ.append(f"{case.id}: gold {gold}, got {_outcome(con, sql)}: {sql[:150]}")
    assert bound >= 450, bound
    assert not differ, "\n".join(differ[:10])
