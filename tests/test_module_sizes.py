"""The package stays readable: no module of cadet_magic/ above :data:`MAX_LINES` lines, and no
function above complexity 15 (ruff's C901, configured in pyproject.toml).

A module that grows past the limit is split along its seams (one module per job, named after
it, sqlglot optimizer style), the old names re-exported where callers import them. A module
that must stay long goes into :data:`ALLOWED` with the reason; the list is meant to stay empty.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import cadet_magic
from tests.conftest import need

PACKAGE = Path(cadet_magic.__file__).parent
REPO = PACKAGE.parent
#: Lines a module of the package may have at most.
MAX_LINES = 400
#: The most complex a function may be (ruff's mccabe ``max-complexity``).
MAX_COMPLEXITY = 15
#: Modules (paths under cadet_magic/) allowed above MAX_LINES, each with its reason.
ALLOWED: dict[str, str] = {}


def lines(path: Path) -> int:
    """Lines of a file, as ``wc -l`` counts them for a file ending in a newline."""
    return len(path.read_text(encoding="utf-8").splitlines())


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
