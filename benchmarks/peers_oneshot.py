"""The one-shot peer: the prompt text-to-SQL papers use, sent once, no retry.

The prompt is one user message: every table's ``CREATE TABLE`` statement as the engine keeps it
(SQLite's ``sqlite_master.sql``, DuckDB's ``duckdb_tables().sql``), each followed by three of
its rows in a comment, then the question under a line asking for valid SQL of the engine. The
model's SQL is taken out of its reply (a fenced block, or the reply itself) and run as it is.
Written here from that published description (schema as code, a few rows per table); no
prompt text is copied.

Example:
    >>> print(rows_comment("singer", ["id", "name"], [(1, "Joe"), (2, None)]).replace("\\t", " | "))
    /*
    3 rows from singer table:
    id | name
    1 | Joe
    2 | NULL
    */
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cadet_magic.agent.reply import content_text, extract_sql, usage_of
from cadet_magic.eval.data import Question

#: Rows shown per table.
ROWS = 3
#: The engines' names as the prompt writes them.
ENGINE_NAMES = {"sqlite": "SQLite", "duckdb": "DuckDB"}


def engine_tables(con: Any, engine: str) -> list[tuple[str, str]]:
    """``(table, CREATE TABLE statement)`` for every table, in the catalog's order, as the
    engine keeps the statement."""
    if engine == "duckdb":
        sql = (
            "SELECT table_name, sql FROM duckdb_tables() WHERE NOT internal "
            "AND schema_name = current_schema() ORDER BY table_oid"
        )
    else:
        sql = (
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        )
    return [(str(name), str(ddl or "").strip()) for name, ddl in con.execute(sql).fetchall()]


def table_rows(con: Any, table: str, n: int = ROWS) -> tuple[list[str], list[tuple]]:
    """The column names and the first ``n`` rows of ``table`` (none when they cannot be read)."""
    quoted = '"' + table.replace('"', '""') + '"'
    try:
        cur = con.execute(f"SELECT * FROM {quoted} LIMIT {int(n)}")
        rows = cur.fetchall()
        names = [d[0] for d in cur.description]
    except Exception:  # noqa: BLE001 - a table whose rows cannot be read shows none
        return [], []
    return names, [tuple(r) for r in rows]


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    return " ".join(str(value).split())


def rows_comment(table: str, names: Sequence[str], rows: Sequence[tuple]) -> str:
    """The rows of one table as the comment under its statement (tab-separated)."""
    lines = ["/*", f"{ROWS} rows from {table} table:", "\t".join(names)]
    lines += ["\t".join(_cell(v) for v in row) for row in rows]
    return "\n".join([*lines, "*/"])


def schema_text(con: Any, engine: str) -> str:
    """Every table's statement and rows, blank lines between tables."""
    parts = []
    for name, ddl in engine_tables(con, engine):
        names, rows = table_rows(con, name)
        parts.append(ddl + ("\n" + rows_comment(name, names, rows) if names else ""))
    return "\n\n".join(parts)


def prompt(schema: str, question: str, engine: str) -> list[tuple[str, str]]:
    """The one message sent."""
    name = ENGINE_NAMES.get(engine, engine)
    return [
        (
            "human",
            f"{schema}\n\n-- Using valid {name}, answer the following question for the tables "
            f"provided above.\n-- Question: {question}\n",
        )
    ]


def answer(model: Any, q: Question, con: Any, engine: str, schemas: dict[str, str]) -> dict:
    """Asks the one-shot question: the reply, its SQL, calls and tokens."""
    if q.db_id not in schemas:
        schemas[q.db_id] = schema_text(con, engine)
    reply = model.invoke(prompt(schemas[q.db_id], q.question, engine))
    text = content_text(getattr(reply, "content", reply))
    tokens = usage_of(reply)
    return {
        "reply": text,
        "sql": extract_sql(text),
        "calls": 1,
        "input_tokens": tokens.input if tokens else None,
        "output_tokens": tokens.output if tokens else None,
    }
