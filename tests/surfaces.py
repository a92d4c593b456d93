"""Every way a question reaches the agent, as one table (:data:`SURFACES`) the hostile tests of
tests/test_surfaces.py run through: ``ask()`` on a DuckDB and on a SQLite file, ``%%ask --con``
and ``%%ask --df``, DataFrames as tables (``con={name: frame}``, ``con=df``), the LangGraph
graph, the LangChain tool and the MCP server over stdio (the SDK's own client). A new surface is
one row: a function asking one question (or a question and a follow-up) of a :class:`World`
with a scripted model, returning what every party saw (:class:`Seen`).

The model is scripted (stored replies: the attacker's choice, labelled scripted) and records
every prompt it gets; the MCP server runs in its own process, where ``sitecustomize`` (written
by :func:`server_hooks_dir`) records the prompts to a file and, for the tests that bypass our
checks, accepts every SQL statement and every program (:func:`bypass`), so that what stops the
model there is the engine's read-only transaction and the confined worker.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: A value planted in every customer's email: what no prompt may hold below ``samples``.
SECRET = "TOPSECRET-42"
#: The planted file's content: what no reply, row or prompt may hold.
FILE_SECRET = "FILE-CANARY-7c41"
SHOP_TABLES = ("customers", "products", "orders", "order_items")
#: Environment variables of the MCP server's hooks (read by its ``sitecustomize``).
PROMPTS_VAR, BYPASS_VAR = "CADET_TEST_PROMPTS", "CADET_TEST_BYPASS"


# -- the world a question is asked in -----------------------------------------------------------


def _shop_statements() -> list[str]:
    """The sample shop, each customer's email starting with :data:`SECRET`."""
    from cadet_magic.examples.shop import shop_statements

    return [
        re.sub(r"'([\w.]+@example\.\w+)'", rf"'{SECRET}-\1'", s)
        if s.startswith("INSERT INTO customers")
        else s
        for s in shop_statements(comments=False)
    ]


@dataclass
class World:
    """A folder (the process's working directory) holding the sample shop as a DuckDB file and
    a SQLite file, each customer's email holding :data:`SECRET`, a planted file holding
    :data:`FILE_SECRET`, and the shop's tables as DataFrames."""

    folder: Path
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)

    @classmethod
    def make(cls, folder: Path) -> World:
        folder.mkdir(parents=True, exist_ok=True)
        statements = _shop_statements()
        con = duckdb.connect(str(folder / "shop.duckdb"))
        for s in statements:
            con.execute(s)
        frames = {t: con.execute(f"SELECT * FROM {t}").df() for t in SHOP_TABLES}
        con.close()
        lite = sqlite3.connect(folder / "shop.sqlite")
        for s in _shop_statements():
            lite.execute(s)
        lite.commit()
        lite.close()
        (folder / "planted.csv").write_text(f"secret\n{FILE_SECRET}\n")
        return cls(folder, frames)

    @property
    def planted(self) -> Path:
        return self.folder / "planted.csv"

    @property
    def marker(self) -> Path:
        """A file hostile code tries to make (it must never appear)."""
        return self.folder / "marker"

    def state(self) -> dict[str, Any]:
        """What must not change: the folder's files and their bytes."""
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.folder.iterdir())
            if p.is_file()
        }

    def frames_copy(self) -> dict[str, pd.DataFrame]:
        return {k: v.copy(deep=True) for k, v in self.frames.items()}

    def fill(self, text: str) -> str:
        return text.replace("{planted}", str(self.planted)).replace("{marker}", str(self.marker))


@dataclass(frozen=True)
class Question:
    """One question and the scripted replies to it (SQL attempts, then fallback attempts)."""

    text: str
    replies: tuple[str, ...]


@dataclass
class Seen:
    """What one surface's run showed each party: every prompt the model got (``prompts``,
    as text), what the surface hands back to its caller beyond the user's own display (the
    tool's text, the MCP replies, an answer's provenance), and the attempts' outcomes and
    answers (``results``: one per question, each ``(ok, outcomes, rows)``)."""

    prompts: str = ""
    returned: str = ""
    results: list[tuple[bool, list[str], list]] = field(default_factory=list)

    @property
    def everything(self) -> str:
        return self.prompts + "\n" + self.returned + "\n" + json.dumps(self.results, default=str)


class Recorder:
    """A scripted model (stored replies per question, labelled scripted) that records every
    prompt it is sent."""

    cadet_scripted = True

    def __init__(self, questions: list[Question]) -> None:
        from cadet_magic.llm import ScriptedModel

        self.model = ScriptedModel({q.text: list(q.replies) for q in questions})
        self.name = "scripted:recorder"
        self.prompts: list[Any] = []

    def invoke(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(_messages_text(messages))
        return self.model.invoke(messages, *args, **kwargs)


def _messages_text(messages: Any) -> list[str]:
    return [str(m[1] if isinstance(m, tuple) else getattr(m, "content", m)) for m in messages]


def _outcomes(result: Any) -> list[str]:
    return [str(a.outcome) for a in result.all_attempts]


def _record(seen: Seen, result: Any) -> None:
    seen.results.append((bool(result.ok), _outcomes(result), [list(r) for r in result.rows]))
    seen.returned += json.dumps(result.provenance, default=str)


# -- the surfaces -------------------------------------------------------------------------------


def ask_options(options: dict[str, Any]) -> dict[str, Any]:
    """The ``ask()`` keywords of a run's options (``follow_up``: the last question follows up
    on the one before; ``bypass``: the MCP server's checks are bypassed)."""
    return {k: v for k, v in options.items() if k not in ("follow_up", "bypass")}


Ask = Callable[[World, list[Question], dict[str, Any]], Seen]


@dataclass(frozen=True)
class Surface:
    """One way in: ``run(world, questions, options)`` asks each question in turn (a later one
    following up on the one before when ``follows``); ``engine`` is the SQL dialect the model
    writes; ``frames``: the shop's tables are the world's DataFrames; ``renames``: the tables
    as this surface names them."""

    name: str
    run: Ask
    engine: str = "duckdb"
    frames: bool = False
    follows: bool = False
    renames: tuple[tuple[str, str], ...] = ()

    def sql(self, text: str) -> str:
        for old, new in self.renames:
            text = re.sub(rf"\b{old}\b", new, text)
        return text


def _with_ask(con_of: Callable[[World], Any]) -> Ask:
    def run(world: World, questions: list[Question], options: dict[str, Any]) -> Seen:
        import cadet_magic

        model, seen, previous = Recorder(questions), Seen(), None
        con = con_of(world)
        try:
            for i, q in enumerate(questions):
                last = options.get("follow_up") and i == len(questions) - 1
                follow = {"follow": previous} if last else {}
                previous = cadet_magic.ask(
                    q.text, con=con, model=model, **ask_options(options), **follow
                )
                _record(seen, previous)
        finally:
            if hasattr(con, "close"):
                con.close()
        seen.prompts = json.dumps(model.prompts)
        return seen

    return run


def _graph(world: World, questions: list[Question], options: dict[str, Any]) -> Seen:
    from cadet_magic.langgraph import build_graph

    model, seen = Recorder(questions), Seen()
    con = duckdb.connect(str(world.folder / "shop.duckdb"))
    try:
        graph = build_graph(con, model=model, **ask_options(options))
        for q in questions:
            _record(seen, graph.invoke({"question": q.text})["result"])
    finally:
        con.close()
    seen.prompts = json.dumps(model.prompts)
    return seen


def _tool(world: World, questions: list[Question], options: dict[str, Any]) -> Seen:
    import cadet_magic

    model, seen = Recorder(questions), Seen()
    con = duckdb.connect(str(world.folder / "shop.duckdb"))
    try:
        tool = cadet_magic.as_tool(con, model=model, **ask_options(options))
        seen.returned += tool.description
        for q in questions:
            text = tool.invoke({"question": q.text})
            seen.returned += "\n" + text
            ok = text.startswith("SQL:")
            seen.results.append((ok, [], []))
    finally:
        con.close()
    seen.prompts = json.dumps(model.prompts)
    return seen


def _magic(shell: Any, source: str) -> Ask:
    """``%%ask`` in the real IPython shell; ``source`` names the data (``--con shop`` ...)."""

    def run(world: World, questions: list[Question], options: dict[str, Any]) -> Seen:
        model, seen = Recorder(questions), Seen()
        con = duckdb.connect(str(world.folder / "shop.duckdb"))
        shell.user_ns.update(shop=con, model=model, **world.frames)
        share = options.get("share", "samples")
        shell.run_line_magic("config", f"AskMagic.share = {share!r}")
        line = f"--model model --candidates 1 {source}"
        if options.get("fallback") is False:
            line += " --no-fallback"
        try:
            for i, q in enumerate(questions):
                last = options.get("follow_up") and i == len(questions) - 1
                follows = " --follow" if last else ""
                result = shell.run_cell_magic("ask", line + follows, q.text)
                _record(seen, result)
        finally:
            shell.run_line_magic("config", "AskMagic.share = 'samples'")
            con.close()
        seen.prompts = json.dumps(model.prompts)
        return seen

    return run


def _mcp(kind: str) -> Ask:
    """``python -m cadet_magic.mcp --db FILE`` over stdio, with the SDK's client."""

    def run(world: World, questions: list[Question], options: dict[str, Any]) -> Seen:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        replies = world.folder.parent / "replies.json"
        replies.write_text(json.dumps({"replies": {q.text: list(q.replies) for q in questions}}))
        prompts = world.folder.parent / "prompts.jsonl"
        prompts.unlink(missing_ok=True)
        env = {
            "PYTHONPATH": os.pathsep.join([str(server_hooks_dir(world.folder.parent)), str(ROOT)]),
            "CADET_LOCAL_DIR": os.environ.get("CADET_LOCAL_DIR", ""),
            PROMPTS_VAR: str(prompts),
            BYPASS_VAR: "1" if options.get("bypass") else "",
        }
        db = world.folder / f"shop.{kind}"
        args = ["-m", "cadet_magic.mcp", "--db", str(db), "--model", f"scripted:{replies}"]
        args += ["--share", options.get("share", "samples")]
        params = StdioServerParameters(
            command=sys.executable, args=args, env=env, cwd=str(world.folder)
        )

        async def ask_all() -> list[Any]:
            async with Client(params, read_timeout_seconds=300) as client:
                out = [await client.call_tool("schema", {})]
                for q in questions:
                    out.append(await client.call_tool("ask", {"question": q.text}))
                return out

        seen = Seen()
        for reply in asyncio.run(ask_all()):
            record = reply.structured_content or {}
            seen.returned += json.dumps(record) + "".join(c.text for c in reply.content)
            if "attempts" in record:
                outcomes = [a["outcome"] for a in record["attempts"]]
                seen.results.append((bool(record["ok"]), outcomes, record.get("rows") or []))
        seen.prompts = prompts.read_text() if prompts.exists() else ""
        return seen

    return run


def surfaces(shell: Any = None) -> dict[str, Surface]:
    """The table of surfaces (the magic's rows need the IPython shell)."""
    duck = _with_ask(lambda w: duckdb.connect(str(w.folder / "shop.duckdb")))
    table = [
        Surface("ask-duckdb", duck, follows=True),
        Surface(
            "ask-sqlite",
            _with_ask(lambda w: sqlite3.connect(w.folder / "shop.sqlite")),
            engine="sqlite",
            follows=True,
        ),
        Surface("frames", _with_ask(lambda w: w.frames), frames=True, follows=True),
        Surface(
            "one-frame",
            _with_ask(lambda w: w.frames["customers"]),
            frames=True,
            renames=(("customers", "df"),),
        ),
        Surface("langgraph", _graph),
        Surface("tool", _tool),
        Surface("mcp-duckdb", _mcp("duckdb")),
        Surface("mcp-sqlite", _mcp("sqlite"), engine="sqlite"),
    ]
    if shell is not None:
        table += [
            Surface("magic-con", _magic(shell, "--con shop"), follows=True),
            Surface(
                "magic-df",
                _magic(shell, "--df " + ",".join(SHOP_TABLES)),
                frames=True,
                follows=True,
            ),
        ]
    return {s.name: s for s in table}


NAMES = [
    "ask-duckdb", "ask-sqlite", "frames", "one-frame", "langgraph", "tool", "mcp-duckdb",
    "mcp-sqlite", "magic-con", "magic-df",
]  # fmt: skip
MAGIC = ("magic-con", "magic-df")


# -- our checks, bypassed -----------------------------------------------------------------------


def accept_sql(sql: str, target: Any, *args: Any, **kwargs: Any) -> Any:
    """A stand-in for the SQL check that passes everything as it was written (its tree as
    sqlglot reads it, else a bare command): what runs is then stopped by the engine alone."""
    import sqlglot
    from sqlglot import exp

    from cadet_magic.sql.query import CheckedQuery
    from cadet_magic.sql.validate import Validation

    try:
        tree = sqlglot.parse_one(sql, read=target.read)
    except Exception:  # noqa: BLE001 - not SQL sqlglot reads: the engine decides
        tree = exp.Command(this=sql)
    return Validation(True, [], CheckedQuery(tree, target, sql, sql))


def accept_code(code: str) -> Any:
    """A stand-in for the Python check that passes every program."""
    from cadet_magic.fallback.code_check import CodeCheck

    return CodeCheck(True)


def bypass() -> list[tuple[Any, str, Any]]:
    """Where our checks are called, and what stands in for them: ``(module, name, value)``."""
    from cadet_magic.agent import fallback_phase, steps
    from cadet_magic.fallback import worker

    return [
        (steps, "validate_sql", accept_sql),
        (fallback_phase, "check_python", accept_code),
        (worker, "check_code", accept_code),
    ]


SITECUSTOMIZE = '''"""Test hooks of the MCP server's process (tests/surfaces.py): record the prompts, bypass
the checks when asked."""
import os

if os.environ.get("{prompts}"):
    import json

    from cadet_magic.llm.spec import ScriptedModel
    from tests.surfaces import _messages_text

    _invoke = ScriptedModel.invoke

    def invoke(self, messages, *args, **kwargs):
        with open(os.environ["{prompts}"], "a", encoding="utf-8") as f:
            f.write(json.dumps(_messages_text(messages)) + "\\n")
        return _invoke(self, messages, *args, **kwargs)

    ScriptedModel.invoke = invoke
if os.environ.get("{bypass}"):
    from tests.surfaces import bypass

    for module, name, value in bypass():
        setattr(module, name, value)
'''


def server_hooks_dir(folder: Path) -> Path:
    """A folder holding the ``sitecustomize`` of the MCP server's process."""
    hooks = folder / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(
        SITECUSTOMIZE.format(prompts=PROMPTS_VAR, bypass=BYPASS_VAR)
    )
    return hooks
