"""Which cadet_magic files the portable core needs: its packages plus what they import.

The roots are the portable packages (CONTRIBUTING.md, "Layout") and the stdlib-sqlite3 runner. Every
cadet_magic module a copied file imports when it is imported (module level, including
``try``/``if`` blocks, but not ``if TYPE_CHECKING:``) is copied too; modules outside the
roots reached that way are reported as ``pulled_in``. Imports inside functions run only when
the function does: they are listed as ``lazy`` and copied only when they are in the roots, so
a lazy import of an edge module on the path the test drives fails inside Pyodide.

Example:
    >>> from pathlib import Path
    >>> c = portable_closure(Path(__file__).resolve().parents[2] / "cadet_magic")
    >>> "agent/run.py" in c.files, "llm/spec.py" in c.files, "magic/magics.py" in c.files
    (True, False, False)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

PORTABLE_PACKAGES = ("agent", "sql", "diagnose", "result_check", "schema", "fallback", "vote")
PORTABLE_MODULES = (
    "__init__.py",
    "runner.py",
    "provenance.py",
    "db/base.py",
    "db/bounded_fetch.py",
    "db/sqlite.py",
)


@dataclass
class Closure:
    files: list[str] = field(default_factory=list)
    pulled_in: list[str] = field(default_factory=list)
    lazy: dict[str, list[str]] = field(default_factory=dict)


def module_file(root: Path, dotted: str) -> str | None:
    """``cadet_magic.a.b`` -> ``a/b.py`` or ``a/b/__init__.py`` (relative to ``root``)."""
    parts = dotted.split(".")[1:]
    if parts and (root / Path(*parts)).with_suffix(".py").is_file():
        return "/".join(parts) + ".py"
    init = "/".join([*parts, "__init__.py"])
    return init if (root / init).is_file() else None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, at_import: list[str], lazy: list[str], in_function: bool) -> None:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            continue
        target = lazy if in_function else at_import
        if isinstance(node, ast.Import):
            target.extend(a.name for a in node.names if a.name.split(".")[0] == "cadet_magic")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "cadet_magic":
                target.append(node.module)
                target.extend(f"{node.module}.{a.name}" for a in node.names)  # maybe submodules
        inside = in_function or isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        )
        _imports(node, at_import, lazy, inside)


def portable_closure(root: Path) -> Closure:
    """The files under ``root`` (the cadet_magic package folder) that the core needs."""
    roots = list(PORTABLE_MODULES)
    for pkg in PORTABLE_PACKAGES:
        if (root / pkg).is_dir():
            roots += sorted(f"{pkg}/{p.name}" for p in (root / pkg).glob("*.py"))
    files: set[str] = set()
    lazy: dict[str, list[str]] = {}
    queue = list(roots)
    while queue:
        rel = queue.pop()
        if rel in files:
            continue
        files.add(rel)
        parts = rel.split("/")[:-1]
        for i in range(len(parts) + 1):  # importing a.b runs every package __init__ on the way
            init = "/".join([*parts[:i], "__init__.py"])
            if (root / init).is_file():
                queue.append(init)
        at_import: list[str] = []
        deferred: list[str] = []
        _imports(ast.parse((root / rel).read_text()), at_import, deferred, False)
        queue += [f for f in (module_file(root, d) for d in at_import) if f]
        lazy[rel] = sorted({f for f in (module_file(root, d) for d in deferred) if f})
    ordered = sorted(files)
    return Closure(
        files=ordered,
        pulled_in=[f for f in ordered if f not in roots and not f.endswith("__init__.py")],
        lazy={
            k: v for k, v in ((k, [f for f in v if f not in files]) for k, v in lazy.items()) if v
        },
    )
