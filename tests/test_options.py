"""AskOptions: every option and its default once, checked in one place, mapped from ask()'s keywords."""

import dataclasses
import doctest
import inspect
import sqlite3

import pytest

import cadet_magic
import cadet_magic.options
from cadet_magic.api import ask
from cadet_magic.errors import ConfigurationError
from cadet_magic.llm import ScriptedModel
from cadet_magic.magic import AskMagic
from cadet_magic.options import DEFAULTS, AskOptions


def test_doctests():
    assert doctest.testmod(cadet_magic.options).failed == 0


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.row_limit = 5  # type: ignore[misc]


def test_every_ask_keyword_is_an_option():
    params = inspect.signature(ask).parameters
    not_options = {"question", "con", "options", "on_event", "namespace", "code_runner", "metrics"}
    assert set(params) - not_options <= set(AskOptions.names())


@pytest.mark.parametrize("name", ["max_attempts", "row_limit", "result_bytes", "timeout",
                                  "model_timeout", "fallback", "fallback_memory",
                                  "schema_budget", "live"])  # fmt: skip
def test_magic_defaults_are_the_options_defaults(name):
    assert AskMagic.class_traits()[name].default_value == getattr(DEFAULTS, name)


def _con():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x INT)")
    con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    return con


def test_keywords_override_options():
    model = ScriptedModel({"All?": ["SELECT x FROM t ORDER BY x"] * 2})
    r = ask("All?", con=_con(), model=model, options=AskOptions(row_limit=1))
    assert r.rows == [(1,)] and r.truncated
    r = ask("All?", con=_con(), model=model, options=AskOptions(row_limit=1), row_limit=2)
    assert r.rows == [(1,), (2,)]


def test_model_from_options():
    model = ScriptedModel({"n?": ["SELECT count(*) FROM t"]})
    assert cadet_magic.ask("n?", con=_con(), options=AskOptions(model=model)).rows == [(3,)]


@pytest.mark.parametrize("change", [{"max_attempts": 0}, {"row_limit": 0}, {"timeout": -1.0},
                                    {"schema_budget": 0}, {"model_timeout": float("nan")}])  # fmt: skip
def test_check(change):
    with pytest.raises(ConfigurationError):
        AskOptions(**change).check()
    with pytest.raises(ConfigurationError):
        ask("q?", con=_con(), model=ScriptedModel({}), **change)
