"""The SQL safety check: table-driven cases, our safety corpus (workloads/corpus/) and every gold
query of the public data sets (CADET_DATA)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.sql.validate import Issue, Validation, validate_sql
from workloads import gold as bench

CASES = json.loads((Path(__file__).with_name("cases.json")).read_text())["cases"]


def _tables(spec: object) -> list[str] | None:
    return list(bench.CONCERT_SINGER) if spec == "concert_singer" else spec  # type: ignore[return-value]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['dialect']}:{c['sql'][:50]}")
def test_case(case: dict) -> None:
    v = validate_sql(case["sql"], case["dialect"], _tables(case["tables"]))
    if case.get("ok"):
        assert v.ok, v.issues
        assert v.issues == []
        if "sql_out" in case:
            assert v.sql == case["sql_out"]
    else:
        assert not v.ok
        assert v.issues and v.issues[0].code == case["code"], v.issues
        for fragment in case.get("message_has", []):
            assert fragment in v.issues[0].message


def test_public_types() -> None:
    v = validate_sql("SELECT 1", "duckdb")
    assert isinstance(v, Validation) and v.ok and v.sql == "SELECT 1"
    bad = validate_sql("DELETE FROM t", "duckdb")
    assert isinstance(bad.issues[0], Issue) and bad.sql == "DELETE FROM t"


def test_sql_to_run_reparses_to_the_checked_tree() -> None:
    """What runs is generated from the tree: comments gone, one statement, same verdict."""
    sql = "/* a ; b */ SELECT name -- x ; DROP TABLE singer\nFROM singer ORDER BY age; -- end"
    v = validate_sql(sql, "sqlite", bench.CONCERT_SINGER)
    assert v.ok and v.sql == "SELECT name FROM singer ORDER BY age"
    assert validate_sql(v.sql, "sqlite", bench.CONCERT_SINGER).sql == v.sql


def _check_dataset(dataset: bench.Dataset) -> None:
    wrong = []
    for case in dataset.cases:
        v = validate_sql(case.sql, case.dialect, case.tables)
        if v.ok != case.expect_ok:
            wrong.append(f"{case.id}: {v.issues[:1] or 'accepted'} :: {case.sql[:120]}")
    assert not wrong, f"{len(wrong)} wrong verdicts in {dataset.name}:\n" + "\n".join(wrong[:20])


REFUSE = json.loads((bench.CORPUS / "must_refuse.json").read_text())
ACCEPT = json.loads((bench.CORPUS / "must_accept.json").read_text())


def test_corpus_entries_are_well_formed() -> None:
    for entries, prefix in ((REFUSE, "refuse"), (ACCEPT, "accept")):
        assert len({e["id"] for e in entries}) == len(entries)
        for e in entries:
            assert e["id"].startswith(prefix) and e["why"] and e["sql"].strip(), e
            assert e["dialect"] in ("any", "duckdb", "postgres", "sqlite"), e


def test_must_refuse_corpus() -> None:
    ds = bench.must_refuse()
    assert len({c.id.split("/")[0] for c in ds.cases}) == len(REFUSE) >= 120
    _check_dataset(ds)


def test_must_refuse_codes() -> None:
    """Stacked statements, outside tables and writable CTEs get the codes the diagnosis maps."""
    expected = {
        "more than one statement": "multiple_statements",
        "writable CTE": "data_modifying_cte",
    }
    for e in REFUSE:
        d = "duckdb" if e["dialect"] == "any" else e["dialect"]
        code = validate_sql(e["sql"], d, bench.SHOP).issues[0].code
        if e["why"] in expected:
            assert code == expected[e["why"]], e
        elif e["why"] == bench.OUTSIDE:
            assert code == "unknown_table", e
        else:
            assert code != "unknown_table", e


def test_must_accept_corpus() -> None:
    _check_dataset(bench.must_accept())


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_must_accept_corpus_runs_on_the_shop(engine: str) -> None:
    """Every accepted query of the engine's dialect (and ``any``) runs on the sample shop, as
    the check generated it: the corpus is real SQL, not just SQL that parses."""
    from cadet_magic.examples.shop import create_shop, shop_statements

    if engine == "duckdb":
        con = create_shop()
    else:
        import sqlite3

        con = sqlite3.connect(":memory:")
        for statement in shop_statements(comments=False):
            con.execute(statement)
    failed = []
    for e in ACCEPT:
        if e["dialect"] not in ("any", engine):
            continue
        v = validate_sql(e["sql"], engine, bench.SHOP)
        try:
            con.execute(v.sql).fetchall()
        except Exception as err:  # noqa: BLE001 - collected and reported below
            failed.append(f"{e['id']}: {err}")
    con.close()
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize(
    "loader",
    [
        bench.spider,
        lambda d: bench.bird(d, "sqlite"),
        lambda d: bench.bird(d, "postgresql"),
        lambda d: bench.bird(d, "mysql"),
        bench.tpch,
        bench.tpcds,
    ],
    ids=["spider", "bird-sqlite", "bird-postgres", "bird-mysql", "tpch", "tpcds"],
)
def test_gold_queries_accepted(shared_data: Path, loader) -> None:
    dataset = loader(shared_data)
    assert dataset.cases
    _check_dataset(dataset)


def test_gold_counts(shared_data: Path) -> None:
    sizes = {ds.name: len(ds.cases) for ds in bench.gold(shared_data)}
    assert sizes == {
        "Spider dev (sqlite)": 1034,
        "BIRD mini-dev (sqlite)": 500,
        "BIRD mini-dev (postgres)": 500,
        "BIRD mini-dev (mysql)": 500,
        "TPC-H (duckdb)": 22,
        "TPC-DS (duckdb)": 99,
    }
