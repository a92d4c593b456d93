"""A throwaway PostgreSQL cluster on 127.0.0.1, for the benchmarks and the test suite's ``pg_url``.

Example:
    >>> from workloads.postgres import pg_bin
    >>> pg_bin() is None or pg_bin().name == "bin"
    True
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def pg_bin() -> Path | None:
    """The directory of the newest installed PostgreSQL server binaries, or None."""
    for version in ("17", "16", "15", "14", "13"):
        p = Path(f"/usr/lib/postgresql/{version}/bin")
        if (p / "initdb").exists():
            return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def pg_cluster() -> Iterator[str]:
    """Starts a cluster on 127.0.0.1 and yields a libpq URL ``postgresql://postgres@...``.

    Raises:
        RuntimeError: when no PostgreSQL server binaries are installed.
    """
    bindir = pg_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries not installed (Debian package postgresql)")
    workdir = Path(tempfile.mkdtemp(prefix="cadet-corrupt-pg-"))
    port = _free_port()
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    data = workdir / "data"
    initdb = [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
    subprocess.run([*as_postgres, *initdb, "--no-sync"], check=True, capture_output=True)
    opts = f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = [str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(workdir / "log")]
    subprocess.run([*as_postgres, *start, "-w", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        stop = [str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]
        subprocess.run([*as_postgres, *stop], capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)
