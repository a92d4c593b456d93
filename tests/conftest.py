"""Shared fixtures: real engines, started and stopped by the suite.

A component that is missing locally makes its tests skip with the reason; with
``CI=true`` the same absence fails them instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("PLOOMBER_STATS_ENABLED", "false")

SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = SHARED / "data"
CORPUS = SHARED / "corpus"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(condition: bool, reason: str) -> None:
    """Skips the test when ``condition`` is false, or fails it under CI."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required component missing in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    need(DATA.is_dir(), f"shared data not found at {DATA}")
    return DATA


@pytest.fixture(scope="session")
def shared_corpus() -> Path:
    need(CORPUS.is_dir(), f"shared corpus not found at {CORPUS}")
    return CORPUS


def _pg_bin() -> Path | None:
    for version in ("17", "16", "15", "14", "13"):
        p = Path(f"/usr/lib/postgresql/{version}/bin")
        if (p / "initdb").exists():
            return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def pg_url():
    """A throwaway PostgreSQL cluster on 127.0.0.1; yields a SQLAlchemy URL (psycopg 3)."""
    bindir = _pg_bin()
    need(bindir is not None, "PostgreSQL server binaries not installed (Debian package postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        need(False, "psycopg (3) not installed")
    workdir = Path(tempfile.mkdtemp(prefix="cadet-pg-"))
    port = _free_port()
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    data = workdir / "data"
    subprocess.run(
        [
            *as_postgres,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
    )
    opts = f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [
            *as_postgres,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            opts,
            "-l",
            str(workdir / "log"),
            "-w",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_postgres, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
            capture_output=True,
        )
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def ipython_shell():
    """One real IPython shell for the session, with cadet_magic (and jupysql) loaded."""
    from IPython.testing.globalipapp import get_ipython, start_ipython

    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "cadet_magic")
    return shell
