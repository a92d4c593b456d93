"""Real results for the display tests: a scripted model on SQLite and DuckDB, with events."""

from __future__ import annotations

import dataclasses
import sqlite3
from html.parser import HTMLParser

import duckdb

from cadet_magic.agent.events import RunDone
from cadet_magic.api import ask
from cadet_magic.llm import ScriptedModel
from cadet_magic.result import AskResult, Attempt, Fallback

SHOP = [
    "CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, city TEXT)",
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL,"
    " status TEXT)",
    "INSERT INTO customers VALUES (1, 'Ann', 'Oslo'), (2, 'Bob', 'Rome'), (3, 'Cleo', 'Oslo')",
    "INSERT INTO orders VALUES (1, 1, 10.0, 'shipped'), (2, 2, 32.5, 'shipped'),"
    " (3, 1, 7.5, 'cancelled'), (4, 3, 12.0, 'shipped')",
]

CORRECTED = "What did each customer spend?"
BAD_SQL = "SELECT c.name, SUM(o.amout) AS spent FROM customers c JOIN orders o USING (customer_id) GROUP BY c.name"
GOOD_SQL = (
    "SELECT c.name, SUM(o.amount) AS spent\nFROM customers c\nJOIN orders o USING (customer_id)\n"
    "GROUP BY c.name\nORDER BY spent DESC"
)
REFUSED = "Delete the cancelled orders"
#: Three candidate answers, two of them agreeing (and one that is not the first answer).
VOTED = "Which customers live in Oslo?"
VOTED_SQL = "SELECT name FROM customers WHERE city = 'Oslo'"
OTHER_SQL = "SELECT name FROM customers WHERE city <> 'Rome' AND customer_id < 3"
MANY = "List every order"
FALLBACK = "Which customer has the largest shipped order?"
SIMPLE = (
    "SELECT c.name, o.amount FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
    "WHERE o.status = 'shipped'"
)
CODE = "top = df.sort_values('amount', ascending=False).head(1)\nresult = top[['name', 'amount']]"


def fence(sql: str) -> str:
    return f"Here you go:\n```sql\n{sql}\n```"


REPLIES = {
    CORRECTED: [fence(BAD_SQL), fence(GOOD_SQL)],
    REFUSED: [fence("DELETE FROM orders WHERE status = 'cancelled'")] * 3,
    MANY: [fence("SELECT order_id, amount FROM orders ORDER BY order_id")],
    VOTED: [
        fence(OTHER_SQL),
        fence(VOTED_SQL),
        fence("SELECT name FROM customers WHERE city IN ('Oslo')"),
    ],
    FALLBACK: [
        fence("SELECT name, amout FROM orders JOIN customers USING (customer_id)"),
        fence("SELECT name, amount FROM orders JOIN customers USING (customer_id) LIMT 1"),
        fence("SELECT nam FROM customers"),
        f"A simpler way:\n```sql\n{SIMPLE}\n```\nthen\n```python\n{CODE}\n```\n",
    ],
}


def sqlite_shop() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    for statement in SHOP:
        con.execute(statement)
    con.commit()
    return con


def duckdb_shop() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for statement in SHOP:
        con.execute(statement.replace("TEXT", "VARCHAR").replace("REAL", "DOUBLE"))
    return con


def run(question: str, con=None, **options) -> tuple[AskResult, list]:
    """Asks ``question`` with the scripted model; returns the result and its step events (the
    run's end checked and left out)."""
    events: list = []
    result = ask(
        question,
        con=con if con is not None else sqlite_shop(),
        model=ScriptedModel(REPLIES, name="scripted:display-tests"),
        on_event=events.append,
        **{"fallback": False, **options},
    )
    done = events.pop()  # the run's end: the result as the core built it
    assert isinstance(done, RunDone) and done.result.question == result.question
    return result, events


def with_fallback(result: AskResult) -> AskResult:
    """``result`` as if its SQL had kept failing and the fallback had answered."""
    attempt = Attempt(
        number=1,
        sql="SELECT name, amount FROM customers JOIN orders USING (customer_id)",
        code="df.groupby('name')['amount'].sum().reset_index()",
        outcome="ok",
        timings={"generate": 0.01, "execute": 0.002},
        phase="fallback",
    )
    fallback = Fallback(
        sql=attempt.sql,
        code=attempt.code,
        result=None,
        ok=True,
        attempts=[attempt],
    )
    return dataclasses.replace(
        result,
        fallback=fallback,
        ok=True,
        sql=None,
        columns=["name", "amount"],
        rows=[("Ann", 17.5), ("Bob", 32.5)],
    )


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = False

    def handle_starttag(self, tag, attrs):
        self._skip = tag == "style"

    def handle_endtag(self, tag):
        self._skip = False

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def html_text(html: str) -> str:
    """The visible text of ``html`` (no tags, no styles), whitespace collapsed."""
    parser = _Text()
    parser.feed(html)
    return " ".join("".join(parser.parts).split())


def squash(text: str) -> str:
    return " ".join(text.split())
