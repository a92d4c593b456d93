"""One built JupyterLite site per test session (both variants, built on first use)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import need
from tests.lite.site import PYODIDE_DIST, WHEELS, build_sites


@pytest.fixture(scope="session")
def lite_build() -> str:
    """Builds build/lite and build/lite-online once; returns the build's report."""
    need(PYODIDE_DIST.exists(), "offline Pyodide missing: run bash scripts/setup_pyodide.sh")
    need(WHEELS.exists(), "browser kernel wheels missing: run bash scripts/setup_lite.sh")
    for module in ("jupyterlite_core", "jupyterlite_pyodide_kernel", "pyodide_lock"):
        need(importlib.util.find_spec(module) is not None, f"Python package {module} missing")
    report = build_sites()
    print(report)
    return report
