"""How an answer is displayed: a result is plain data that knows no display; the extension tells
IPython how to show it when it loads, and ``ask()`` does for a shell without the extension."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest
from IPython.core.formatters import DisplayFormatter

import cadet_magic
from cadet_magic.display import mimebundle, register_formatters, render_text, with_metadata
from cadet_magic.llm import ScriptedModel
from cadet_magic.result import AskResult

ROOT = Path(cadet_magic.__file__).parent


class Shell:
    """A shell as far as the displays go: its display formatter."""

    def __init__(self) -> None:
        self.display_formatter = DisplayFormatter()


def answered() -> AskResult:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x INT)")
    model = ScriptedModel({"How many rows?": ["SELECT count(*) AS n FROM t"]})
    return cadet_magic.ask("How many rows?", con=con, model=model)


def test_a_result_knows_no_display():
    """No renderer registry, no display method on the result: the display package renders it
    and the import graph shows it (displays -> result, never back)."""
    tree = ast.parse((ROOT / "result.py").read_text())
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert not [n for n in names if n.startswith("register")]
    assert not hasattr(AskResult, "_repr_mimebundle_") and not hasattr(AskResult, "summary")
    assert "RENDERERS" not in (ROOT / "result.py").read_text()


def test_the_extension_shows_the_bundle_and_the_provenance():
    shell, r = Shell(), answered()
    register_formatters(shell)
    data, meta = shell.display_formatter.format(r)
    assert data == mimebundle(r) and meta == with_metadata(r)[1] and meta["cadet"] == r.provenance
    assert data["text/plain"] == render_text(r)


@pytest.mark.parametrize("extension_first", [True, False])
def test_ask_in_a_shell_shows_the_bundle_and_keeps_the_extensions(extension_first, monkeypatch):
    """``ask()`` in a shell without the extension shows the bundle (no metadata); it never
    replaces the extension's display, and the extension loaded later replaces its."""
    import IPython

    shell = Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    if extension_first:
        register_formatters(shell)
    r = answered()
    data, meta = shell.display_formatter.format(r)
    assert data == mimebundle(r)
    assert bool(meta) is extension_first
    if not extension_first:
        register_formatters(shell)
        assert shell.display_formatter.format(r)[1]["cadet"] == r.provenance


def test_outside_a_shell_a_result_is_its_repr():
    r = answered()
    assert repr(r).startswith("<AskResult ok: 1 attempt(s), 1 row(s)")
