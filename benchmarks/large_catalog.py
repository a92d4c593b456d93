"""Schema read and linking of a synthetic 1,000-table catalog (cache miss and hit).

Part of ``python -m benchmarks`` (:mod:`benchmarks.perf`).
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks.measure import Measure, _median
from benchmarks.report import Row, row, table, write_page

_DOMAINS = (
    "sales hr inventory finance marketing support shipping billing crm payroll audit legal "
    "procurement warehouse retail web mobile analytics research training"
).split()
_ENTITIES = (
    "orders customers invoices payments employees products suppliers shipments tickets "
    "campaigns accounts contracts assets budgets claims events leads visits reviews returns "
    "refunds stores regions teams projects tasks vendors items prices discounts sessions "
    "devices users roles skills courses grades departments locations schedules shifts "
    "licenses"
).split()
_STATUSES = ("open", "closed", "pending", "cancelled", "shipped", "active")


def synthetic_catalog(n_tables: int = 1000) -> list[tuple[str, str]]:
    """``(name, CREATE TABLE ... AS SELECT ...)`` for ``n_tables`` tables with keys and 20 rows."""
    rng = random.Random(7)
    names = []
    for d in _DOMAINS:
        for e in _ENTITIES:
            names.append(f"{d}_{e}")
    rng.shuffle(names)
    while len(names) < n_tables:
        names += [f"{n}_{len(names)}" for n in names[: n_tables - len(names)]]
    names = names[:n_tables]
    out = []
    for i, name in enumerate(names):
        noun = name.split("_")[1].rstrip("s")
        status = rng.choice(_STATUSES)
        cols = (
            f"CAST(i AS INTEGER) AS id, '{noun} ' || i AS {noun}_name, "
            f"CASE WHEN i % 3 = 0 THEN '{status}' ELSE 'new' END AS status, "
            f"i * 1.5 AS amount, DATE '2024-01-01' + CAST(i AS INTEGER) AS created_on"
        )
        parent = names[rng.randrange(i)] if i else None
        if parent is not None:
            cols += ", CAST(i AS INTEGER) AS parent_id"
        out.append((name, cols, parent))
    return out


def _build_duckdb(path: str, n_tables: int) -> None:
    import duckdb

    con = duckdb.connect(path)
    for name, cols, parent in synthetic_catalog(n_tables):
        fk = f", FOREIGN KEY (parent_id) REFERENCES {parent} (id)" if parent else ""
        con.execute(
            f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {name.split('_')[1].rstrip('s')}_name "
            f"VARCHAR, status VARCHAR, amount DOUBLE, created_on DATE"
            f"{', parent_id INTEGER' if parent else ''}{fk})"
        )
        con.execute(f"INSERT INTO {name} SELECT {cols} FROM range(20) t(i)")
    con.close()


def _build_sqlite(path: str, n_tables: int) -> None:
    con = sqlite3.connect(path)
    for name, cols, parent in synthetic_catalog(n_tables):
        fk = f", FOREIGN KEY (parent_id) REFERENCES {parent} (id)" if parent else ""
        noun = name.split("_")[1].rstrip("s")
        con.execute(
            f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {noun}_name TEXT, status TEXT, "
            f"amount REAL, created_on DATE{', parent_id INTEGER' if parent else ''}{fk})"
        )
        sqlite_cols = cols.replace("CAST(i AS INTEGER)", "i").replace(
            "DATE '2024-01-01' + i", "date('2024-01-01', '+' || i || ' days')"
        )
        con.execute(
            f"INSERT INTO {name} SELECT {sqlite_cols} FROM (WITH RECURSIVE r(i) AS "
            f"(SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 19) SELECT i FROM r)"
        )
    con.commit()
    con.close()


#: The schema text's budget the question's table must be linked within (the product's default).
BUDGET = 6000


def large_catalog(n_tables: int = 1000, reps: int = 5, budget: int = BUDGET) -> list[Measure]:
    """Schema read (cache miss) plus linking, and the cache-hit path, on ``n_tables`` tables."""
    import duckdb

    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.db.schema_cache import SCHEMA_CACHE
    from cadet_magic.schema.link import link

    tables = [name for name, _, _ in synthetic_catalog(n_tables)]
    rng = random.Random(3)
    questions = [
        f"How many {t.split('_')[0]} {t.split('_')[1]} are {rng.choice(_STATUSES)}?"
        for t in rng.sample(tables, min(10, len(tables)))
    ]
    out = []
    with tempfile.TemporaryDirectory(prefix="cadet-perf-") as tmp:
        for engine in ("duckdb", "sqlite"):
            path = str(Path(tmp) / f"cat.{engine}")
            (_build_duckdb if engine == "duckdb" else _build_sqlite)(path, n_tables)
            con = duckdb.connect(path) if engine == "duckdb" else sqlite3.connect(path)
            miss, hit, read_only, chars, linked = [], [], [], [], 0
            for r in range(reps):
                q = questions[r % len(questions)]
                SCHEMA_CACHE.clear()
                t0 = time.perf_counter()
                schema = resolve_runner(con).schema()
                t1 = time.perf_counter()
                result = link(schema, q, budget)
                t2 = time.perf_counter()
                miss.append(t2 - t0)
                read_only.append(t1 - t0)
                t0 = time.perf_counter()
                again = resolve_runner(con).schema()
                result = link(again, q, budget)
                hit.append(time.perf_counter() - t0)
                assert again is schema
                chars.append(len(result.text))
                target = tables[tables.index(q.split()[2] + "_" + q.split()[3])]
                linked += target in result.schema.table_names()
            sampled = sum(1 for t in schema.tables for c in t.columns if c.samples)
            con.close()
            m = Measure(
                f"schema read + linking, {n_tables:,} tables ({engine})",
                f"{_median(miss) * 1e3:,.0f} ms miss / {_median(hit) * 1e3:,.0f} ms hit",
                f"read alone {_median(read_only) * 1e3:,.0f} ms",
                "",
                "< 1 s together",
                _median(miss) < 1.0,
                counts=(linked, reps),
            )
            m.notes.append(
                f"{engine}: {n_tables:,} tables × 5–6 columns with primary and foreign keys and "
                f"20 rows each; {sampled} columns got sample values (bounded: 200 columns, 0.3 s); "
                f"link text {_median(chars):,.0f} chars at budget {budget:,}; the named table was "
                f"linked for {linked}/{reps} questions. Miss = cache cleared, catalog read with "
                "samples, index built, question linked; hit = fingerprint query + linking."
            )
            out.append(m)
    return out


def by_representation(
    names: list[str], n_tables: int = 1000, reps: int = 5
) -> tuple[str, list[Row]]:
    """:func:`large_catalog` once per representation (``form-samples`` names), interleaved in
    one run: the schema read and linking time, and what the linked text holds; and the row of
    BENCHMARKS.md (the question's table linked within the budget, every representation)."""
    import os

    from cadet_magic.schema import render

    rows = []
    linked, asked = 0, 0
    before = render.REPRESENTATION
    try:
        for name in names:
            render.REPRESENTATION = render.Representation.parse(name)
            for m in large_catalog(n_tables, reps=reps):
                right, of = m.counts or (0, 0)
                linked, asked = linked + right, asked + of
                rows.append([f"`{name}`", m.name, m.ours, m.baseline, "yes" if m.met else "no"])
                rows.append(["", "", " ".join(m.notes), "", ""])
    finally:
        render.REPRESENTATION = before
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    loaded = (
        " **Taken under load**: the times are not the product's speed, nor comparable between "
        "the representations (the load changed while they ran one after another); what the "
        "linked text holds is."
        if os.getloadavg()[0] > 1.5
        else ""
    )
    text = (
        table(["representation", "measure", "time", "of which", "< 1 s"], rows)
        + f"\n\nLoad average after the run (1, 5, 15 min): {load}.{loaded}"
    )
    figure = row(
        f"Schema linking of {n_tables:,} tables: the question's table within the "
        f"{BUDGET:,}-character budget, every representation",
        f"{linked}/{asked} questions ({len(names)} representations, DuckDB and SQLite)",
        "all",
        asked > 0 and linked == asked,
        "python -m benchmarks.large_catalog --representations "
        "compact-columns,create-rows,engine-rows-nocomments",
    )
    return text, [figure]


def main(argv: list[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m benchmarks.large_catalog",
        description="schema read and linking of a 1,000-table catalog, per representation",
    )
    p.add_argument("--representations", default="compact-columns,create-rows")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    body, figures = by_representation(args.representations.split(","))
    if args.no_write:
        print(body)
    else:
        write_page(
            "large_catalog",
            "Schema read and linking of 1,000 tables, per schema representation",
            "Command: `python -m benchmarks.large_catalog --representations NAMES` (the same "
            "measure as the performance table's row, once per way of writing the schema; a "
            "representation showing rows reads three rows per table with the schema, within "
            "its own 0.3 s).\n\n" + body,
            figures,
            packages=("duckdb", "sqlglot"),
        )


if __name__ == "__main__":
    main()
