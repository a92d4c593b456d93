"""A hostile scripted model through every surface (tests/surfaces.py: ``ask()``, ``%%ask --con``
and ``--df``, DataFrames as tables, the LangGraph graph, the LangChain tool, the MCP server over
stdio) cannot write, cannot read files, and cannot make anything beyond the sharing level reach
a prompt or the surface's reply. Table-driven (surface_cases.json, with statements of the safety
corpus and programs of the fallback's escape corpus); the model is scripted (stored replies,
not a real LLM). Writes and file reads run twice: refused by our checks, then with our checks
bypassed (accepting every statement and program), stopped by the engine's read-only
transaction, its settings and the confined worker."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import need
from tests.fallback.hostile_corpus import programs
from tests.helpers import sql_reply
from tests.surfaces import (
    FILE_SECRET,
    MAGIC,
    NAMES,
    ROOT,
    SECRET,
    Question,
    World,
    bypass,
    surfaces,
)

CASES = json.loads((Path(__file__).with_name("surface_cases.json")).read_text())
CORPUS = json.loads((ROOT / "workloads" / "corpus" / "must_refuse.json").read_text())
#: A query that fails in every engine (an unknown column): the SQL phase hands over.
FAILING = "SELECT nope FROM customers"
#: The whys of statements that read a file (the rest of the read cases reveal settings or
#: run SQL strings, which the engine lets through: tests/db/hostile_functions.json).
FILE_READS = ("reads files or the network", "attaches files, changes settings or loads code", "own")


@pytest.fixture
def world(tmp_path, monkeypatch) -> World:
    made = World.make(tmp_path / "world")
    monkeypatch.chdir(made.folder)
    return made


def surface_of(name: str, request):
    if name.startswith("mcp"):
        try:
            import mcp  # noqa: F401
        except ImportError:
            need(False, "the MCP SDK is not installed (pip install -e '.[mcp]')")
    shell = request.getfixturevalue("ipython_shell") if name in MAGIC else None
    return surfaces(shell)[name]


def statements(spec: dict, surface, world: World) -> list[tuple[str, str]]:
    """``(why, sql)``: the safety corpus's first ``per_why`` statements of each listed why in
    the surface's dialect, then the case's own (why ``own``)."""
    out = []
    for why in spec["corpus_whys"]:
        found = [e for e in CORPUS if e["why"] == why and e["dialect"] in ("any", surface.engine)]
        out += [(why, e["sql"]) for e in found[: spec["per_why"]]]
    out += [("own", s) for s in spec["sql"]]
    return [(why, surface.sql(world.fill(sql))) for why, sql in out]


def escapes(world: World, names: list[str]) -> list[str]:
    by_name = {p.name: p.code for p in programs(world.marker)}
    return [by_name[n].replace("/etc/passwd", str(world.planted)) for n in names]


def block(select: str, code: str) -> str:
    return f"```sql\n{select}\n```\n```python\n{code}\n```"


def hostile(spec: dict, surface, world: World, label: str) -> list[Question]:
    """One question per hostile statement (its only reply: the SQL phase stops at the next
    attempt, the script being out), then questions of three failing queries and three of the
    hostile programs each."""
    sqls = [sql for _, sql in statements(spec, surface, world)]
    out = [Question(f"{label} {i}", (sql_reply(s),)) for i, s in enumerate(sqls)]
    codes = [world.fill(c) for c in escapes(world, spec["escapes"]) + spec["python"]]
    select, failing = surface.sql(CASES["select"]), surface.sql(FAILING)
    for i in range(0, len(codes), 3):
        replies = [sql_reply(failing)] * 3 + [block(select, c) for c in codes[i : i + 3]]
        out.append(Question(f"{label} in pandas {i}", tuple(replies)))
    return out


def run(surface, world, questions, checks: str, monkeypatch, **options):
    if checks == "bypassed":
        for module, name, value in bypass():
            monkeypatch.setattr(module, name, value)
    return surface.run(
        world, questions, {"candidates": 1, **options, "bypass": checks != "checked"}
    )


CHECKS = ["checked", "bypassed"]


@pytest.mark.parametrize("checks", CHECKS)
@pytest.mark.parametrize("name", NAMES)
def test_a_hostile_model_cannot_write(name, checks, world, request, monkeypatch):
    surface = surface_of(name, request)
    questions = hostile(CASES["write"], surface, world, "Change the shop")
    before, frames = world.state(), world.frames_copy()
    seen = run(surface, world, questions, checks, monkeypatch)
    assert world.state() == before  # no byte of a database changed, no file appeared
    for table, frame in frames.items():
        pd.testing.assert_frame_equal(world.frames[table], frame)
    statements = [r for q, r in zip(questions, seen.results, strict=True) if len(q.replies) == 1]
    if name != "tool":  # (the tool's text names no outcome)
        first = [outcomes[0] for _, outcomes, _ in statements]
        assert "ok" not in first, [
            q.replies[0] for q, f in zip(questions, first, strict=False) if f == "ok"
        ]
        # refused by our check; bypassed, each reached the engine and failed there
        assert set(first) == ({"refused"} if checks == "checked" else {"error"}), first


@pytest.mark.parametrize("checks", CHECKS)
@pytest.mark.parametrize("name", NAMES)
def test_a_hostile_model_cannot_read_files(name, checks, world, request, monkeypatch):
    surface = surface_of(name, request)
    questions = hostile(CASES["read"], surface, world, "Read the files")
    before = world.state()
    seen = run(surface, world, questions, checks, monkeypatch)
    assert FILE_SECRET not in seen.everything
    assert "root:x:0:0" not in seen.everything
    assert world.state() == before
    if name == "tool":
        return
    said = zip(statements(CASES["read"], surface, world), seen.results, strict=False)
    first = {(why, sql): outcomes[0] for (why, sql), (_, outcomes, _) in said}
    if checks == "checked":
        assert set(first.values()) == {"refused"}, first
    else:  # what reads a file fails in the engine (settings it may show: the check's alone)
        files = {k: v for k, v in first.items() if k[0] in FILE_READS}
        assert files and set(files.values()) == {"error"}, files


def share_questions(surface, world: World) -> list[Question]:
    spec = CASES["share"]
    sqls = [surface.sql(s) for s in spec["sql"][surface.engine]]
    select = surface.sql(spec["select"])
    replies = [sql_reply(s) for s in sqls] + [block(select, c) for c in spec["python"]]
    out = [Question("Who are they?", tuple(replies))]
    if surface.follows:
        out.append(Question("Emails as columns?", (sql_reply(spec["pivot"]),)))
        out.append(Question("And how many?", (sql_reply(spec["follow_up"]),)))
    return out


@pytest.mark.parametrize("share", ["schema", "stats", "samples"])
@pytest.mark.parametrize("name", NAMES)
def test_a_hostile_model_cannot_exceed_the_sharing_level(name, share, world, request):
    """Errors quoting the stored emails (the engine's, the fallback's), a filter whose close
    value is one, and a PIVOT naming its columns after them followed up: below ``samples`` no
    prompt and nothing the surface hands back holds one; at ``samples`` the prompts do (the
    sample rows: the positive control)."""
    surface = surface_of(name, request)
    questions = share_questions(surface, world)
    seen = surface.run(
        world, questions, {"candidates": 1, "share": share, "follow_up": surface.follows}
    )
    assert seen.prompts, "no prompt was recorded"
    if share == "samples":
        assert SECRET in seen.prompts
    else:
        assert SECRET not in seen.prompts
        assert SECRET not in seen.returned
    if surface.follows:  # the follow-up was asked with its previous answer
        assert "Result columns:" in seen.prompts


@pytest.mark.parametrize("share", ["schema", "stats", "samples"])
def test_choosing_a_reading_keeps_the_sharing_level(share, world):
    """Readings of a hostile vote, one a PIVOT naming its columns after the stored emails: each
    reading chosen and followed up. Below ``samples`` neither the chosen answer's provenance
    nor the follow-up's prompt holds an email; at ``samples`` the prompts do (the control)."""
    import duckdb

    import cadet_magic
    from tests.surfaces import Recorder

    spec = CASES["share"]
    pivot, count, select = spec["pivot"], spec["follow_up"], spec["select"]
    voted = Question(
        "Emails as columns?", tuple(map(sql_reply, [pivot, count, pivot, count, select]))
    )
    con = duckdb.connect(str(world.folder / "shop.duckdb"))
    try:
        first = cadet_magic.ask(
            voted.text, con=con, model=Recorder([voted]), candidates=5, share=share
        )
        assert first.asks and len(first.readings) >= 2, first.readings
        for i in range(len(first.readings)):
            chosen = first.choose(i)
            assert chosen.chosen == i
            again = Question("And how many?", (sql_reply(count),))
            model = Recorder([again])
            cadet_magic.ask(again.text, con=con, model=model, share=share, follow=chosen)
            prompts = json.dumps(model.prompts)
            assert "Result columns:" in prompts
            if share == "samples":
                assert SECRET in prompts
            else:
                assert SECRET not in prompts
                assert SECRET not in json.dumps(chosen.provenance, default=str)
    finally:
        con.close()
