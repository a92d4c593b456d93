"""Runner for Spark SQL: a classic ``SparkSession`` (local or a cluster master) or a Spark
Connect one (``SparkSession.builder.remote("sc://...")``); pyspark is imported lazily.

Spark has no read-only transaction: ``spark.sql()`` runs DDL and DML at once. So besides the
sqlglot check (spark dialect), what runs is guarded by Spark's own parser:

1. the statement must parse, in Spark, as a query plan made only of reading nodes
   (:data:`QUERY_NODES`): classic sessions ask the session's parser for the plan
   (``sessionState().sqlParser().parsePlan``, nothing is analysed or run); Spark Connect
   sessions read the parsed plan of ``EXPLAIN EXTENDED`` of the wrapped query (2.), never of
   the bare text (analysing ``EXECUTE IMMEDIATE`` runs its statement);
2. it runs wrapped, ``SELECT * FROM (<query>) AS cadet_query``: a command, a second
   statement or a scripting block inside parentheses is a syntax error in Spark, whatever
   any check said;
3. the settings that open files, scripting or text substitution are pinned for the run
   (:data:`PINS`) on the user's session and restored exactly afterwards (a setting the user
   had not set is unset again), so ``SELECT * FROM parquet.`/path```, ``BEGIN ... END`` and
   ``${env:HOME}`` do nothing;
4. it runs under a job group (classic) or an operation tag (Connect) of its own: the time
   limit and Ctrl-C cancel exactly that work, never the user's other jobs;
5. at most ``limit`` + 1 rows reach the kernel (``DataFrame.limit``), never a full ``collect()``;
6. aggregates that collect every value of a group into one buffer (``collect_list``,
   ``percentile``, ``median`` ...: :data:`~cadet_magic.sql.functions.ENGINE_NEVER`) are
   refused in the plan as in the check: Spark bounds none of them, and in local mode (or on a
   Connect server) one large group ends the JVM that holds the user's session; so are
   ``sequence``, ``array_repeat``, ``repeat``, ``space``, ``rpad`` and ``lpad`` with a literal
   size above ``spark_plan.MAX_BUILT`` (``spark_plan.oversized_calls``); with a size computed
   from the data, all but ``sequence`` are guarded on Spark itself (``spark_plan.guarded_sql``).

The plan's checks are in :mod:`cadet_magic.db.spark_plan`, pyspark's errors read in
:mod:`cadet_magic.db.spark_errors`.

Example:
    >>> is_spark_session(object()), WRAP.format(sql="SELECT 1")
    (False, 'SELECT * FROM (\\nSELECT 1\\n) AS cadet_query')
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cadet_magic.db.base import BaseRunner, RunControl, Statement
from cadet_magic.db.function_catalogs import with_functions
from cadet_magic.db.session import DbSession, current
from cadet_magic.db.spark_errors import is_cancel, is_out_of_memory, spark_error
from cadet_magic.db.spark_plan import (
    SPARK_NEVER,
    SparkPlanRefused,
    guarded_sql,
    node_names,
    oversized_calls,
    oversized_sql,
    parsed_section,
    refused_functions,
    refused_nodes,
    view_texts,
)
from cadet_magic.errors import CadetError, EngineError
from cadet_magic.schema.samples import read_samples
from cadet_magic.schema.structure import Column, Schema, Table
from cadet_magic.sql.functions import FunctionCatalog
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.views import without_withheld

#: Session settings pinned while the agent's statement is checked and runs (restored exactly):
#: no ``format.`path``` relations, no SQL scripting, no ``${...}`` substitution, reserved
#: words stay reserved (``SELECT a FROM t WHERE`` is a syntax error, not an alias).
PINS: dict[str, str] = {
    "spark.sql.runSQLOnFiles": "false",
    "spark.sql.scripting.enabled": "false",
    "spark.sql.variable.substitute": "false",
    "spark.sql.ansi.enforceReservedKeywords": "true",
}

#: How the agent's statement is wrapped to run (a non-query inside is a Spark syntax error).
WRAP = "SELECT * FROM (\n{sql}\n) AS cadet_query"
#: Sampling a Spark table costs a job (~0.1-0.3 s), so Spark gets a larger budget.
SAMPLE_BUDGET = 2.0


class SparkSettingsError(CadetError):
    """The session does not let the agent pin a safety setting, so nothing runs."""


def is_spark_session(obj: Any) -> bool:
    """Whether ``obj`` is a classic or a Spark Connect ``SparkSession`` (pyspark not imported).

    Example:
        >>> is_spark_session(object())
        False
    """
    for module, name in (
        ("pyspark.sql.session", "SparkSession"),
        ("pyspark.sql.connect.session", "SparkSession"),
    ):
        mod = sys.modules.get(module)
        cls = getattr(mod, name, None) if mod is not None else None
        if cls is not None and isinstance(obj, cls):
            return True
    return False


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


class SparkRunner(BaseRunner):
    """Runs checked SQL on a ``SparkSession`` (classic or Spark Connect)."""

    dialect = "spark"

    def __init__(self, spark: Any, label: str = "", session: DbSession | None = None) -> None:
        self.spark = spark
        self.connect = is_connect(spark)
        self.session = session or current()
        self.label = label or ("spark (Spark Connect)" if self.connect else "spark (classic)")
        self._catalog_rows: tuple | None = None

    # -- settings ------------------------------------------------------------------------

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """:data:`PINS` set on the session for the block; the user's values restored exactly."""
        conf = self.spark.conf
        before = dict(conf.getAll)
        changed: list[str] = []
        try:
            for key, value in PINS.items():
                if before.get(key) == value:
                    continue
                try:
                    conf.set(key, value)
                except Exception as e:
                    raise SparkSettingsError(
                        f"Not run: this Spark session does not let {key} be set to {value} "
                        f"({type(e).__name__}); the agent's query cannot run safely here."
                    ) from e
                changed.append(key)
            yield
        finally:
            for key in changed:
                try:
                    if key in before:
                        conf.set(key, before[key])
                    else:
                        conf.unset(key)
                except Exception:  # noqa: BLE001 - best effort; the next one still restores
                    pass

    # -- the plan check ------------------------------------------------------------------

    def parsed_plan(self, sql: str) -> str:
        """Spark's parsed (unresolved) plan of ``sql`` (classic) or of its wrapped form
        (Connect) as text; Spark's own parse error is raised as it is (for the diagnosis)."""
        if self.connect:
            rows = self.spark.sql("EXPLAIN EXTENDED " + WRAP.format(sql=sql)).collect()
            return parsed_section(str(rows[0][0]) if rows else "")
        parser = self.spark._jsparkSession.sessionState().sqlParser()
        return str(parser.parsePlan(sql).treeString())

    def check_plan(self, sql: str) -> None:
        """Raises :class:`SparkPlanRefused` unless Spark parses ``sql`` as a reading plan that
        calls no never-allowed function (and, first, no call building one value larger than
        :data:`MAX_BUILT` on the statement's own tree: :func:`oversized_sql`)."""
        sized = oversized_sql(sql)
        if sized:
            raise SparkPlanRefused([], sized, oversized=True)
        tree = self.parsed_plan(sql)
        names = node_names(tree)
        bad = refused_nodes(names) if names else ["nothing"]
        if bad:
            raise SparkPlanRefused(bad)
        calls = refused_functions(tree)
        if calls:
            raise SparkPlanRefused([], calls)
        sized = oversized_calls(tree)
        if sized:
            raise SparkPlanRefused([], sized, oversized=True)

    # -- cancellation --------------------------------------------------------------------

    @contextmanager
    def _own_work(self) -> Iterator[Any]:
        """Marks the jobs started in the block as ours; yields a function that cancels them.

        Classic: a job group of our own (the thread's previous group and description are put
        back afterwards). Connect: an operation tag of our own on this thread.
        """
        mark = f"cadet_magic-{uuid.uuid4().hex}"
        if self.connect:
            spark = self.spark
            spark.addTag(mark)
            cancel = _OwnWork(lambda: spark.interruptTag(mark))
            try:
                yield cancel
            finally:
                cancel.ended.set()
                spark.removeTag(mark)
            return
        sc = self.spark.sparkContext
        keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
        saved = {k: sc.getLocalProperty(k) for k in keys}
        sc.setJobGroup(mark, "cadet_magic %%ask query", interruptOnCancel=True)
        cancel = _OwnWork(lambda: sc.cancelJobGroup(mark))
        try:
            yield cancel
        finally:
            cancel.ended.set()
            for k, v in saved.items():
                sc.setLocalProperty(k, v)

    # -- the run's hooks (the skeleton is BaseRunner.run) --------------------------------

    routes_ctrl_c = True

    @contextmanager
    def transaction(self, timeout: float, control: RunControl) -> Iterator[Any]:
        """Spark has no transaction: the settings are pinned and the work marked as ours for
        the run (yields the function that cancels it); pyspark's per-error log is silenced."""
        with self.pinned(), self._own_work() as cancel:
            quiet = _quiet_error_log()
            try:
                yield cancel
            finally:
                quiet()

    def execute(
        self, handle: Any, sql: str | CheckedQuery, limit: int, control: RunControl
    ) -> Statement:
        text = guarded_sql(sql)
        self.check_plan(text)
        df = self.spark.sql(WRAP.format(sql=text)).limit(limit + 1)
        columns = list(df.columns)
        it = iter([tuple(r) for r in df.collect()])
        return Statement(columns, lambda n: [r for _, r in zip(range(n), it, strict=False)])

    def cancel(self, handle: Any) -> None:
        _quietly(handle)

    def on_signal(self, handle: Any) -> None:
        # Never re-enter the client from the signal handler. A Ctrl-C while Spark still plans
        # the query finds no job to cancel yet (a fresh JVM under load plans for seconds):
        # the cancel is sent again until the run is over.
        threading.Thread(target=_cancel_until_over, args=(handle,), daemon=True).start()

    def timed_out(self, error: BaseException, control: RunControl) -> bool:
        return control.fired.is_set() and is_cancel(error)

    def out_of_memory(self, error: BaseException) -> bool:
        return is_out_of_memory(error)

    def engine_error(self, error: BaseException) -> EngineError:
        return spark_error(error)

    # -- schema --------------------------------------------------------------------------

    def _read_catalog(self) -> tuple:
        """(current catalog, database, ((table, type, temporary, comment, columns), ...))."""
        cat = self.spark.catalog
        tables = []
        for t in cat.listTables():
            try:
                cols = tuple(
                    (c.name, c.dataType, c.description or None) for c in cat.listColumns(t.name)
                )
            except Exception:  # noqa: BLE001 - dropped meanwhile or unreadable: left out
                continue
            tables.append((t.name, t.tableType, bool(t.isTemporary), t.description or None, cols))
        return (_quiet_call(cat.currentCatalog), cat.currentDatabase(), tuple(tables))

    def _fingerprint(self) -> tuple | None:
        try:
            self._catalog_rows = self._read_catalog()
        except Exception:  # noqa: BLE001 - cannot tell: read the schema again
            self._catalog_rows = None
        return self._catalog_rows

    def _read_schema(self) -> Schema:
        rows = self._catalog_rows or self._read_catalog()
        schema = spark_schema_from_rows(rows)
        views = {t[0] for t in rows[2] if t[1] in ("VIEW", "TEMPORARY")}

        def fetch(sample_sql: str) -> list:
            with self.pinned(), self._own_work() as cancel:
                timer = self.session.watchdog.schedule(SAMPLE_BUDGET + 1.0, cancel)
                try:
                    return [tuple(r) for r in self.spark.sql(sample_sql).limit(50).collect()]
                finally:
                    timer.cancel()

        persistent = [t[0] for t in rows[2] if t[1] == "VIEW"]
        with self.pinned():
            texts = view_texts(self.spark, persistent)
        schema = without_withheld(with_functions(schema, spark_functions(self.spark)), texts)
        return read_samples(schema, fetch, skip=views, time_budget=SAMPLE_BUDGET)

    def schema(self) -> Schema:
        """Tables and views of the current database (and temporary views) with their columns,
        types and comments, samples of low-cardinality text columns of tables and the function
        catalog; cached until a table, view, column or comment changes."""
        return self.session.schema_cache.get(self.spark, self._fingerprint, self._read_schema)


def spark_schema_from_rows(rows: tuple) -> Schema:
    """The schema from :meth:`SparkRunner._read_catalog` rows.

    Example:
        >>> s = spark_schema_from_rows(("spark_catalog", "default",
        ...     (("t", "MANAGED", False, "things", (("id", "bigint", "key"),)),)))
        >>> c = s.table("t").columns[0]
        >>> s.table("t").comment, c.name, c.type, c.comment, c.samples
        ('things', 'id', 'bigint', 'key', ())
    """
    _, database, tables = rows
    return Schema(
        tables=tuple(
            Table(
                name=name,
                columns=tuple(Column(c, typ or "", False, cc) for c, typ, cc in cols),
                comment=comment,
                schema=None if temporary else database,
            )
            for name, _type, temporary, comment, cols in tables
        ),
        dialect="spark",
    )


def spark_functions(spark: Any) -> FunctionCatalog | None:
    """Spark's built-in functions (``SHOW SYSTEM FUNCTIONS``) minus :data:`SPARK_NEVER` and the
    fixed never-list; functions the user registered (UDFs, arbitrary code) are known, not
    allowed."""
    try:
        system = {r[0] for r in spark.sql("SHOW SYSTEM FUNCTIONS").collect()}
        user = {r[0] for r in spark.sql("SHOW USER FUNCTIONS").collect()}
    except Exception:  # noqa: BLE001 - the fixed rules still apply
        return None
    names = {n.split(".")[-1].lower() for n in system | user}
    own = {n.split(".")[-1].lower() for n in user}
    safe = {n.lower() for n in system} - own - SPARK_NEVER
    return FunctionCatalog.build("spark", safe, names, own)


def _quiet_call(f: Any) -> Any:
    try:
        return f()
    except Exception:  # noqa: BLE001 - optional information
        return None


class _OwnWork:
    """Cancels the run's own work (a job group or an operation tag); ``ended`` is set when the
    run is over."""

    def __init__(self, cancel: Any) -> None:
        self.cancel = cancel
        self.ended = threading.Event()

    def __call__(self) -> None:
        self.cancel()


def _cancel_until_over(handle: Any, every: float = 0.5) -> None:
    """Cancels the run's work now and every ``every`` seconds until the run is over."""
    ended = getattr(handle, "ended", None)
    while True:
        _quietly(handle)
        if ended is None or ended.wait(every):
            return


def _quietly(cancel: Any) -> None:
    try:
        cancel()
    except Exception:  # noqa: BLE001 - nothing left to cancel, or the session is gone
        pass


def _quiet_error_log() -> Any:
    """Silences pyspark's ``SQLQueryContextLogger`` (it prints every failed query's error as
    JSON; the diagnosis reports it instead) until the returned undo is called."""
    try:  # pyspark's own logger class: a plain Logger of that name would break its calls
        from pyspark.logger import PySparkLogger

        logger = PySparkLogger.getLogger("SQLQueryContextLogger")
    except Exception:  # noqa: BLE001 - an older pyspark without it: nothing to silence
        return lambda: None
    disabled = logger.disabled
    logger.disabled = True
    return lambda: setattr(logger, "disabled", disabled)
