"""Spark for the test suite and the benchmarks: a local classic session and a Spark Connect
server on 127.0.0.1, both from the ``pyspark`` package alone (its jars) and a JDK.

Example:
    >>> from workloads.spark import spark_missing
    >>> spark_missing() is None or isinstance(spark_missing(), str)
    True
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Settings every session of ours gets: loopback only, no web UI, no progress bars.
LOCAL_CONF = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "768m",
}


def spark_missing() -> str | None:
    """Why a local Spark cannot start here (no pyspark with its Connect extras, no Java), or None."""
    for module, what in (("pyspark", "pyspark"), ("grpc", "pyspark[connect] (grpcio)")):
        if importlib.util.find_spec(module) is None:
            return f"{what} not installed (pip install 'cadet-magic[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (Debian package openjdk-17-jdk-headless)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    """The installed ``pyspark`` package folder, which is a complete Spark distribution."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise RuntimeError("pyspark is not installed")
    return Path(spec.origin).parent


@contextlib.contextmanager
def classic_session(warehouse: str | None = None) -> Iterator[Any]:
    """A classic ``local[2]`` SparkSession on 127.0.0.1 (stopped afterwards)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    workdir = Path(tempfile.mkdtemp(prefix="cadet-spark-"))
    builder = SparkSession.builder.master("local[2]").appName("cadet-tests")
    for key, value in {
        **LOCAL_CONF,
        "spark.sql.warehouse.dir": warehouse or str(workdir / "warehouse"),
        "spark.local.dir": str(workdir / "tmp"),
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def connect_server(timeout: float = 120.0) -> Iterator[str]:
    """A Spark Connect server (one JVM, ``local[2]``) on 127.0.0.1; yields ``sc://127.0.0.1:PORT``.

    Started with ``spark-submit`` from the pyspark package, stopped by its process group.
    """
    home = spark_home()
    workdir = Path(tempfile.mkdtemp(prefix="cadet-spark-connect-"))
    port = _free_port()
    conf = {
        **LOCAL_CONF,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.warehouse.dir": str(workdir / "warehouse"),
        "spark.local.dir": str(workdir / "tmp"),
        # error texts without the JVM stack trace (the message and its parameters stay)
        "spark.sql.connect.serverStacktrace.enabled": "false",
        "spark.sql.pyspark.jvmStacktrace.enabled": "false",
    }
    cmd = [
        str(home / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
    ]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    log = open(workdir / "server.log", "wb")
    proc = subprocess.Popen(
        cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                tail = (workdir / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"Spark Connect server exited ({proc.returncode}): {tail}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("Spark Connect server did not open its port in time")
            time.sleep(0.3)
        yield f"sc://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


def connect_session(url: str) -> Any:
    """A new Spark Connect client session on ``url`` (call ``.stop()`` when done).

    Built with the Connect client's own builder: pyspark's generic builder refuses a remote
    session in a process that also has a classic one (the test suite has both).
    """
    from pyspark.sql.connect.session import SparkSession

    return SparkSession.builder.remote(url).create()


def spark_ddl(ddl: str, read: str = "duckdb") -> list[str]:
    """``CREATE TABLE`` statements of ``ddl`` (any dialect sqlglot reads) as Spark parquet
    tables: columns and types only (Spark tables take no keys or constraints).

    Example:
        >>> spark_ddl("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR(10) NOT NULL)")
        ['CREATE TABLE IF NOT EXISTS t (id INT, name STRING) USING parquet']
    """
    import sqlglot
    from sqlglot import exp

    out = []
    for tree in sqlglot.parse(ddl, read=read):
        if not isinstance(tree, exp.Create) or not isinstance(tree.this, exp.Schema):
            continue
        name = tree.this.this.sql(dialect="spark")
        cols = [
            f"{c.this.sql(dialect='spark')} {c.args['kind'].sql(dialect='spark')}"
            for c in tree.this.expressions
            if isinstance(c, exp.ColumnDef) and c.args.get("kind") is not None
        ]
        out.append(f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(cols)}) USING parquet")
    return out
