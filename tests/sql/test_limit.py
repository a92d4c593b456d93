"""The row limit on the syntax tree: table-driven rewrites, then real engines.

For every Spider dev gold query whose SQLite database exists, and for N in
(1, 3, row count + 1), the limited result must be the first N rows of the
unlimited one when the query is ordered (ties in the ORDER BY keys may come in
any order), and the same rows otherwise. The same runs on DuckDB with the Spider
databases copied in. TPC-H/TPC-DS (DuckDB) and BIRD (SQLite) gold queries, after
the safety check and the limit, must still bind on their empty schemas.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest
import sqlglot
from sqlglot import exp

from cadet_magic.sql.limit import add_limit
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import validate_sql
from workloads import gold as bench

CASES = json.loads((Path(__file__).with_name("limit_cases.json")).read_text())["cases"]

Row = tuple
Run = Callable[[str], list[Row]]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["why"])
def test_rewrite(case: dict) -> None:
    assert add_limit(case["sql"], Target.named(case["dialect"]), case["n"]) == case["expected"]


def test_negative_n_is_an_error() -> None:
    with pytest.raises(ValueError):
        add_limit("SELECT 1", Target.named("sqlite"), -1)


def test_sqlalchemy_dialect_names() -> None:
    assert add_limit("SELECT a FROM t", Target.named("postgresql"), 2) == "SELECT a FROM t LIMIT 2"


# --- result checks ---------------------------------------------------------------------


def _int(node: exp.Expression | None) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return int(node.this)
    return None


class Reference(NamedTuple):
    """The whole ordered result as (row, sort key) pairs, and the query's own window of it."""

    pairs: list[tuple[Row, Row]]
    start: int
    stop: int


def _reference(sql: str, dialect: str, run: Run) -> Reference | None:
    """The ordered result with sort keys, or None when the keys cannot be had.

    The query is run without its own LIMIT/OFFSET and with its ORDER BY keys appended to
    the projection, so ties can be recognised; its LIMIT/OFFSET give the window.
    """
    tree = sqlglot.parse_one(sql, read=dialect)
    order = tree.args.get("order")
    if not isinstance(tree, exp.Select) or order is None or tree.args.get("distinct"):
        return None
    limit = tree.args.get("limit")
    offset = tree.args.get("offset")
    m = None if limit is None else _int(limit.expression)
    k = 0 if offset is None else _int(offset.expression)
    if (limit is not None and m is None) or k is None:
        return None
    keyed = tree.copy()
    keyed.set("limit", None)
    keyed.set("offset", None)
    width = (
        None if any(isinstance(e, exp.Star) for e in tree.expressions) else len(tree.expressions)
    )
    for j, ordered in enumerate(order.expressions):
        key = ordered.this
        position = _int(key)
        if position is not None:
            key = tree.expressions[position - 1].unalias()
        keyed.select(key.copy().as_(f"_cadet_k{j}"), copy=False)
    try:
        rows = run(keyed.sql(dialect=dialect))
    except Exception:  # noqa: BLE001 - key expressions that cannot be projected
        return None
    n_keys = len(order.expressions)
    width = width if width is not None else (len(rows[0]) - n_keys if rows else 0)
    pairs = [(r[:width], r[width:]) for r in rows]
    return Reference(pairs, k, len(pairs) if m is None else min(len(pairs), k + m))


def _is_first_rows(got: Sequence[Row], reference: Reference, n: int) -> bool:
    """``got`` is the first ``n`` rows of the query's window up to the order among equal keys
    (rows tied on the sort keys may come from anywhere in their tie group)."""
    expected = reference.pairs[reference.start : min(reference.stop, reference.start + n)]
    if len(got) != len(expected):
        return False
    pools: dict[Row, Counter] = {}
    for row, key in reference.pairs:
        pools.setdefault(key, Counter())[row] += 1
    for row, (_, key) in zip(got, expected, strict=True):
        if pools[key][row] <= 0:
            return False
        pools[key][row] -= 1
    return True


def _check_query(sql: str, dialect: str, run: Run) -> list[str]:
    """Problems of ``add_limit`` on one query for N in (1, 3, rows + 1)."""
    full = run(sql)
    tree = sqlglot.parse_one(sql, read=dialect)
    ordered = tree.args.get("order") is not None
    reference = _reference(sql, dialect, run) if ordered else None
    pool = full
    if not ordered and (tree.args.get("limit") or tree.args.get("offset")):
        # an unordered LIMIT picks any rows: compare with everything the query could pick
        unbounded = tree.copy()
        unbounded.set("limit", None)
        unbounded.set("offset", None)
        pool = run(unbounded.sql(dialect=dialect))
    problems = []
    for n in (1, 3, len(full) + 1):
        limited_sql = add_limit(sql, Target.named(dialect), n)
        got = run(limited_sql)
        if ordered:
            ok = got == full[:n] or (reference is not None and _is_first_rows(got, reference, n))
        elif n > len(full):
            ok = Counter(got) == Counter(full) or (
                pool is not full and len(got) == len(full) and not Counter(got) - Counter(pool)
            )
        else:
            ok = len(got) == n and not Counter(got) - Counter(pool)
        if not ok:
            problems.append(f"N={n}: {limited_sql[:200]}")
    return problems


def _spider_queries(data: Path) -> list[tuple[int, str, Path]]:
    root = data / "spider-dev"
    items = json.loads((root / "dev.json").read_text())
    out = []
    for i, q in enumerate(items):
        db = root / "database" / q["db_id"] / f"{q['db_id']}.sqlite"
        if db.exists():
            out.append((i, q["query"], db))
    return out


def _sqlite(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode(errors="replace")
    return con


def test_spider_sqlite_first_rows(shared_data: Path) -> None:
    queries = _spider_queries(shared_data)
    assert len(queries) == 972
    cons: dict[Path, sqlite3.Connection] = {}
    problems = []
    for i, sql, db in queries:
        con = cons.get(db) or cons.setdefault(db, _sqlite(db))
        for p in _check_query(sql, "sqlite", lambda s, con=con: con.execute(s).fetchall()):
            problems.append(f"spider #{i}: {p}")
    for con in cons.values():
        con.close()
    assert not problems, "\n".join(problems[:20])


def test_validated_sql_gives_the_same_rows(shared_data: Path) -> None:
    """The SQL to run (regenerated from the tree) returns what the gold query returns."""
    cons: dict[Path, sqlite3.Connection] = {}
    schemas = {
        s["db_id"]: s["table_names_original"]
        for s in json.loads((shared_data / "spider-dev" / "tables.json").read_text())
    }
    differ = []
    for i, sql, db in _spider_queries(shared_data):
        con = cons.get(db) or cons.setdefault(db, _sqlite(db))
        v = validate_sql(sql, "sqlite", schemas[db.parent.name])
        assert v.ok, (i, v.issues)
        if Counter(con.execute(v.sql).fetchall()) != Counter(con.execute(sql).fetchall()):
            differ.append(f"#{i}: {sql} -> {v.sql}")
    assert not differ, "\n".join(differ[:20])


# --- DuckDB ----------------------------------------------------------------------------


def _duckdb_copy(sqlite_path: Path):
    """An in-memory DuckDB database with the SQLite database's tables (column types inferred)."""
    duckdb = pytest.importorskip("duckdb")
    pa = pytest.importorskip("pyarrow")
    src = _sqlite(sqlite_path)
    con = duckdb.connect()
    names = [r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for name in names:
        cur = src.execute(f'SELECT * FROM "{name}"')
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
        arrays = []
        for j in range(len(cols)):
            values = [r[j] for r in rows]
            present = [v for v in values if v is not None]
            if present and all(isinstance(v, int) for v in present):
                arrays.append(pa.array(values, pa.int64()))
            elif present and all(isinstance(v, int | float) for v in present):
                arrays.append(pa.array([None if v is None else float(v) for v in values]))
            else:
                arrays.append(
                    pa.array([None if v is None else str(v) for v in values], pa.string())
                )
        arrow = pa.Table.from_arrays(arrays, names=[f"c{j}" for j in range(len(cols))])
        con.register("_src", arrow)
        projection = ", ".join(f'c{j} AS "{c}"' for j, c in enumerate(cols))
        con.execute(f'CREATE TABLE "{name}" AS SELECT {projection} FROM _src')
        con.unregister("_src")
    src.close()
    return con


def test_spider_duckdb_first_rows(shared_data: Path) -> None:
    """The Spider gold queries that DuckDB runs (transpiled from SQLite), limited on DuckDB."""
    by_db: dict[Path, list[tuple[int, str]]] = {}
    for i, sql, db in _spider_queries(shared_data):
        by_db.setdefault(db, []).append((i, sql))
    checked = 0
    problems = []
    for db, queries in by_db.items():
        con = _duckdb_copy(db)
        run = lambda s, con=con: con.execute(s).fetchall()  # noqa: E731
        for i, sql in queries:
            duck_sql = sqlglot.transpile(sql, read="sqlite", write="duckdb")[0]
            try:
                run(duck_sql)
            except Exception:  # noqa: BLE001 - SQLite-only semantics (types, functions)
                continue
            checked += 1
            problems += [
                f"spider #{i} (duckdb): {p}" for p in _check_query(duck_sql, "duckdb", run)
            ]
        con.close()
    assert checked >= 500
    assert not problems, "\n".join(problems[:20])


def _duckdb_schema(ddl_files: list[Path]):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for f in ddl_files:
        con.execute(f.read_text())
    return con


@pytest.mark.parametrize("which", ["tpch", "tpcds"])
def test_tpc_queries_bind_after_check_and_limit(shared_data: Path, which: str) -> None:
    if which == "tpch":
        con = _duckdb_schema([shared_data / "tpch" / "schema_from_test_fk_tpch.sql"])
        dataset = bench.tpch(shared_data)
    else:
        con = _duckdb_schema(sorted((shared_data / "tpcds" / "schema").glob("*.sql")))
        dataset = bench.tpcds(shared_data)
    failures = []
    for case in dataset.cases:
        v = validate_sql(case.sql, "duckdb", case.tables)
        assert v.ok, (case.id, v.issues)
        for sql in (v.sql, add_limit(v.sql, v.sql.target, 1001)):
            try:
                con.execute(sql).fetchall()
            except Exception as e:  # noqa: BLE001
                failures.append(f"{case.id}: {e}")
    assert not failures, "\n".join(failures[:10])


def test_duckdb_pivot_statement_is_wrapped() -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE singer AS FROM (VALUES ('a', 'FR'), ('b', 'US'), ('c', 'FR')) t(n, c)"
    )
    full = con.execute("PIVOT singer ON c USING count(*)").fetchall()
    got = con.execute(
        add_limit("PIVOT singer ON c USING count(*)", Target.named("duckdb"), 2)
    ).fetchall()
    assert len(full) == 3 and len(got) == 2 and set(got) <= set(full)


def test_bird_sqlite_queries_bind_after_check_and_limit(shared_data: Path) -> None:
    """BIRD ships no data: its SQLite gold queries must still prepare on empty tables."""
    schemas = json.loads((shared_data / "bird-minidev" / "dev_tables.json").read_text())
    cons = {}
    for s in schemas:
        con = sqlite3.connect(":memory:")
        columns: dict[int, list[str]] = {}
        for (table, column), ctype in zip(
            s["column_names_original"], s["column_types"], strict=True
        ):
            if table >= 0:
                columns.setdefault(table, []).append(f'"{column}" {ctype}')
        for t, name in enumerate(s["table_names_original"]):
            con.execute(f'CREATE TABLE "{name}" ({", ".join(columns[t])})')
        cons[s["db_id"]] = con
    failures = []
    items = json.loads((shared_data / "bird-minidev" / "mini_dev_sqlite.json").read_text())
    for q in items:
        con = cons[q["db_id"]]
        v = validate_sql(q["SQL"], "sqlite", None)
        assert v.ok, (q["question_id"], v.issues)
        for sql in (v.sql, add_limit(v.sql, v.sql.target, 1001)):
            try:
                con.execute(sql).fetchall()
            except sqlite3.Error as e:
                failures.append(f"{q['question_id']}: {e}: {sql[:150]}")
    assert not failures, "\n".join(failures[:10])
