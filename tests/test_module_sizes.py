"""The package stays readable: no module of cadet_magic/ above :data:`MAX_LINES` lines of code
(docstrings, comments and blank lines do not count: a module is not split for explaining
itself), and no function above complexity 15 (ruff's C901, configured in pyproject.toml).

A module holds one job and is named after it; the limit is a backstop, set high enough that a
cohesive module is never split by length alone (two halves of one job in two modules are
harder to read than one long module). A module that passes it holds more than one job: it is
split along its seams, the old names re-exported where callers import them. A module that must
stay long goes into :data:`ALLOWED` with the reason; the list is meant to stay empty.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import subprocess
import sys
import tokenize
import tomllib
from pathlib import Path

import pytest

import cadet_magic
from tests.conftest import need

PACKAGE = Path(cadet_magic.__file__).parent
REPO = PACKAGE.parent
#: Lines of code a module of the package may have at most (the longest, sql/functions.py, has 502).
MAX_LINES = 600
#: The most complex a function may be (ruff's mccabe ``max-complexity``).
MAX_COMPLEXITY = 15
#: Modules (paths under cadet_magic/) allowed above MAX_LINES, each with its reason.
ALLOWED: dict[str, str] = {}


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The line numbers of the module's, classes' and functions' docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return found


def lines(path: Path) -> int:
    """Lines of code of a module: lines holding a token of code, outside docstrings."""
    text = path.read_text(encoding="utf-8")
    docstrings = _docstring_lines(ast.parse(text))
    code: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in skip or token.type == tokenize.ENDMARKER:
            continue
        code.update(range(token.start[0], token.end[0] + 1))
    return len(code - docstrings)


MODULES = {p.relative_to(PACKAGE).as_posix(): p for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_module_is_too_long():
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := lines(path)) > MAX_LINES and name not in ALLOWED
    }
    assert not long, (
        f"modules above {MAX_LINES} lines (split them along their seams, or add them to "
        f"ALLOWED with the reason): {long}"
    )


def test_the_allowed_list_is_current():
    """Each allowed module exists, is still long, and says why."""
    for name, reason in ALLOWED.items():
        assert name in MODULES, f"{name} is allowed but does not exist"
        assert lines(MODULES[name]) > MAX_LINES, f"{name} is short now: remove it from ALLOWED"
        assert reason.strip(), f"{name} is allowed without a reason"


def test_the_size_rule_sees_a_long_module(tmp_path):
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * (MAX_LINES + 1))
    assert lines(long) > MAX_LINES


@pytest.mark.parametrize(
    ("text", "code"),
    [
        # docstrings, comments and blank lines are explanations
        (
            '"""A docstring\n\nof three lines."""\n\n# a comment\n'
            'def f():\n    """Its docstring."""\n    return 1  # code\n',
            2,
        ),
        ('class C:\n    """Its docstring\n    on two lines."""\n\n    x = 1\n', 2),
        # a string that is a value, not a docstring, is code on each of its lines
        ('"""Doc."""\nSQL = """\nSELECT 1\n"""\n', 3),
        # a statement spread over lines counts each of them
        ("x = f(\n    1,\n    2,\n)\n", 4),
        ("\n\n# only comments\n\n", 0),
    ],
)
def test_the_size_rule_counts_code_not_explanations(tmp_path, text, code):
    module = tmp_path / "explained.py"
    module.write_text(text)
    assert lines(module) == code


def test_ruff_limits_complexity_to_15():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    lint = config["tool"]["ruff"]["lint"]
    assert "C901" in lint["select"]
    assert "C901" not in lint.get("ignore", [])
    assert lint["mccabe"]["max-complexity"] == MAX_COMPLEXITY


def test_no_function_is_too_complex():
    need(importlib.util.find_spec("ruff") is not None, "ruff is not installed (the dev extra)")
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "C901", "--no-cache", "cadet_magic"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
