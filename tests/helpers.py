"""Small helpers shared by tests: scripted models and replies."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage


def sql_reply(sql: str, prose: str = "Here is the query:") -> str:
    """A model reply holding ``sql`` in a fenced block, as real models write it."""
    return f"{prose}\n```sql\n{sql}\n```\n"


class ScriptedChatModel(GenericFakeChatModel):
    """langchain-core's scripted chat model, declared a stand-in as the product documents it
    (``cadet_scripted``): labelled scripted, and it votes only when a test asks for candidates
    (its replies are a script, not samples)."""

    cadet_scripted: bool = True


def fake_model(*replies: str) -> ScriptedChatModel:
    """A scripted chat model (:class:`ScriptedChatModel`) replying with ``replies`` in order."""
    return ScriptedChatModel(messages=iter([AIMessage(content=r) for r in replies]))


def counted(*replies: tuple[str, int, int]) -> ScriptedChatModel:
    """A scripted chat model whose replies carry LangChain usage metadata.

    Each reply is ``(text, input_tokens, output_tokens)``.
    """
    return ScriptedChatModel(
        messages=iter(
            AIMessage(
                content=text,
                usage_metadata={"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
            )
            for text, i, o in replies
        )
    )


def connect_with(engine: str, statements: list[str]):
    """A new in-memory ``sqlite`` or ``duckdb`` connection with ``statements`` run on it."""
    if engine == "sqlite":
        import sqlite3

        con = sqlite3.connect(":memory:")
    else:
        import duckdb

        con = duckdb.connect()
    for s in statements:
        con.execute(s)
    if engine == "sqlite":
        con.commit()
    return con


class CountingModel:
    """Wraps a model, recording every prompt it received."""

    def __init__(self, model) -> None:
        self.model = model
        self.prompts: list = []
        self.name = "counting"
        self.cadet_scripted = True

    def invoke(self, messages, *args, **kwargs):
        self.prompts.append(messages)
        return self.model.invoke(messages, *args, **kwargs)


def usage_error(shell, magic: str, line: str, cell: str | None = None) -> str:
    """Runs a magic that must refuse with IPython's UsageError; returns its one line.

    Through ``run_cell`` as a notebook would: the cell fails (so "Run All" stops) and no
    traceback is shown.
    """
    from IPython.core.error import UsageError

    source = f"%%{magic} {line}\n{cell}" if cell is not None else f"%{magic} {line}"
    result = shell.run_cell(source)
    error = result.error_in_exec
    assert isinstance(error, UsageError), error
    assert not result.success
    text = str(error)
    assert "\n" not in text and "Traceback" not in text, text
    return text


#: Seconds added to a wall-clock bound whose alternative is "never" (a runaway query, an endless
#: loop, a server that hangs): generous, because the machine is shared and noisy. Speed itself
#: is measured in ``python -m benchmarks``, never asserted.
TIME_SLACK = 10.0
