"""Shared fixtures: real engines, started and stopped by the suite.

A component that is missing locally makes its tests skip with the reason; with
``CI=true`` the same absence fails them instead. The public data sets are the exception: they
are not part of the repository, so their tests skip (naming ``CADET_DATA``) when the variable is
unset and no ``../shared/data`` exists, even in CI; with the variable set, CI fails without them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tiers import UNIT

os.environ.setdefault("PLOOMBER_STATS_ENABLED", "false")
# Kernels and JupyterLab started by the tests use this interpreter's kernel spec (installed into
# the project's .venv by scripts/setup.sh), not a user-level one pointing elsewhere.
_OWN_JUPYTER = str(Path(sys.prefix) / "share" / "jupyter")
if _OWN_JUPYTER not in os.environ.get("JUPYTER_PATH", "").split(os.pathsep):
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (_OWN_JUPYTER, os.environ.get("JUPYTER_PATH")) if p
    )

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# The local model's folder as the user has it (the `llm` tests use it: REAL_LOCAL_DIR), then an
# empty one for everything else: on a machine with the local model installed, a test of "no
# model configured" (and every notebook kernel the tests start) would otherwise be answered by
# it. A test that installs into the folder makes its own.
# (This module may be imported twice, as pytest's conftest and as tests.conftest: the user's value
# is kept in the environment the first time.)
if "CADET_TESTS_USER_LOCAL_DIR" not in os.environ:
    os.environ["CADET_TESTS_USER_LOCAL_DIR"] = os.environ.get("CADET_LOCAL_DIR") or ""
    os.environ["CADET_LOCAL_DIR"] = tempfile.mkdtemp(prefix="cadet-no-local-model-")
REAL_LOCAL_DIR = os.environ["CADET_TESTS_USER_LOCAL_DIR"]

# A suite started in the background by a non-interactive shell (`bash scripts/test.sh &`, nohup)
# inherits SIGINT ignored, and Python keeps it so: the Ctrl-C tests (an interrupt sent to the
# main thread) would then wait for the query's time limit. They need Python's own handler.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def need(condition: bool, reason: str) -> None:
    """Skips the test when ``condition`` is false, or fails it under CI."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required component missing in CI: {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def real_local_folder() -> Iterator[None]:
    """``CADET_LOCAL_DIR`` as the user had it (unset: the user's cache folder) for the block."""
    saved = os.environ.get("CADET_LOCAL_DIR")
    if REAL_LOCAL_DIR:
        os.environ["CADET_LOCAL_DIR"] = REAL_LOCAL_DIR
    else:
        os.environ.pop("CADET_LOCAL_DIR", None)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("CADET_LOCAL_DIR", None)
        else:
            os.environ["CADET_LOCAL_DIR"] = saved


def installed_local_model() -> Path:
    """The local model file the user (or the tests' set-up, scripts/setup_llm.sh) installed,
    checked against the pin; skips the test without it, or fails it under CI."""
    from cadet_magic.local.model_store import checked_record, model_file

    with real_local_folder():
        path = model_file()
    record = checked_record(path)
    need(
        record is not None and record.matches(path),
        f"the local model is not installed at {path} (bash scripts/setup_llm.sh installs it)",
    )
    return path


def need_data() -> Path:
    """The public data sets' folder (``CADET_DATA``, see workloads/gold.py); skips the test when
    they are absent, or fails it under CI when the variable names them."""
    from workloads.gold import DATA, DATA_VAR, data_missing

    why = data_missing()
    if why is not None:
        if IN_CI and os.environ.get(DATA_VAR):
            pytest.fail(f"required component missing in CI: {why}")
        pytest.skip(why)
    return DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public data sets (Spider dev, BIRD mini-dev, TPC-H, TPC-DS): see :func:`need_data`."""
    return need_data()


@pytest.fixture(scope="session")
def pg_url():
    """A throwaway PostgreSQL cluster on 127.0.0.1; yields a SQLAlchemy URL (psycopg 3)."""
    from workloads.postgres import pg_bin, pg_cluster

    need(
        pg_bin() is not None, "PostgreSQL server binaries not installed (Debian package postgresql)"
    )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        need(False, "psycopg (3) not installed")
    with pg_cluster() as url:
        yield url.replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture(scope="session")
def mysql_server():
    """A throwaway MariaDB server on 127.0.0.1 for the session; yields its base URL
    ``mysql://root@127.0.0.1:PORT/`` (see workloads/mariadb.py)."""
    from workloads.mariadb import mariadb_bin

    need(
        mariadb_bin() is not None,
        "MariaDB server binaries not installed (Debian package mariadb-server)",
    )
    try:
        import pymysql  # noqa: F401
    except ImportError:
        need(False, "PyMySQL not installed")
    from workloads.mariadb import mariadb_server

    with mariadb_server() as url:
        yield url


@pytest.fixture
def mysql_url(mysql_server):
    """A fresh database on the session's MariaDB server; yields a SQLAlchemy URL
    ``mysql+pymysql://root@127.0.0.1:PORT/DB`` (the database is dropped after the test)."""
    import uuid

    import pymysql

    from workloads.mariadb import connect_args

    db = f"t_{uuid.uuid4().hex[:12]}"
    admin = pymysql.connect(**connect_args(mysql_server), autocommit=True)
    try:
        admin.cursor().execute(f"CREATE DATABASE `{db}`")
        yield mysql_server.replace("mysql://", "mysql+pymysql://", 1) + db
    finally:
        cur = admin.cursor()
        cur.execute("SET SESSION lock_wait_timeout = 30")  # a test's open transaction ...
        cur.execute(f"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '{db}'")
        for (thread,) in cur.fetchall():  # ... must not hang the clean-up
            try:
                cur.execute(f"KILL {int(thread)}")
            except pymysql.err.MySQLError:
                pass
        cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
        admin.close()


@pytest.fixture
def fake_openai():
    """The OpenAI-compatible fake server on 127.0.0.1 (tests/fake_openai.py), stopped after."""
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def openai_env(monkeypatch, fake_openai):
    """OpenAI clients pointed at the fake server: its base URL, a test key, no proxies."""
    for var in ("OPENAI_API_BASE", "LANGSMITH_GATEWAY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return fake_openai


@pytest.fixture
def sql_duckdb(ipython_shell):
    """Opens in-memory DuckDB connections in ``%sql`` (jupysql) under an alias, each with
    optional set-up SQL; ``open_(alias, setup)`` returns the shell. Closed after the test."""
    opened: list[str] = []

    def open_(alias: str, setup: str | None = None):
        ipython_shell.run_line_magic("sql", f"duckdb:// --alias {alias}")
        opened.append(alias)
        if setup:
            ipython_shell.run_cell_magic("sql", "", setup)
        return ipython_shell

    yield open_
    for alias in reversed(opened):
        ipython_shell.run_line_magic("sql", f"--close {alias}")


@pytest.fixture(scope="session")
def ipython_shell():
    """One real IPython shell for the session, with cadet_magic (and jupysql) loaded."""
    from IPython.testing.globalipapp import get_ipython, start_ipython

    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "cadet_magic")
    return shell


# --- Spark: one local classic session and one Spark Connect server per test session ---------


def _need_spark() -> None:
    from workloads.spark import spark_missing

    why = spark_missing()
    need(why is None, why or "")


@pytest.fixture(scope="session")
def spark_classic():
    """A classic ``local[2]`` SparkSession on 127.0.0.1, shared by the whole test session."""
    _need_spark()
    from workloads.spark import classic_session

    with classic_session() as spark:
        yield spark


@pytest.fixture(scope="session")
def spark_connect_url():
    """A Spark Connect server on 127.0.0.1 (pyspark's own jars), shared by the test session."""
    _need_spark()
    from workloads.spark import connect_server

    with connect_server() as url:
        yield url


@pytest.fixture(scope="session")
def spark_connect(spark_connect_url):
    """A Spark Connect client session on the shared server (stopped at the end)."""
    from workloads.spark import connect_session

    spark = connect_session(spark_connect_url)
    yield spark
    spark.stop()


@pytest.fixture(params=["classic", "connect"])
def spark(request):
    """Each Spark test once on the classic session and once on Spark Connect."""
    return request.getfixturevalue(f"spark_{request.param}")


# --- The real local model (marker ``llm``): one llama.cpp server per test session -------------


class LocalLLM:
    """The session's local model server (workloads/llm.py): its OpenAI base URL, and chat models
    on it with the sampling temperature pinned (0: the same prompt gets the same reply)."""

    #: Seconds a model call may take (the tests' ``model_timeout``, not the 120 s default): on
    #: a busy shared 2-core machine one call took over two minutes; a timeout fails the test.
    TIMEOUT = 600.0
    #: Tokens a reply may have: SQL and the fallback's pandas code fit well within; it bounds
    #: a call's time (about 20 s of generation on an idle 2-core machine).
    MAX_TOKENS = 512

    def __init__(self, base_url: str) -> None:
        from workloads.llm import MODEL_ALIAS, model_path

        self.base_url = base_url
        self.spec = f"openai:{MODEL_ALIAS}"
        self.gguf = model_path()

    def chat_model(self, temperature: float = 0.0):
        """langchain-openai's chat model on the server (what ``openai:qwen`` with
        ``base_url=`` loads), with ``temperature`` set."""
        from langchain.chat_models import init_chat_model

        return init_chat_model(
            self.spec,
            base_url=self.base_url,
            api_key="local",
            temperature=temperature,
            max_tokens=self.MAX_TOKENS,
            timeout=self.TIMEOUT,
        )


@pytest.fixture(scope="session")
def llm():
    """The real local model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF) served on 127.0.0.1 by
    llama-cpp-python for the whole session; set up by scripts/setup_llm.sh."""
    from workloads.llm import llm_server, missing

    why = missing()
    need(why is None, why or "")
    with llm_server() as url:
        yield LocalLLM(url)


# --- The unit tier (marker ``unit``; ``bash scripts/test.sh --fast``) -------------------------
# Tests that start no server, no subprocess, no browser and no model, by file or folder below
# tests/ (chosen by measured time: ``--durations``; a file with any test needing a server stays
# out). Its tripwires fail a unit test that starts a process, opens a network (or loopback)
# connection, binds a socket or loads llama.cpp, even when the code under test catches the error.
# ``--tripwires`` sets them on every test: a file whose tests all pass with them may join.
# The tier's files: tests/tiers.py (UNIT).
_ROOT = Path(__file__).resolve().parent


def pytest_addoption(parser):
    parser.addoption(
        "--tripwires",
        action="store_true",
        help="fail any test (not only the unit tier's) that starts a process, a connection or a "
        "model: a file whose tests all pass may join tests/tiers.py's UNIT",
    )


def in_unit_tier(path: Path) -> bool:
    """Whether the test file at ``path`` is in :data:`UNIT` (itself or a folder holding it)."""
    try:
        rel = path.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return False
    return any(rel == u or rel.startswith(u.rstrip("/") + "/") for u in UNIT)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if in_unit_tier(Path(item.path)):
            item.add_marker(pytest.mark.unit)


class Tripwire(BaseException):
    """What a tripped wire raises: not an ``Exception``, so the code under test cannot take it
    for a failure it handles (the test fails in any case: the trip is recorded)."""


@contextlib.contextmanager
def _tripwires(item) -> Iterator[None]:
    if item.get_closest_marker("unit") is None and not item.config.getoption("--tripwires"):
        yield
        return
    import _posixsubprocess
    import socket
    import subprocess
    import webbrowser

    tripped: list[str] = []
    # Only the test's own thread is wired: threads an earlier test left running (Spark's
    # gateway, a warm worker's reader) keep their own connections.
    test_thread = threading.get_ident()
    mp = pytest.MonkeyPatch()

    def wire(owner: object, name: str, what: str) -> None:
        original = getattr(owner, name)

        def trip(*args, **kwargs):
            if threading.get_ident() != test_thread:
                return original(*args, **kwargs)
            tripped.append(what)
            raise Tripwire(f"a unit test {what}: it belongs outside the unit tier")

        mp.setattr(owner, name, trip)

    wire(_posixsubprocess, "fork_exec", "started a process")  # multiprocessing's spawn
    wire(subprocess, "_fork_exec", "started a process")  # subprocess (asyncio's too)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            wire(os, name, "started a process")
    wire(socket.socket, "connect", "opened a connection")
    wire(socket.socket, "connect_ex", "opened a connection")
    wire(socket.socket, "bind", "bound a socket (a server)")
    wire(webbrowser, "open", "opened a browser")
    had_llama = "llama_cpp" in sys.modules
    try:
        yield
    finally:
        mp.undo()
    if not had_llama and "llama_cpp" in sys.modules:
        tripped.append("loaded llama.cpp (a model)")
    if tripped:
        pytest.fail(f"a unit test {tripped[0]} ({item.nodeid}): it belongs outside the unit tier")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with _tripwires(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with _tripwires(item):
        return (yield)


@pytest.fixture
def model_writes_select(monkeypatch):
    """The fallback's route where the model writes the simple SELECT too (the product writes it
    itself when it can link the question's tables): for tests whose scripted replies name the
    SELECT the fallback must run."""
    from cadet_magic.agent import fallback_phase

    monkeypatch.setattr(fallback_phase, "PRODUCT_SELECT", False)
