"""LangChain's SQL pieces as their documentation teaches them, as peers of the product.

- ``chain``: ``create_sql_query_chain(llm, SQLDatabase)`` invoked with the question; what it
  returns is run as returned (the documentation runs it with ``db.run``), and separately with
  its SQL taken out of the reply (a ``SQLQuery:`` label and a code fence removed): the line's
  ``sql`` and ``match`` are the latter, ``extra["as_returned"]`` the former.
- ``agent``: ``create_sql_agent`` with a ``SQLDatabaseToolkit`` as a ReAct agent (what
  ``create_sql_agent`` builds by default; the model server at the evaluation's settings
  returns a tool call as text, not as a tool call, so a tool-calling agent sees none:
  ``agent-tools`` runs it that way to show it). The answer scored is the SQL of the agent's
  last ``sql_db_query`` call that ran without error; the iterations are capped at
  :data:`MAX_ITERATIONS` (LangChain's default is 15).

Both reach the database through ``SQLDatabase`` on a read-only connection (SQLite
``mode=ro``). The model is the same client the product uses. Calls and tokens are counted by a
callback on every model call (the agent's query checker included).

Example:
    >>> taken_out("SQLQuery: SELECT name FROM singer LIMIT 5")
    'SELECT name FROM singer LIMIT 5'
    >>> taken_out('```sql\\nSELECT 1\\n```')
    'SELECT 1'
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote
from uuid import UUID

from benchmarks.peer_runs import MODEL_ERROR, REPLY_CHARS, Databases, Line, score
from cadet_magic.agent.reply import extract_sql
from cadet_magic.eval.data import Question
from cadet_magic.text import first_line

#: The SQL agent's iteration cap (each iteration is one model call and one tool call).
MAX_ITERATIONS = 10
#: Seconds one agent run may take in all (LangChain's ``max_execution_time``).
MAX_SECONDS = 900.0

_LABEL = re.compile(r"SQLQuery:\s*", re.I)


def taken_out(text: str) -> str | None:
    """The SQL of a chain's reply: what follows its first ``SQLQuery:`` label (the model may
    repeat the ``Question:`` line first), cut at the next ``SQLResult:``, ``Answer:`` or
    ``Question:`` line, any fence removed.

    Example:
        >>> taken_out("Question: How many?\\nSQLQuery: SELECT count(*) FROM t\\nSQLResult: 3")
        'SELECT count(*) FROM t'
    """
    text = text or ""
    found = _LABEL.search(text)
    body = text[found.end() :] if found else text
    body = re.split(r"\n\s*(?:SQLResult|Answer|Question):", body, maxsplit=1)[0]
    return extract_sql(body)


def _community() -> Any:
    """``langchain_community``, imported without its notice that it is being sunset (the
    benchmark says so in its section; the notice would repeat on every run)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import langchain_community.agent_toolkits
        import langchain_community.utilities

    return langchain_community


def sql_database(path: str) -> Any:
    """LangChain's ``SQLDatabase`` over a read-only connection to the SQLite file ``path``."""
    SQLDatabase = _community().utilities.SQLDatabase
    from sqlalchemy import create_engine
    from sqlalchemy.pool import StaticPool

    uri = f"file:{quote(path)}?mode=ro"
    engine = create_engine(
        "sqlite://",
        creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
        poolclass=StaticPool,
    )
    return SQLDatabase(engine)


class Counter:
    """A LangChain callback counting model calls and tokens, and keeping the SQL of the
    ``sql_db_query`` tool calls with whether each ran."""

    def __init__(self) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        outer = self
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.queries: list[tuple[str, bool]] = []
        self._pending: dict[UUID, str] = {}

        class Handler(BaseCallbackHandler):
            def on_llm_end(self, response: Any, **kwargs: Any) -> None:
                outer.calls += 1
                outer._add(response)

            def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
                outer.calls += 1

            def on_tool_start(
                self, serialized: dict, input_str: str, *, run_id: UUID, **kwargs: Any
            ) -> None:
                name = (serialized or {}).get("name") or kwargs.get("name")
                if name == "sql_db_query":
                    outer._pending[run_id] = input_str

            def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
                if run_id in outer._pending:
                    text = str(getattr(output, "content", output))
                    outer.queries.append((outer._pending.pop(run_id), not text.startswith("Error")))

            def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
                if run_id in outer._pending:
                    outer.queries.append((outer._pending.pop(run_id), False))

        self.handler = Handler()

    def _add(self, response: Any) -> None:
        usage = (getattr(response, "llm_output", None) or {}).get("token_usage") or {}
        if not usage:
            for gens in getattr(response, "generations", []) or []:
                for g in gens:
                    meta = getattr(getattr(g, "message", None), "usage_metadata", None) or {}
                    self.input_tokens += int(meta.get("input_tokens") or 0)
                    self.output_tokens += int(meta.get("output_tokens") or 0)
            return
        self.input_tokens += int(usage.get("prompt_tokens") or 0)
        self.output_tokens += int(usage.get("completion_tokens") or 0)

    def last_query(self) -> str | None:
        """The SQL of the last query call that ran without error."""
        ran = [sql for sql, ok in self.queries if ok]
        return ran[-1] if ran else None


def _tool_input(text: str) -> str:
    """A ReAct tool input as the tool receives it (LangChain passes the raw string; a JSON
    object ``{"query": ...}`` from a tool-calling agent is read too)."""
    import json

    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return text
    if isinstance(value, dict) and isinstance(value.get("query"), str):
        return value["query"]
    return text


def chain_answerer(model: Any, dbs: Databases) -> Callable[[Question], Line]:
    from langchain_classic.chains import create_sql_query_chain

    chains: dict[str, Any] = {}

    def answer(q: Question) -> Line:
        t0 = time.perf_counter()
        if q.db_id not in chains:
            chains[q.db_id] = create_sql_query_chain(
                model, sql_database(str(dbs.places[q.db_id][0]))
            )
        counter = Counter()
        try:
            reply = chains[q.db_id].invoke(
                {"question": q.question}, {"callbacks": [counter.handler]}
            )
        except Exception as e:  # noqa: BLE001 - the server failed: the question runs again
            return Line(
                *q.key, error=f"{MODEL_ERROR}: {first_line(str(e), 300)}", calls=counter.calls
            )
        seconds = round(time.perf_counter() - t0, 3)
        text = str(reply)
        as_returned = score(dbs, q, text)
        sql = taken_out(text)
        s = score(dbs, q, sql)
        return Line(
            *q.key,
            sql=sql,
            ran=s.ran,
            match=s.match,
            error=s.error,
            calls=counter.calls,
            input_tokens=counter.input_tokens,
            output_tokens=counter.output_tokens,
            seconds=seconds,
            reply=text[:REPLY_CHARS],
            extra={"as_returned": {"ran": as_returned.ran, "match": as_returned.match}},
        )

    return answer


def agent_answerer(model: Any, dbs: Databases, tools: bool = False) -> Callable[[Question], Line]:
    toolkits = _community().agent_toolkits
    SQLDatabaseToolkit, create_sql_agent = toolkits.SQLDatabaseToolkit, toolkits.create_sql_agent
    agents: dict[str, Any] = {}

    def build(db_id: str) -> Any:
        db = sql_database(str(dbs.places[db_id][0]))
        return create_sql_agent(
            model,
            toolkit=SQLDatabaseToolkit(db=db, llm=model),
            agent_type="tool-calling" if tools else None,
            max_iterations=MAX_ITERATIONS,
            max_execution_time=MAX_SECONDS,
            # each step's reply whole rather than streamed: the same prompts and replies, and
            # the server reports the tokens (it reports none in a stream)
            stream_runnable=False,
        )

    def answer(q: Question) -> Line:
        t0 = time.perf_counter()
        if q.db_id not in agents:
            agents[q.db_id] = build(q.db_id)
        counter = Counter()
        output, failure = "", None
        try:
            result = agents[q.db_id].invoke({"input": q.question}, {"callbacks": [counter.handler]})
            output = str(result.get("output", ""))
        except Exception as e:  # noqa: BLE001 - a parse failure ends the run: its result
            failure = f"{type(e).__name__}: {first_line(str(e), 300)}"
            if "connect" in failure.lower() or "timed out" in failure.lower():
                return Line(*q.key, error=f"{MODEL_ERROR}: {failure}", calls=counter.calls)
        seconds = round(time.perf_counter() - t0, 3)
        last = counter.last_query()
        sql = _tool_input(last) if last is not None else None
        s = score(dbs, q, sql)
        return Line(
            *q.key,
            sql=sql,
            ran=s.ran,
            match=s.match,
            error=s.error if sql else (failure or "no query call ran"),
            calls=counter.calls,
            input_tokens=counter.input_tokens,
            output_tokens=counter.output_tokens,
            seconds=seconds,
            reply=output[:REPLY_CHARS],
            extra={
                "query_calls": len(counter.queries),
                "query_calls_ran": sum(ok for _, ok in counter.queries),
                "stopped": failure,
            },
        )

    return answer
