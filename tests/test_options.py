"""AskOptions: every option and its default once, checked in one place, mapped from ask()'s keywords."""

import dataclasses
import doctest
import inspect
import sqlite3

import pytest
from traitlets import TraitError

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
    not_options = {
        "question",
        "con",
        "options",
        "on_event",
        "namespace",
        "code_runner",
        "metrics",
        "follow",
        "number",
    }
    assert set(params) - not_options <= set(AskOptions.names())


@pytest.mark.parametrize("name", AskOptions.names())
def test_magic_defaults_are_the_options_defaults(name):
    """Every option is a configurable trait of the magic, generated from its field: the same
    default, help and None-ness."""
    trait = AskMagic.class_traits(config=True)[name]
    field = next(f for f in AskOptions.fields() if f.name == name)
    assert trait.default_value == getattr(DEFAULTS, name)
    assert trait.help == field.metadata["help"] and trait.allow_none == field.metadata["nullable"]


def test_every_option_is_an_ask_keyword():
    params = inspect.signature(ask).parameters
    assert set(AskOptions.names()) <= set(params)
    with pytest.raises(TypeError, match="row_limt"):
        ask("q?", con=_con(), model=ScriptedModel({}), row_limt=5)


def test_the_magic_passes_every_option():
    """The magic's options object holds every trait's value (nothing copied by hand)."""
    magic = AskMagic(shell=None)
    magic.row_limit, magic.fallback_row_limit, magic.model_timeout = 7, 9, None
    opts = magic.options()
    assert (opts.row_limit, opts.fallback_row_limit, opts.model_timeout) == (7, 9, None)
    assert opts.replace(row_limit=1000, fallback_row_limit=100_000, model_timeout=120.0) == DEFAULTS


@pytest.mark.parametrize(("name", "value"), [("max_attempts", 0), ("row_limit", 0),
                                             ("timeout", -1.0), ("fallback_memory", 0)])  # fmt: skip
def test_a_trait_is_checked_by_the_option_check(name, value):
    """One check: setting a trait says what the option's own check says, and keeps the value."""
    magic = AskMagic(shell=None)
    before = getattr(magic, name)
    with pytest.raises(ConfigurationError) as expected:
        AskOptions(**{name: value})
    with pytest.raises(TraitError) as refused:
        setattr(magic, name, value)
    assert str(expected.value) in str(refused.value) and getattr(magic, name) == before


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
