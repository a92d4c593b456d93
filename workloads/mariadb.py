"""A throwaway MariaDB server on 127.0.0.1, for the benchmarks and the test suite's ``mysql_url``.

The data directory lives in a temporary folder and goes with the server; root has no password
and is reachable over TCP on 127.0.0.1 only (a free port), so nothing else on the machine is
touched.

Example:
    >>> from workloads.mariadb import mariadb_bin
    >>> mariadb_bin() is None or mariadb_bin().name == "mariadbd"
    True
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from workloads.postgres import _free_port


def mariadb_bin() -> Path | None:
    """The MariaDB server binary (Debian package ``mariadb-server``), or None."""
    for name in ("mariadbd", "mysqld"):
        found = shutil.which(name) or (
            f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None
        )
        if found:
            return Path(found)
    return None


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM when the process that started it dies (no orphans)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: stopped by the context manager only
        pass


def _install_db() -> str | None:
    return shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")


@contextlib.contextmanager
def mariadb_server(timeout: float = 60.0) -> Iterator[str]:
    """Starts a server on 127.0.0.1 and yields a URL ``mysql://root@127.0.0.1:PORT/``.

    Raises:
        RuntimeError: when the MariaDB binaries are missing or the server does not start.
    """
    binary, install = mariadb_bin(), _install_db()
    if binary is None or install is None:
        raise RuntimeError("MariaDB server binaries not installed (Debian package mariadb-server)")
    workdir = Path(tempfile.mkdtemp(prefix="cadet-mariadb-"))
    data = workdir / "data"
    user = ["--user=root"] if os.geteuid() == 0 else []
    subprocess.run(
        [
            install,
            "--no-defaults",
            f"--datadir={data}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            *user,
        ],
        check=True,
        capture_output=True,
    )
    port = _free_port()
    log = workdir / "err.log"
    proc = subprocess.Popen(
        [
            str(binary),
            "--no-defaults",
            f"--datadir={data}",
            f"--socket={workdir / 'sock'}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={workdir / 'pid'}",
            f"--log-error={log}",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=64M",
            "--innodb-flush-log-at-trx-commit=0",
            "--skip-name-resolve",
            *user,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C sent to the tests is not the server's
        preexec_fn=_die_with_parent,
    )
    try:
        _wait_ready(port, proc, log, timeout)
        yield f"mysql://root@127.0.0.1:{port}/"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_ready(port: int, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    import pymysql

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise RuntimeError(f"MariaDB did not start: {tail}")
        try:
            pymysql.connect(
                host="127.0.0.1", port=port, user="root", connect_timeout=2, ssl_disabled=True
            ).close()
            return
        except pymysql.err.OperationalError:
            if time.monotonic() > deadline:
                raise RuntimeError("MariaDB did not accept connections in time") from None
            time.sleep(0.2)


def connect_args(url: str) -> dict:
    """PyMySQL's keyword arguments for a ``mysql://user@host:port/db`` URL of this module.

    Example:
        >>> connect_args("mysql://root@127.0.0.1:3307/shop")
        {'host': '127.0.0.1', 'port': 3307, 'user': 'root', 'ssl_disabled': True, 'database': 'shop'}
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    # ssl_disabled: the throwaway server has no certificate, and PyMySQL would otherwise build
    # a TLS context on every connect (~150 ms) only to fall back to plain TCP.
    args: dict = {
        "host": parts.hostname,
        "port": parts.port or 3306,
        "user": parts.username,
        "ssl_disabled": True,
    }
    if parts.path.strip("/"):
        args["database"] = parts.path.strip("/")
    return args


def create_database(url: str, database: str, statements: Iterable[str]) -> str:
    """Creates ``database`` on the server at ``url`` (dropped first if it exists) by running
    ``statements`` (a length-less ``VARCHAR`` becomes ``VARCHAR(255)``, which MariaDB needs);
    returns its SQLAlchemy URL ``mysql+pymysql://...``."""
    import pymysql

    con = pymysql.connect(**connect_args(url), autocommit=True)
    try:
        with con.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
            cur.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
            cur.execute(f"USE `{database}`")
            for statement in statements:
                cur.execute(re.sub(r"\bVARCHAR\b(?!\s*\()", "VARCHAR(255)", statement))
    finally:
        con.close()
    return url.rstrip("/").replace("mysql://", "mysql+pymysql://", 1) + f"/{database}"


#: BIRD mini-dev's column types as MariaDB types.
BIRD_TYPES = {"integer": "BIGINT", "real": "DOUBLE", "text": "TEXT", "date": "DATE",
              "datetime": "DATETIME"}  # fmt: skip


def bird_ddl(bird_dir: Path) -> dict[str, list[str]]:
    """``CREATE TABLE`` statements (empty tables) per BIRD mini-dev database, from its
    ``dev_tables.json`` (BIRD ships no rows).

    Example:
        >>> from workloads.gold import DATA
        >>> bird = DATA / "bird-minidev"
        >>> ddl = bird_ddl(bird) if bird.exists() else {}
        >>> not ddl or ddl["financial"][0].startswith("CREATE TABLE `account`")
        True
    """
    import json

    out: dict[str, list[str]] = {}
    for spec in json.loads((bird_dir / "dev_tables.json").read_text()):
        columns: list[list[str]] = [[] for _ in spec["table_names_original"]]
        for (i, col), typ in zip(spec["column_names_original"], spec["column_types"], strict=True):
            if i >= 0:
                name = col.replace("`", "``")
                columns[i].append(f"`{name}` {BIRD_TYPES.get(typ.lower(), 'TEXT')}")
        out[spec["db_id"]] = [
            f"CREATE TABLE `{t.replace('`', '``')}` ({', '.join(cols)})"
            for t, cols in zip(spec["table_names_original"], columns, strict=True)
        ]
    return out
