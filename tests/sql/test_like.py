"""LIKE matching in linear time (``cadet_magic.sql.like``): the same answers as a regular
expression on small random cases, and hostile patterns end at once, alone and end to end
through the result check of ``ask()`` and ``%%ask`` with a scripted model on real SQLite and
DuckDB (a ``%%%%...#`` pattern once backtracked for ever in the kernel)."""

from __future__ import annotations

import random
import re
import time

import pytest

from cadet_magic.api import ask
from cadet_magic.sql.like import like_match
from tests.helpers import connect_with, fake_model, sql_reply

#: Patterns that make a backtracking regular expression run for ever on VALUE.
HOSTILE = [
    "%" * 40 + "#",
    "%a" * 30 + "#",
    "%_%_%_%_%_%_%_%_%_%_%_%_%_%_%_%_%_%_%_%_#",
    "_%" * 50 + "!",
]
VALUE = "a" * 60
#: Seconds a question with a hostile pattern may take at most (it took for ever before).
BOUND = 10.0


def _regex(pattern: str) -> re.Pattern:
    parts = (".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.S)


def test_agrees_with_a_regular_expression_on_random_cases():
    rng = random.Random(7)
    for _ in range(20_000):
        pattern = "".join(rng.choice("ab%_") for _ in range(rng.randint(0, 7)))
        value = "".join(rng.choice("abc") for _ in range(rng.randint(0, 8)))
        assert like_match(pattern, value) == bool(_regex(pattern).fullmatch(value)), (
            pattern,
            value,
        )


@pytest.mark.parametrize("pattern", HOSTILE)
def test_hostile_patterns_end_at_once(pattern):
    t0 = time.perf_counter()
    assert not like_match(pattern, VALUE * 100)
    assert time.perf_counter() - t0 < 1.0


SETUP = [
    "CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT)",
    f"INSERT INTO city VALUES (1, '{VALUE}'), (2, '{VALUE}b'), (3, 'Lyon')",
]


def _sqlite():
    return connect_with("sqlite", SETUP)


def _duckdb():
    return connect_with("duckdb", SETUP)


@pytest.mark.parametrize("connect", [_sqlite, _duckdb], ids=["sqlite", "duckdb"])
@pytest.mark.parametrize("pattern", HOSTILE)
def test_hostile_like_through_ask(connect, pattern):
    sql = f"SELECT id FROM city WHERE name LIKE '{pattern}'"
    t0 = time.monotonic()
    r = ask("Which cities?", con=connect(), model=fake_model(sql_reply(sql)), max_attempts=1)
    assert time.monotonic() - t0 < BOUND
    assert r.ok and r.rows == []  # answered (an empty result, with a warning)


def test_hostile_like_through_the_magic(ipython_shell):
    ip = ipython_shell
    ip.user_ns["like_con"] = _duckdb()
    sql = f"SELECT id FROM city WHERE name LIKE '{HOSTILE[0]}'"
    ip.user_ns["model"] = fake_model(sql_reply(sql))
    t0 = time.monotonic()
    ip.run_cell_magic("ask", "--model model --con like_con --max-attempts 1", "Which cities?")
    assert time.monotonic() - t0 < BOUND
    r = ip.user_ns["_ask"]
    assert r.ok and r.rows == []
