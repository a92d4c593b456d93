"""cadet_magic/schema stays portable (Pyodide): stdlib, sqlglot and sqlparse only; doctests run."""

import ast
import doctest
import importlib
import sys
from pathlib import Path

import pytest

import cadet_magic.schema

PACKAGE = Path(cadet_magic.schema.__file__).parent
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
ALLOWED = set(sys.stdlib_module_names) | {"sqlglot", "sqlparse", "cadet_magic", "__future__"}


@pytest.mark.parametrize("module", MODULES)
def test_imports_are_portable(module):
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots = [node.module.split(".")[0]]
        else:
            continue
        assert set(roots) <= ALLOWED, f"{module} imports {roots}"


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    mod = importlib.import_module(f"cadet_magic.schema.{module}")
    result = doctest.testmod(mod)
    assert result.failed == 0
