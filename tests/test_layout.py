"""The repository's layering: tests of the package never import the benchmark programs.

Only ``tests/benchmarks`` checks the benchmark programs themselves. What tests and benchmarks
share (datasets, a throwaway PostgreSQL cluster) lives in ``workloads/``, which does not import
cadet_magic.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_no_test_of_the_package_imports_the_benchmarks() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if "benchmarks" not in path.relative_to(ROOT / "tests").parts[:1]
        and "benchmarks" in _imports(path)
    ]
    assert offenders == []


def test_workloads_stand_alone() -> None:
    for path in (ROOT / "workloads").glob("*.py"):
        assert not _imports(path) & {"cadet_magic", "benchmarks", "tests"}, path


def test_public_data_sets_only_through_cadet_data() -> None:
    """Tests and benchmarks find the public data sets through workloads.gold (CADET_DATA),
    never by a path of their own beside the repository."""
    offenders = []
    for folder in ("tests", "benchmarks", "workloads"):
        for path in (ROOT / folder).rglob("*.py"):
            if path in (ROOT / "workloads" / "gold.py", Path(__file__).resolve()):
                continue
            text = path.read_text()
            if any(f"{q}shared{end}" in text for q in "'\"" for end in (q, "/")):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
