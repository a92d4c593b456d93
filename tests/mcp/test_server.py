"""``python -m cadet_magic.mcp`` over stdio, driven by the official MCP SDK's own client, with a
hostile scripted model (``--model scripted:PATH``: stored replies, not a real LLM): the
database file is unchanged and no file appears whatever the model writes, and no reply holds
anything the sharing level does not show a model (a stored value an engine's error or the
fallback's error would quote, a sample value, a comment), beyond the answer's own rows."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path

import duckdb
import pytest

from tests.conftest import need

try:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
except ImportError:  # the mcp extra is not installed
    Client = StdioServerParameters = None  # type: ignore[assignment,misc]

ROOT = Path(__file__).resolve().parents[2]
REPLIES = Path(__file__).parent / "hostile_replies.json"
SECRET, COMMENT = "TOPSECRET-42", "COMMENT-SECRET"


@pytest.fixture(autouse=True)
def _sdk() -> None:
    need(Client is not None, "the MCP SDK is not installed (pip install -e '.[mcp]')")


@pytest.fixture
def shop(tmp_path) -> Path:
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people (name VARCHAR, note VARCHAR)")
    con.execute(f"INSERT INTO people VALUES ('ann', '{SECRET}')")
    con.execute(f"COMMENT ON TABLE people IS '{COMMENT}'")
    con.execute("CREATE TABLE orders (id INTEGER, amount DOUBLE)")
    con.execute("INSERT INTO orders VALUES (1, 10.0), (2, 32.5)")
    con.close()
    (tmp_path / "planted.csv").write_text("a\n1\n")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def call(db: str, calls: list[tuple[str, dict]], *extra: str, cwd: Path) -> tuple[list, list]:
    """The tools listed and each call's result, from one server started over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cadet_magic.mcp", "--db", db, "--model", f"scripted:{REPLIES}", *extra],
        env={"PYTHONPATH": str(ROOT), "CADET_LOCAL_DIR": os.environ.get("CADET_LOCAL_DIR", "")},
        cwd=str(cwd),
    )

    async def run() -> tuple[list, list]:
        async with Client(params, read_timeout_seconds=300) as client:
            tools = (await client.list_tools()).tools
            results = [await client.call_tool(name, args) for name, args in calls]
            return tools, results

    return asyncio.run(run())


def test_the_tools_and_an_answer(shop, tmp_path):
    tools, (answer, schema) = call(
        str(shop), [("ask", {"question": "How many orders?"}), ("schema", {})], cwd=tmp_path
    )
    named = {t.name: t for t in tools}
    assert set(named) == {"ask", "schema"}
    assert list(named["ask"].input_schema["properties"]) == ["question"]
    assert named["ask"].output_schema is not None
    record = answer.structured_content
    assert not answer.is_error and record["ok"]
    assert record["sql"] == "SELECT count(*) AS n FROM orders"
    assert record["columns"] == ["n"] and record["rows"] == [[2]]
    assert record["scripted"] and record["attempts"][0]["outcome"] == "ok"
    assert {"agreement", "warnings", "readings", "asks"} <= set(record)
    assert json.loads(answer.content[0].text) == record
    tables = {t["name"]: t for t in schema.structured_content["tables"]}
    assert [c["name"] for c in tables["people"]["columns"]] == ["name", "note"]


@pytest.mark.parametrize("share", ["samples", "schema"])
def test_the_ask_tool_names_the_readings(share):
    """A vote without a clear lead (2 to 1): the ``ask`` tool's record names the readings, their
    rows only at ``samples`` (the server built in-process: a scripted model cannot vote over
    the command line, where a stand-in draws one candidate)."""
    from cadet_magic.llm import ScriptedModel
    from cadet_magic.mcp.server import build
    from cadet_magic.options import AskOptions
    from tests.helpers import sql_reply

    con = duckdb.connect()
    con.execute("CREATE TABLE orders (id INTEGER, city VARCHAR)")
    con.execute("INSERT INTO orders VALUES (1, 'Oslo'), (2, 'Lyon'), (3, 'Oslo')")
    q, oslo, every = (
        "Orders?",
        "SELECT count(*) AS n FROM orders WHERE city = 'Oslo'",
        "SELECT count(*) AS n FROM orders",
    )
    model = ScriptedModel({q: [sql_reply(s) for s in (oslo, every, oslo)]})
    server = build(con, AskOptions(model=model, candidates=3, share=share))
    record = asyncio.run(server.call_tool("ask", {"question": q})).structured_content
    assert record["asks"] and record["sql"] == oslo
    readings = [
        (r["choice"], r["leading"], r["sql"], r["summary"], r["votes"]) for r in record["readings"]
    ]
    assert readings == [
        (0, True, oslo, "where city = 'Oslo'", 2),
        (1, False, every, "without city = 'Oslo'", 1),
    ]
    assert [r.get("preview") for r in record["readings"]] == (
        [[[2]], [[3]]] if share == "samples" else [None, None]
    )


def test_a_hostile_model_changes_nothing(shop, tmp_path):
    before, files = digest(shop), sorted(p.name for p in tmp_path.iterdir())
    _, results = call(
        str(shop),
        [("ask", {"question": "Wipe everything"}), ("ask", {"question": "Files and settings"})],
        cwd=tmp_path,
    )
    wipe, files_asked = (r.structured_content for r in results)
    assert not wipe["ok"]
    assert [a["outcome"] for a in wipe["attempts"][:3]] == ["refused"] * 3
    assert all(a["outcome"] == "refused" for a in wipe["attempts"][3:]), wipe["attempts"]
    # Only the last, harmless reply answered: its pandas code (`result = df`) over the simple
    # SELECT the product writes itself (the refused attempts read no table, so the small
    # schema's orders are fetched read-only).
    assert files_asked["ok"] and files_asked["rows"] == [[1, 10.0], [2, 32.5]]
    assert digest(shop) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    con = duckdb.connect(str(shop), read_only=True)
    assert con.execute("SELECT count(*) FROM people").fetchall() == [(1,)]
    assert con.execute("SELECT sum(amount) FROM orders").fetchall() == [(42.5,)]
    con.close()


@pytest.mark.parametrize("share", ["schema", "stats"])
def test_no_reply_holds_more_than_the_sharing_level(shop, tmp_path, share):
    """Engine errors quoting the stored note, then fallback code whose errors quote it: below
    ``samples`` neither reply holds it (nor the table's comment); at ``samples`` the same run's
    reply does, so the test would see a leak."""
    calls = [("ask", {"question": "Leak the note"}), ("schema", {})]
    _, cut = call(str(shop), calls, "--share", share, cwd=tmp_path)
    _, full = call(str(shop), calls, "--share", "samples", cwd=tmp_path)
    for reply in cut:
        text = json.dumps(reply.structured_content) + "".join(c.text for c in reply.content)
        assert SECRET not in text and COMMENT not in text
    leaked, _ = cut
    assert not leaked.structured_content["ok"]
    assert f"not shared at share={share}" in leaked.structured_content["message"]
    assert SECRET in json.dumps(full[0].structured_content)  # an engine error quotes it
    assert SECRET in full[1].structured_content["text"]  # a sample row shows it


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path):
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "cadet_magic.mcp", "--db", str(tmp_path / "missing.duckdb")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "no such database file" in out.stderr
