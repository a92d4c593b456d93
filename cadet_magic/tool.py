"""``as_tool(con, model=..., **options)``: the agent as a LangChain tool (edge: langchain-core
and pydantic imported when the tool is made).

The tool takes one argument, ``question`` (plain language), and answers it with
:func:`cadet_magic.ask` on ``con`` (any connection ``ask()`` takes, DataFrames included):
every guarantee of ``ask()`` holds (one read-only statement over known tables, the engine's
safe functions, the limits, the confined fallback). What it returns is text for the calling
model (:func:`cadet_magic.answer_record.answer_text`): the answer's SQL and rows, how many
candidate answers agreed and the warnings, or why there is no answer, cut to the ``share``
level the tool was made with.

Example:
    >>> import sqlite3
    >>> from cadet_magic.llm import ScriptedModel
    >>> con = sqlite3.connect(":memory:")
    >>> _ = con.execute("CREATE TABLE t (x INT)"); _ = con.execute("INSERT INTO t VALUES (4)")
    >>> m = ScriptedModel({"Total x?": ["```sql\\nSELECT sum(x) AS total FROM t\\n```"]})
    >>> tool = as_tool(con, model=m)
    >>> tool.name, list(tool.args)
    ('ask_database', ['question'])
    >>> print(tool.invoke({"question": "Total x?"}))
    SQL: SELECT sum(x) AS total FROM t
    Rows (1):
    total
    4
    Note: answered by a scripted stand-in model (stored replies, not an LLM).
"""

from __future__ import annotations

from typing import Any

from cadet_magic.errors import CadetError
from cadet_magic.options import UNSET, merged

#: The tool's name, as the calling model sees it.
TOOL_NAME = "ask_database"
#: Table names the description lists at most.
LISTED_TABLES = 30

DESCRIPTION = (
    "Answers one question about the data in {where} and returns the answer's rows with the "
    "SQL that produced them, how many candidate answers agreed, and any warnings. Ask in plain "
    "language, one question per call (not SQL: the tool writes, checks and runs one read-only "
    "query itself, and corrects it when it fails).{tables}"
)


def _tables(con: Any) -> tuple[str, str]:
    """What the description names: the connection's label and its tables (names only, which
    every sharing level shows); nothing when the schema cannot be read now."""
    from cadet_magic.db.connect import resolve_runner

    try:
        runner = resolve_runner(con)
        names = [t.name for t in runner.schema().tables]
    except Exception:  # noqa: BLE001 - each call says what fails; the description can wait
        return "the database", ""
    listed = ", ".join(names[:LISTED_TABLES]) + (", ..." if len(names) > LISTED_TABLES else "")
    where = getattr(runner, "label", "") or "the database"
    return where, f" Tables: {listed}." if names else ""


def as_tool(
    con: Any = None,
    model: Any = UNSET,
    *,
    name: str = TOOL_NAME,
    description: str | None = None,
    **options: Any,
) -> Any:
    """A LangChain tool (a :class:`langchain_core.tools.StructuredTool`) answering questions
    about ``con`` with ``ask(question, con=con, model=model, **options)``.

    ``options`` are :class:`~cadet_magic.options.AskOptions` keywords (``share="schema"``,
    ``row_limit=20``, ``candidates=1`` ...), checked now; an unknown one is a ``TypeError``.
    ``description`` replaces the one the tool makes (which names the connection's tables).
    An error that stops a question (no model, no connection) comes back as the tool's text, in
    one line.
    """
    from langchain_core.tools import StructuredTool

    from cadet_magic.answer_record import answer_text

    opts = merged(None, model=model, **options)

    def answer(question: str) -> str:
        """Answers a question about the data.

        Args:
            question: The question in plain language, e.g. 'What is the revenue per month?'
        """
        from cadet_magic.api import ask

        try:
            result = ask(question, con=con, options=opts)
        except CadetError as e:
            return f"No answer: {e}"
        return answer_text(result, opts.share)

    if description is None:
        where, tables = _tables(con)
        description = DESCRIPTION.format(where=where, tables=tables)
    return StructuredTool.from_function(
        func=answer, name=name, description=description, parse_docstring=True
    )
