"""Valid MySQL keeps working: every BIRD mini-dev MySQL gold query passes the safety check
with MariaDB's live function catalog, and the SQL generated from the checked tree (what runs)
binds and runs on MariaDB over BIRD's tables (created empty: BIRD ships DDL only)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from cadet_magic.sql.validate import validate_sql
from workloads.gold import DATA

pytestmark = pytest.mark.mysql

BIRD = DATA / "bird-minidev"


def _gold() -> dict[str, list[tuple[int, str]]]:
    import json

    if not (BIRD / "mini_dev_mysql.json").exists():
        return {}
    by: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for q in json.loads((BIRD / "mini_dev_mysql.json").read_text()):
        by[q["db_id"]].append((q["question_id"], q["SQL"]))
    return dict(by)


GOLD = _gold()


@pytest.mark.parametrize("db", sorted(GOLD) or ["bird-missing"])
def test_bird_mysql_gold_checks_and_runs(shared_data, mysql_server, db):
    import pymysql

    from cadet_magic.db.connect import resolve_runner
    from workloads.mariadb import bird_ddl, connect_args, create_database

    create_database(mysql_server, f"bird_{db}", bird_ddl(BIRD)[db])
    raw = pymysql.connect(**connect_args(mysql_server), database=f"bird_{db}")
    runner = resolve_runner(raw)
    try:
        schema = runner.schema()
        assert schema.functions is not None
        refused, failed = [], []
        for qid, sql in GOLD[db]:
            v = validate_sql(sql, "mysql", schema.table_names(), schema.functions)
            if not v.ok:
                refused.append((qid, v.issues[0].message[:160]))
                continue
            try:
                runner.run(v.sql, limit=10, timeout=30)
            except Exception as e:  # noqa: BLE001
                if _runs(raw, sql):  # the gold as written runs: our regeneration broke it
                    failed.append((qid, str(e)[:160], v.sql[:200]))
        assert refused == [] and failed == []
    finally:
        runner.close()
        raw.close()


def _runs(raw, sql: str) -> bool:
    """Whether the gold query as written runs on the server (some do not on MariaDB: a table
    alias spelled `T` then `t` is two names where table names are case-sensitive)."""
    try:
        with raw.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()
    except Exception:  # noqa: BLE001
        raw.rollback()
        return False
    raw.rollback()
    return True
