"""Names in the prompt are exact: keywords and names holding quotes, ``*/`` or ``<`` are shown
as written, quoted in the dialect's style, and still fenced as data; pasted into SQL they name
the real table and column on real engines."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import duckdb
import pytest

from cadet_magic.agent.prompts import fence_tag, system_prompt
from cadet_magic.schema.render import COMPACT, REPRESENTATION, quote_name, render_schema
from cadet_magic.schema.structure import Column, Schema, Table
from cadet_magic.sql.dialect import dialect_of
from cadet_magic.sql.target import Target

CASES = json.loads((Path(__file__).with_name("name_cases.json")).read_text())["cases"]
ROWS = [(c["name"], d, q) for c in CASES for d, q in c["quoted"].items()]


@pytest.mark.parametrize(("name", "dialect", "quoted"), ROWS, ids=lambda v: str(v)[:30])
def test_quoted_in_the_dialects_style(name: str, dialect: str, quoted: str) -> None:
    assert quote_name(name, dialect_of(dialect)) == quoted


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"][:30])
def test_schema_text_holds_the_exact_name_inside_the_fence(case: dict) -> None:
    name = case["name"]
    schema = Schema((Table(name, (Column(name, "TEXT"), Column("id"))),), dialect="postgres")
    quoted = case["quoted"]["postgres"]
    # PostgreSQL keeps no statement: the prompt's form rebuilds it from the catalog
    expected = {
        COMPACT: f"{quoted}({quoted} TEXT, id)",
        REPRESENTATION: f"CREATE TABLE {quoted} (\n  {quoted} TEXT,\n  id\n);",
    }
    for rep, want in expected.items():
        text = render_schema(schema, rep)
        assert text == want
        prompt = system_prompt(Target.named("postgres"), text)
        tag = fence_tag(text)
        opened = prompt.index(f"<{tag}>\n")
        closed = prompt.index(f"\n</{tag}>")
        assert prompt.count(f"</{tag}>") == 1 and opened < prompt.index(text) < closed


def _engine_tables(kind: str, tmp_path: Path):
    if kind == "duckdb":
        con = duckdb.connect(str(tmp_path / "n.duckdb"))
        return con, lambda sql: con.execute(sql).fetchall(), "duckdb"
    con = sqlite3.connect(tmp_path / "n.db")
    return con, lambda sql: con.execute(sql).fetchall(), "sqlite"


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_the_shown_names_select_the_real_columns(kind: str, tmp_path: Path) -> None:
    from cadet_magic.db.connect import resolve_runner

    con, query, dialect = _engine_tables(kind, tmp_path)
    for i, case in enumerate(CASES):
        table = f"{case['name']}"
        q = quote_name(table, dialect_of(dialect))
        con.execute(f"CREATE TABLE {q} ({q} INTEGER, other INTEGER)")
        con.execute(f"INSERT INTO {q} VALUES ({i}, 0)")
    if kind == "sqlite":
        con.commit()
    schema = resolve_runner(con).schema()
    for rep in (COMPACT, REPRESENTATION):
        text = render_schema(schema, rep)
        for case in CASES:  # (the engine's own statement spaces the name as it keeps it)
            shown = re.escape(quote_name(case["name"], dialect_of(dialect)))
            assert re.search(rf"{shown} ?\({shown} INTEGER", text), (rep, case["name"])
    for i, case in enumerate(CASES):
        shown = quote_name(case["name"], dialect_of(dialect))
        assert query(f"SELECT {shown} FROM {shown}") == [(i,)]
    con.close()
