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
   size above :data:`MAX_BUILT` (:func:`oversized_calls`); with a size computed from the data,
   all but ``sequence`` are guarded on Spark itself (:func:`guarded_sql`).

Example:
    >>> node_names("'Sort ['id ASC NULLS FIRST], true\\n+- 'Project [*]\\n   +- 'UnresolvedRelation [t], [], false")
    ['Sort', 'Project', 'UnresolvedRelation']
    >>> refused_nodes(["Project", "InsertIntoStatement"])
    ['InsertIntoStatement']
"""

from __future__ import annotations

import re
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cadet_magic.db.base import BaseRunner, RunControl, Statement, read_exception
from cadet_magic.db.functions import with_functions
from cadet_magic.db.session import DbSession, current
from cadet_magic.errors import CadetError, EngineError, exception_chain
from cadet_magic.schema.model import Column, Schema, Table
from cadet_magic.schema.samples import read_samples
from cadet_magic.sql.checks.context import Issue
from cadet_magic.sql.checks.function_calls import forbidden_function
from cadet_magic.sql.functions import ENGINE_NEVER, FunctionCatalog, never_reason
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.refusal import SafetyRefusal

#: Session settings pinned while the agent's statement is checked and runs (restored exactly):
#: no ``format.`path``` relations, no SQL scripting, no ``${...}`` substitution, reserved
#: words stay reserved (``SELECT a FROM t WHERE`` is a syntax error, not an alias).
PINS: dict[str, str] = {
    "spark.sql.runSQLOnFiles": "false",
    "spark.sql.scripting.enabled": "false",
    "spark.sql.variable.substitute": "false",
    "spark.sql.ansi.enforceReservedKeywords": "true",
}

#: Nodes of a parsed (unresolved) Spark plan that only read: a plan containing any other
#: node (a command, a write, DDL, CACHE, SET, a script transformation, scripting) never runs.
QUERY_NODES: frozenset[str] = frozenset(
    """Project Filter Aggregate Sort GlobalLimit LocalLimit Offset Tail Distinct Deduplicate
    Union Intersect Except Join LateralJoin SubqueryAlias UnresolvedRelation
    UnresolvedInlineTable LocalRelation OneRowRelation UnresolvedWith CTE WithCTE
    CTERelationDef CTERelationRef Window WithWindowDefinition Generate
    UnresolvedTableValuedFunction UnresolvedTVFAliases Pivot Unpivot Expand Sample
    UnresolvedHint UnresolvedHaving UnresolvedSubqueryColumnAliases Range PipeOperator
    RepartitionByExpression Repartition RebalancePartitions View Transpose
    UnresolvedStarExcept""".split()
)
#: How the agent's statement is wrapped to run (a non-query inside is a Spark syntax error).
WRAP = "SELECT * FROM (\n{sql}\n) AS cadet_query"
#: Functions a Spark session never lets the agent call, whatever its catalog says: Java
#: reflection, file readers and the name of the file a row came from, XML parsers (external
#: entities), and the session's identity.
SPARK_NEVER: frozenset[str] = frozenset(
    """reflect java_method try_reflect read_files input_file_name input_file_block_start
    input_file_block_length xpath xpath_boolean xpath_double xpath_float xpath_int
    xpath_long xpath_number xpath_short xpath_string""".split()
)
#: Sampling a Spark table costs a job (~0.1-0.3 s), so Spark gets a larger budget.
SAMPLE_BUDGET = 2.0

_NODE = re.compile(r"^[\s:|+\-]*'?([A-Za-z_$][\w$]*)")
#: Function calls in an unresolved plan's text: ``'reflect(...)``, ``'UnresolvedTableValuedFunction
#: [read_files], ...``.
_CALL = re.compile(
    r"'(?:`?[\w$]+`?\.)*`?([A-Za-z_][\w$]*)`?\(|UnresolvedTableValuedFunction \[(?:[^\]]*, )?([\w$]+)\]"
)


class SparkPlanRefused(SafetyRefusal):
    """Spark's own parse of the statement is not a read-only query, or calls a function that is
    never allowed; it did not run (diagnosed like the safety check's refusals)."""

    def __init__(
        self, nodes: list[str], functions: list[str] | None = None, oversized: bool = False
    ) -> None:
        self.nodes = nodes
        self.functions = functions or []
        if oversized:
            shown = ", ".join(f + "()" for f in self.functions)
            issue = Issue(
                "forbidden_function",
                f"Not run: {shown} with a size above {MAX_BUILT:,} builds one value that can "
                "fill the Spark JVM's memory; use range() as a table for many rows, or a "
                "smaller size.",
            )
        elif nodes:
            issue = Issue(
                "forbidden_statement",
                f"Not run: Spark reads this as {', '.join(nodes)}, not a read-only query. "
                "Write one query: SELECT ..., WITH ... SELECT ..., or VALUES ....",
            )
        elif all(f in ENGINE_NEVER["spark"] for f in self.functions):
            shown = ", ".join(f + "()" for f in self.functions)
            what, instead = ENGINE_NEVER["spark"][self.functions[0]]
            issue = Issue("forbidden_function", f"Not run: {shown} {what}; {instead} instead.")
        else:
            shown = ", ".join(f + "()" for f in self.functions)
            issue = Issue(
                "forbidden_function",
                f"Not run: {shown} calls Java code or reads files, which is not allowed; "
                "query the tables with ordinary functions instead.",
            )
        super().__init__([issue])


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


def node_names(tree: str) -> list[str]:
    """The node names of a plan's ``treeString`` (one per line, in order)."""
    names = []
    for line in tree.splitlines():
        m = _NODE.match(line)
        if m:
            names.append(m.group(1))
    return names


def refused_nodes(names: list[str]) -> list[str]:
    """The names of ``names`` that are not reading nodes (:data:`QUERY_NODES`), once each."""
    out: list[str] = []
    for n in names:
        if n not in QUERY_NODES and n not in out:
            out.append(n)
    return out


def refused_functions(tree: str) -> list[str]:
    """Functions called in a parsed plan's text that are never allowed (:data:`SPARK_NEVER`,
    the fixed rules), once each in order.

    Example:
        >>> refused_functions("'Project [unresolvedalias('reflect(java.lang.System, getenv, HOME))]")
        ['reflect']
        >>> refused_functions("'UnresolvedTableValuedFunction [read_files], [/etc/hostname], false")
        ['read_files']
        >>> refused_functions("'Project ['upper('name)]")
        []
    """
    out: list[str] = []
    for m in _CALL.finditer(tree):
        name = (m.group(1) or m.group(2) or "").lower()
        if name and name not in out:
            if name in SPARK_NEVER or never_reason(name, "spark") or forbidden_function({name}):
                out.append(name)
    return out


#: Functions whose numeric argument is the size of the one value they build (elements or
#: characters), and the largest such literal allowed: beyond it one value fills a JVM's heap.
SIZED_FUNCTIONS = frozenset({"sequence", "array_repeat", "repeat", "space", "rpad", "lpad"})
MAX_BUILT = 10**7
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)")


def oversized_calls(tree: str) -> list[str]:
    """Calls in a parsed plan's text of :data:`SIZED_FUNCTIONS` with a numeric literal above
    :data:`MAX_BUILT` among their arguments (a size the function would build one value of).

    Example:
        >>> oversized_calls("'Project [unresolvedalias('size('sequence(1, 1000000000)))]")
        ['sequence']
        >>> oversized_calls("'Project [unresolvedalias('sequence(1, 1.0E9))]")
        ['sequence']
        >>> oversized_calls("'Project ['lpad('name, 5, 0), 'sequence(1, 100)]")
        []
    """
    out: list[str] = []
    for m in re.finditer(r"'(?:`?[\w$]+`?\.)*`?([A-Za-z_][\w$]*)`?\(", tree):
        name = m.group(1).lower()
        if name not in SIZED_FUNCTIONS or name in out:
            continue
        depth, i = 1, m.end()
        while i < len(tree) and depth:
            depth += {"(": 1, ")": -1}.get(tree[i], 0)
            i += 1
        args = tree[m.end() : i - 1]
        if any(float(n) > MAX_BUILT for n in _NUMBER.findall(args)):
            out.append(name)
    return out


def oversized_sql(sql: str) -> list[str]:
    """:func:`oversized_calls` on the statement's sqlglot tree (spark dialect), before Spark
    sees it: on Spark Connect even ``EXPLAIN`` folds constants, so ``size(sequence(1, 1e9))``
    would fill the server's heap while being explained.

    Example:
        >>> oversized_sql("SELECT size(sequence(1, 1e9)) AS n"), oversized_sql("SELECT space(3)")
        (['sequence'], [])
    """
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except Exception:  # noqa: BLE001 - Spark's own plan is checked next
        return []
    out: list[str] = []
    for node in tree.find_all(exp.Func):
        name = node.sql("spark").split("(", 1)[0].strip().lower()
        if name not in SIZED_FUNCTIONS or name in out:
            continue
        numbers = [lit.this for lit in node.find_all(exp.Literal) if lit.is_number]
        try:
            if any(float(n) > MAX_BUILT for n in numbers):
                out.append(name)
        except ValueError:
            continue
    return out


#: What Spark raises when a guarded call would build a value beyond :data:`MAX_BUILT`.
GUARD_MESSAGE = (
    "cadet_magic: a value of more than 10000000 characters or elements would be built from the "
    "data; build smaller values or select the rows themselves"
)


def guarded_sql(sql: str) -> str:
    """The text to run, with every call of ``repeat``, ``space``, ``lpad``/``rpad`` and
    ``array_repeat`` whose size comes from the data (not a literal) guarded on Spark itself:
    the size becomes ``CASE WHEN <size> <= MAX_BUILT THEN <size> ELSE raise_error(...) END``
    (for ``repeat``, the size times the repeated text's length), so a row that would build one
    value beyond :data:`MAX_BUILT` fails the statement before the value is built (Spark
    evaluates a CASE branch only for the rows that take it). A text without its checked tree
    (not a :class:`~cadet_magic.sql.query.CheckedQuery`) runs as it is.

    Example:
        >>> from cadet_magic.sql.validate import validate_sql
        >>> q = validate_sql("SELECT repeat(s, n) AS r, lpad(s, 3, '0') AS p FROM t", "spark").query
        >>> print(guarded_sql(q).split(" ELSE ")[0])
        SELECT REPEAT(s, CASE WHEN n * LENGTH(s) <= 10000000 THEN n
        >>> guarded_sql("SELECT repeat(s, n) FROM t")
        'SELECT repeat(s, n) FROM t'
    """
    from sqlglot import exp

    tree = getattr(sql, "tree", None)
    if tree is None:
        return str(sql)
    copy = tree.copy()
    changed = False
    for node in list(copy.find_all(exp.Repeat, exp.Space, exp.Pad, exp.Anonymous)):
        size, weight = _size_of(node)
        if size is None or (isinstance(size, exp.Literal) and weight is None):
            continue  # a literal size alone: oversized_sql refuses it beyond MAX_BUILT
        bound = exp.Mul(this=size.copy(), expression=weight) if weight else size.copy()
        guard = exp.Case(
            ifs=[
                exp.If(
                    this=exp.LTE(this=bound, expression=exp.Literal.number(MAX_BUILT)),
                    true=size.copy(),
                )
            ],
            default=exp.Anonymous(
                this="raise_error", expressions=[exp.Literal.string(GUARD_MESSAGE)]
            ),
        )
        size.replace(guard)
        changed = True
    if not changed:
        return str(sql)
    from cadet_magic.sql.dialect import quiet_sqlglot

    with quiet_sqlglot():
        return copy.sql(dialect="spark")


def _size_of(node: Any) -> tuple[Any, Any]:
    """``(size argument, what it multiplies or None)`` of a sized call, else ``(None, None)``."""
    from sqlglot import exp

    if isinstance(node, exp.Repeat):
        text = node.this
        weight = (
            None
            if isinstance(text, exp.Literal) and text.is_string and len(text.name) <= 1
            else exp.Length(this=text.copy())
        )
        return node.args.get("times"), weight
    if isinstance(node, exp.Space):
        return node.this, None
    if isinstance(node, exp.Pad):
        return node.expression, None
    if isinstance(node, exp.Anonymous) and node.name.lower() == "array_repeat":
        args = node.expressions
        return (args[1], None) if len(args) == 2 else (None, None)
    return None, None


def _parsed_section(explain: str) -> str:
    """The ``== Parsed Logical Plan ==`` section of ``EXPLAIN EXTENDED`` output."""
    text = explain.split("== Parsed Logical Plan ==", 1)[-1]
    return text.split("== Analyzed Logical Plan ==", 1)[0]


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
            return _parsed_section(str(rows[0][0]) if rows else "")
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
            try:
                yield lambda: spark.interruptTag(mark)
            finally:
                spark.removeTag(mark)
            return
        sc = self.spark.sparkContext
        keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
        saved = {k: sc.getLocalProperty(k) for k in keys}
        sc.setJobGroup(mark, "cadet_magic %%ask query", interruptOnCancel=True)
        try:
            yield lambda: sc.cancelJobGroup(mark)
        finally:
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
        # never re-enter the client from the signal handler
        threading.Thread(target=_quietly, args=(handle,), daemon=True).start()

    def timed_out(self, error: BaseException, control: RunControl) -> bool:
        return control.fired.is_set() and _is_cancel(error)

    def out_of_memory(self, error: BaseException) -> bool:
        return _is_out_of_memory(error)

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

        schema = read_samples(schema, fetch, skip=views, time_budget=SAMPLE_BUDGET)
        return with_functions(schema, spark_functions(self.spark))

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
    safe = {n.lower() for n in system} - {n.split(".")[-1].lower() for n in user} - SPARK_NEVER
    return FunctionCatalog.build("spark", safe, names)


def _quiet_call(f: Any) -> Any:
    try:
        return f()
    except Exception:  # noqa: BLE001 - optional information
        return None


def _quietly(cancel: Any) -> None:
    try:
        cancel()
    except Exception:  # noqa: BLE001 - nothing left to cancel, or the session is gone
        pass


def _condition(e: BaseException) -> str:
    get = getattr(e, "getCondition", None) or getattr(e, "getErrorClass", None)
    try:
        return str(get() or "") if get else ""
    except Exception:  # noqa: BLE001
        return ""


def _is_cancel(e: BaseException) -> bool:
    text = f"{_condition(e)} {e}"
    return "OPERATION_CANCELED" in text or "cancelled" in text.lower() or "canceled" in text


def _is_out_of_memory(e: BaseException) -> bool:
    return isinstance(e, MemoryError) or "OutOfMemoryError" in str(e)[:2000]


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


_SPARK_NAMES = re.compile(r"`((?:[^`]|``)*)`((?:\.`(?:[^`]|``)*`)*)")
_SPARK_TAIL = re.compile(r"\s*SQLSTATE: \w+.*$")
_SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")


def spark_names(text: str) -> str:
    r"""Spark's backquoted names as double-quoted dotted ones (``\`t\`.\`x\``` -> ``"t.x"``),
    so the diagnosis reads them like other engines' names.

    Example:
        >>> spark_names("A column `o`.`amout` cannot be resolved.")
        'A column "o.amout" cannot be resolved.'
    """

    def dotted(m: re.Match) -> str:
        parts = [m.group(1)] + re.findall(r"\.`((?:[^`]|``)*)`", m.group(2))
        return '"' + ".".join(p.replace("``", "`") for p in parts) + '"'

    return _SPARK_NAMES.sub(dotted, text)


def _spark_call(e: BaseException, method: str) -> object:
    """pyspark's error API (``getCondition``, ``getSqlState`` ...), or None for other errors."""
    f = getattr(e, method, None)
    if not callable(f) or not type(e).__module__.startswith("pyspark"):
        return None
    try:
        return f()
    except Exception:  # noqa: BLE001 - an error without that information
        return None


def spark_plain(message: str, condition: str) -> str:
    """Spark's message as the diagnosis reads it: the first line without its ``[CONDITION]``
    prefix and ``SQLSTATE`` tail, names double-quoted.

    Example:
        >>> spark_plain("[UNRESOLVED_COLUMN] A column `amout` cannot be resolved. "
        ...             "SQLSTATE: 42703; line 1 pos 7;", "UNRESOLVED_COLUMN")
        'A column "amout" cannot be resolved.'
    """
    first, sep, rest = message.strip().partition("\n")
    first = first.strip()
    if first.startswith("[" + condition + "]"):
        first = first[len(condition) + 2 :].strip()
    return spark_names(_SPARK_TAIL.sub("", first).strip() + sep + rest)


def spark_error(error: BaseException) -> EngineError:
    """A pyspark error (classic or Spark Connect) as an :class:`EngineError`: its error
    condition (the code, its head one of the kinds), SQLSTATE, message parameters (``details``)
    and its message as the diagnosis reads it (:func:`spark_plain`)."""
    kinds: list[str] = []
    condition = ""
    sqlstate = None
    details: dict[str, Any] = {}
    plain = None
    for e in exception_chain(error):
        kinds.append(type(e).__name__)
        found = _spark_call(e, "getCondition") or _spark_call(e, "getErrorClass")
        if isinstance(found, str) and found and not condition:
            condition = found
            kinds.append(condition.split(".")[0])
            details = {"condition": condition}
            details["parameters"] = _spark_call(e, "getMessageParameters") or {}
            state = _spark_call(e, "getSqlState")
            if isinstance(state, str) and _SQLSTATE.match(state):
                sqlstate = state
            msg = _spark_call(e, "getMessage")
            if isinstance(msg, str) and msg.strip():
                plain = msg
    if not condition:
        return read_exception(error)
    base = read_exception(error)
    return EngineError(
        base.message,
        plain=spark_plain(plain if plain is not None else base.text, condition),
        sqlstate=sqlstate,
        code=condition,
        kinds=tuple(kinds),
        details=details,
    )
