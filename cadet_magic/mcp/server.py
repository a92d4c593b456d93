"""The MCP server's tools, on the official ``mcp`` SDK (edge: mcp imported by :func:`build`).

Two tools: ``ask`` (a question in plain language -> the answer's rows, SQL, agreement,
warnings and readings: :func:`cadet_magic.answer_record.answer_record`) and ``schema`` (the
database's tables as the sharing level lets a model see them: names and types at every level,
and the text a prompt shows of them). Every question is one :func:`cadet_magic.ask` on the
server's connection, so every guarantee of ``ask()`` holds (one read-only statement over known
tables, the engine's safe functions, the limits, the confined fallback); questions are answered
one at a time. The client is often a model, so both replies are cut to the sharing level
(``--share``): beyond the answer's own rows, nothing the level does not show a model.
"""

from __future__ import annotations

import threading
from typing import Any

from cadet_magic.options import AskOptions

#: What the client's model reads about the server.
INSTRUCTIONS = (
    "Answers questions about one database in plain language. Call `ask` with a question (not "
    "SQL): it writes one read-only SQL query, checks it, runs it, corrects it when it fails, "
    "and returns the answer's rows with that SQL, how many candidate answers agreed and any "
    "warnings. Call `schema` to see which tables and columns there are."
)
ASK_DESCRIPTION = (
    "Answer one question about the data in plain language. Returns the answer's columns and "
    "rows, the SQL that produced them, the vote's agreement, warnings, and (when the question "
    "can be read several ways) the readings to choose from; or, with ok false, why there is "
    "no answer."
)
SCHEMA_DESCRIPTION = (
    "The database's tables and columns (names and types), and the schema text a question's "
    "prompt shows of them at the server's sharing level."
)


def schema_record(con: Any, options: AskOptions) -> dict[str, Any]:
    """The tables and columns of ``con`` and the schema text the model's prompt shows of them at
    ``options.share`` (for no question in particular: the prompt of a question shows the tables
    ranked for it, within the same budget)."""
    from cadet_magic.agent import steps
    from cadet_magic.agent.state import initial_state
    from cadet_magic.db.connect import resolve_runner
    from cadet_magic.runner import target_of

    runner = resolve_runner(con)
    ctx = steps.Context(model=None, runner=runner)
    state = initial_state(
        "", target=target_of(runner), connection=getattr(runner, "label", ""), options=options
    )
    state = steps.read_schema(state, ctx)
    return {
        "share": options.share,
        "dialect": state.target.name,
        "tables": [
            {"name": t.name, "columns": [{"name": c.name, "type": c.type} for c in t.columns]}
            for t in state.schema.tables
        ],
        "text": state.schema_text,
    }


def build(con: Any, options: AskOptions, name: str = "cadet_magic") -> Any:
    """The MCP server (``mcp.server.mcpserver.MCPServer``) answering about ``con`` with
    ``options``."""
    from mcp.server.mcpserver import MCPServer

    from cadet_magic.answer_record import answer_record
    from cadet_magic.errors import CadetError

    server = MCPServer(name, instructions=INSTRUCTIONS)
    one_at_a_time = threading.Lock()

    @server.tool(name="ask", description=ASK_DESCRIPTION, structured_output=True)
    def ask(question: str) -> dict[str, Any]:
        from cadet_magic.api import ask as ask_question

        with one_at_a_time:
            try:
                result = ask_question(question, con=con, options=options)
            except CadetError as e:  # no model, the database unreachable: one line
                return {"question": question, "ok": False, "message": str(e)}
        return answer_record(result, options.share)

    @server.tool(name="schema", description=SCHEMA_DESCRIPTION, structured_output=True)
    def schema() -> dict[str, Any]:
        with one_at_a_time:
            return schema_record(con, options)

    return server
