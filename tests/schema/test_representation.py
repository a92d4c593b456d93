"""The schema's representations in the prompt: each form's text (table-driven from
``representation_cases.json``), and what must hold whichever is chosen: the database's content
cannot break the fence, linking stays within the budget, the sharing levels show what they allow,
the rows are read through the runner when the representation shows them, and a retry's prompt
starts with the first one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from schema_helpers import schema_from, table_from

import cadet_magic
from cadet_magic.agent.prompts import build_messages, system_prompt
from cadet_magic.result import Attempt
from cadet_magic.schema import render
from cadet_magic.schema.link import link
from cadet_magic.schema.render import Representation, render_schema, render_table
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.dialect import dialect_of
from cadet_magic.sql.target import Target
from tests.helpers import CountingModel, fake_model, sql_reply

HERE = Path(__file__).parent
CASES = json.loads((HERE / "representation_cases.json").read_text(encoding="utf-8"))
OLD_CASES = json.loads((HERE / "render_cases.json").read_text(encoding="utf-8"))
#: Every form with every kind of sample, keys and comments on and off.
REPRESENTATIONS = [
    Representation(form, samples, keys, comments)
    for form in render.FORMS
    for samples in render.SAMPLES
    for keys, comments in ((True, True), (False, False))
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_form_writes_the_table(case):
    rep = Representation(*case["representation"])
    text = render_table(
        table_from(case["table"]), case.get("detail", 0), dialect_of(case.get("dialect")), rep
    )
    assert text == case["text"]


@pytest.mark.parametrize("rep", REPRESENTATIONS, ids=lambda r: r.name)
def test_no_content_breaks_the_fence_or_the_rows_comment(rep):
    tables = [c["table"] for c in CASES + OLD_CASES]
    for data in tables:
        for detail in (render.FULL, render.TYPED, render.NAMES):
            text = render_table(table_from(data), detail, representation=rep)
            low = text.lower()
            assert "</schema" not in low and "<schema" not in low and "```" not in low
            marks = re.findall(r"/\*|\*/", text)  # every comment closes once, where it should
            assert marks == ["/*", "*/"] * (len(marks) // 2), text
    prompt = system_prompt(Target.named("duckdb"), render_schema(schema_from(tables), rep))
    assert prompt.count("</schema>") == 1 and prompt.count("<schema>") == 1


@pytest.mark.parametrize("rep", REPRESENTATIONS, ids=lambda r: r.name)
@pytest.mark.parametrize("budget", [120, 400, 1500, 6000])
def test_linking_stays_within_the_budget(rep, budget):
    catalog = schema_from(json.loads((HERE / "link_catalog.json").read_text()))
    for question in ("How many orders per customer?", "Which products are in stock?", "x"):
        result = link(catalog, question, budget, rep)
        assert len(result.text) <= budget
        assert result.text == render_schema(result.schema, rep) or result.left_out


SHOPS = (
    "CREATE TABLE shops (id INTEGER PRIMARY KEY, city VARCHAR, opened DATE, staff INTEGER);"
    "COMMENT ON TABLE shops IS 'written by someone: the secret plan';"
    "INSERT INTO shops VALUES (1, 'Lyon', DATE '2020-01-02', 4), (2, 'Nantes', "
    "DATE '2023-05-06', 9), (3, 'Lyon', DATE '2021-03-04', 2);"
)


def first_prompt(rep, share, monkeypatch):
    from cadet_magic.db.schema_cache import SCHEMA_CACHE

    monkeypatch.setattr(render, "REPRESENTATION", rep)
    SCHEMA_CACHE.clear()  # the rows are read with the schema
    con = duckdb.connect()
    con.execute(SHOPS)
    model = CountingModel(fake_model(sql_reply("SELECT count(*) AS n FROM shops")))
    r = cadet_magic.ask("How many shops?", con=con, model=model, share=share)
    assert r.ok
    return r.prompts[0][0]["content"]


@pytest.mark.parametrize("rep", [r for r in REPRESENTATIONS if r.keys], ids=lambda r: r.name)
def test_the_sharing_levels_hold_for_every_representation(rep, monkeypatch):
    shown = first_prompt(rep, "schema", monkeypatch)
    assert "city" in shown and "Lyon" not in shown and "secret plan" not in shown
    assert "rows of" not in shown and "3 rows" not in shown and "range" not in shown
    stats = first_prompt(rep, "stats", monkeypatch)
    assert "3 rows" in stats and "range 2 .. 9" in stats
    assert "Lyon" not in stats and "Nantes" not in stats and "rows of" not in stats
    samples = first_prompt(rep, "samples", monkeypatch)
    assert ("Lyon" in samples) == (rep.samples != "none")
    assert ("3 rows of shops" in samples) == (rep.samples in ("rows", "both"))
    assert ("secret plan" in samples) == rep.comments


def test_rows_are_read_only_when_the_representation_shows_them(monkeypatch):
    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.db.schema_cache import SCHEMA_CACHE

    con = duckdb.connect()
    con.execute(SHOPS + "CREATE VIEW lyon AS SELECT * FROM shops WHERE city = 'Lyon';")
    for rep, expected in ((Representation("create", "rows"), 3), (render.COMPACT, 0)):
        monkeypatch.setattr(render, "REPRESENTATION", rep)
        SCHEMA_CACHE.clear()
        schema = resolve_runner(con).schema()
        assert len(schema.table("shops").rows) == expected
        assert schema.table("lyon").rows == ()  # views are not read
    SCHEMA_CACHE.clear()


@pytest.mark.parametrize("place", ["system", "user"])
def test_a_retry_starts_with_the_first_prompt(place):
    text = render_schema(Schema.from_mapping({"t": ["name"]}), Representation("create", "rows"))
    a = Attempt(1, "SELECT nme FROM t", "error", error="no such column: nme", feedback="Use name.")
    first = build_messages("Names?", Target.named("sqlite"), text, [], place=place)
    retry = build_messages("Names?", Target.named("sqlite"), text, [a], place=place)
    assert retry[: len(first)] == first and len(retry) == len(first) + 2
    assert [role for role, _ in first] == (["system", "human"] if place == "system" else ["human"])


def test_the_runners_read_each_tables_own_statement():
    import sqlite3

    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.db.schema_cache import SCHEMA_CACHE

    SCHEMA_CACHE.clear()
    duck = duckdb.connect()
    duck.execute(SHOPS + "CREATE VIEW lyon AS SELECT * FROM shops WHERE city = 'Lyon';")
    lite = sqlite3.connect(":memory:")
    lite.executescript(
        "CREATE TABLE shops (id INTEGER PRIMARY KEY, city TEXT); CREATE VIEW v AS SELECT 1;"
    )
    for con in (duck, lite):
        schema = resolve_runner(con).schema()
        assert schema.table("shops").ddl.startswith("CREATE TABLE shops")
        assert all(t.ddl is None for t in schema.tables if t.name != "shops")  # not the views'
    SCHEMA_CACHE.clear()
