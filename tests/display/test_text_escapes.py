"""Terminal output: control characters and escape sequences stored in the data (or written
by the model) reach the text display escaped, never raw, end to end through ``ask()`` and
``%%ask`` with a scripted model on real DuckDB and SQLite: values, column names, the SQL, an
engine error that quotes a value, and the failure summary."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest

from cadet_magic.api import ask
from cadet_magic.display import mimebundle
from cadet_magic.display.plain_text import render_text
from tests.helpers import fake_model, sql_reply

#: What a terminal would act on: OSC 52 (clipboard), a window title, clear screen, a carriage
#: return that hides text, a bell, a C1 CSI, a bidirectional override.
HOSTILE = [
    "\x1b]52;c;cm0gLXJmIH4=\x07",
    "\x1b]0;pwned\x07",
    "\x1b[2J\x1b[H",
    "safe\rhidden",
    "\x9b31m",
    "abc\u202edcba",
    "tab\there\nnewline",
]
RAW = ("\x1b", "\x07", "\r", "\x9b", "\u202e")


def _rows():
    return [(i, v) for i, v in enumerate(HOSTILE)]


def _duckdb():
    con = duckdb.connect()
    con.execute("CREATE TABLE notes (id INTEGER, body TEXT)")
    con.executemany("INSERT INTO notes VALUES (?, ?)", _rows())
    return con


def _sqlite():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE notes (id INTEGER, body TEXT)")
    con.executemany("INSERT INTO notes VALUES (?, ?)", _rows())
    con.commit()
    return con


def assert_escaped(text: str) -> None:
    for ch in RAW:
        assert ch not in text, (ch, text)
    for line in text.splitlines():
        assert "\t" not in line or not line.startswith("tab")  # a cell keeps no tab either


@pytest.mark.parametrize("connect", [_duckdb, _sqlite], ids=["duckdb", "sqlite"])
def test_values_and_names_are_escaped_through_ask(connect):
    sql = 'SELECT id, body AS "\x1b]0;col\x07" FROM notes ORDER BY id'
    r = ask("All notes?", con=connect(), model=fake_model(sql_reply(sql)), max_attempts=1)
    assert r.ok and [row[1] for row in r.rows] == HOSTILE  # the data itself is unchanged
    text = render_text(r)
    assert_escaped(text)
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in text and "safe\\rhidden" in text
    assert "abc\\u202edcba" in text and "tab\\there\\nnewline" in text
    assert_escaped(mimebundle(r)["text/plain"])


def test_an_engine_error_quoting_a_value_is_escaped():
    bad = sql_reply("SELECT CAST(body AS INTEGER) AS n FROM notes WHERE id = 1")
    r = ask("Notes as numbers?", con=_duckdb(), model=fake_model(bad, bad), max_attempts=2)
    assert not r.ok and "\x1b" in (r.attempts[0].error or "")  # DuckDB quotes the value
    assert_escaped(render_text(r))


def test_the_text_display_of_the_magic_is_escaped(ipython_shell):
    ip = ipython_shell
    ip.user_ns["notes_con"] = _duckdb()
    sql = "SELECT id, body FROM notes WHERE body <> '\x1b[5m' ORDER BY id"
    ip.user_ns["model"] = fake_model(sql_reply(sql))
    ip.run_cell_magic("ask", "--model model --con notes_con --max-attempts 1", "All notes?")
    r = ip.user_ns["_ask"]
    assert r.ok and len(r.rows) == len(HOSTILE)
    bundle = ip.display_formatter.format(r)[0]
    assert_escaped(bundle["text/plain"])
    assert "\\x1b[5m" in bundle["text/plain"]  # the SQL's literal, shown escaped
