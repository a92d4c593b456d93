"""DuckDB's ``memory_limit`` lowered for one run and put back (edge: imports no duckdb).

``memory_limit`` is one setting of the whole database instance and bounds what DuckDB's
buffer manager holds: the state an operator builds across rows (hash tables of aggregates
and joins, sorts, windows, DISTINCT, materialised CTEs). For a run it is lowered to what the
instance uses now plus the run's heap budget, never above the user's own limit, and put back
exactly afterwards. It does not count values built inside one row (``repeat('x', 10^9)``,
``range(0, 10^8)``): those are the kernel data limit's job (:mod:`cadet_magic.db.oslimit`).

A query that builds no state across rows (one SELECT over plain tables: no join, grouping,
aggregate, sort, window, DISTINCT, subquery, CTE or sample) gains nothing from the lowered
limit, so :func:`holds_state` lets the runner skip its three statements (about 1.6 ms on a
quiet machine, a third of a small run). The check's tree does not say which names are views:
a view's own joins or aggregates then run without the lowered limit, bounded on Linux by the
kernel's data limit (the buffer manager's memory is the process's), elsewhere by DuckDB's own.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from cadet_magic.sql.query import CheckedQuery

#: The instance's memory limit as shown, and what its buffer manager holds now (bytes).
MEMORY_SQL = (
    "SELECT current_setting('memory_limit'), "
    "(SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory())"
)

_UNITS = {"": 1, "B": 1, "BYTES": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS.update({"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40})

#: Nodes whose operator keeps state across rows in DuckDB's buffer manager (or may: a
#: subquery or CTE can hold any of them).
_STATEFUL = (
    exp.Join,
    exp.Group,
    exp.Order,
    exp.Window,
    exp.AggFunc,
    exp.Distinct,
    exp.With,
    exp.Subquery,
    exp.TableSample,
    exp.Pivot,
    exp.Unnest,
    exp.Lateral,
    # A function sqlglot does not know may be one of DuckDB's aggregates (``histogram``,
    # ``bitstring_agg``): treated as keeping state.
    exp.Anonymous,
)


def size_bytes(text: str) -> int | None:
    """Bytes of a DuckDB size setting as ``current_setting`` shows it, or None.

    Example:
        >>> size_bytes("18.8 GiB"), size_bytes("512.0 MiB"), size_bytes("1000B"), size_bytes("x")
        (20186346291, 536870912, 1000, None)
    """
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        return None
    try:
        return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    except ValueError:
        return None


def holds_state(sql: str | CheckedQuery) -> bool:
    """Whether the query may build state across rows in DuckDB's buffer manager, read on the
    check's tree (True when unsure: plain text, which would need a parse of its own, or anything
    but one SELECT over plain tables).

    Example:
        >>> from cadet_magic.sql.validate import validate_sql
        >>> def checked(sql):
        ...     return validate_sql(sql, "duckdb").query
        >>> holds_state(checked("SELECT id, upper(label) FROM big WHERE amount > 3 LIMIT 10"))
        False
        >>> holds_state("SELECT id FROM big")  # text the check did not make
        True
        >>> [holds_state(checked(q)) for q in (
        ...     "SELECT a FROM t ORDER BY a", "SELECT count(*) FROM t", "SELECT DISTINCT a FROM t",
        ...     "SELECT a FROM t JOIN u USING (k)", "SELECT a FROM t, u", "SELECT * FROM range(10)",
        ...     "SELECT a FROM t WHERE a IN (SELECT b FROM u)", "SELECT sum(a) OVER () FROM t",
        ...     "WITH x AS (SELECT 1) SELECT * FROM x", "SELECT a FROM t UNION SELECT a FROM u",
        ...     "SELECT a FROM t USING SAMPLE 10", "SELECT histogram(a) FROM t")]
        [True, True, True, True, True, True, True, True, True, True, True, True]
    """
    if not isinstance(sql, CheckedQuery):
        return True
    tree = sql.tree
    if not isinstance(tree, exp.Select):
        return True
    if any(True for _ in tree.find_all(*_STATEFUL)):
        return True
    if tree.args.get("having") is not None or tree.args.get("qualify") is not None:
        return True
    if sum(1 for _ in tree.find_all(exp.Select)) != 1:
        return True
    # Only plain tables as sources: a table function (``range``, ``read_csv``) may build its
    # rows in memory.
    return any(not isinstance(t.this, exp.Identifier) for t in tree.find_all(exp.Table))


class MemoryLimit:
    """The ``memory_limit`` of the instance behind ``connection``, lowered for a run
    (:meth:`lower`) and put back (:meth:`restore`), each on a sibling cursor."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self._default: str | None = None  # DuckDB's default memory_limit, as shown

    def lower(self, heap_budget: int) -> str | None:
        """Lowers the limit to what the instance uses now + ``heap_budget`` bytes; returns the
        value to put back (None when it was left alone: the user's own limit is lower)."""
        cur = self.connection.cursor()
        try:
            before, used = cur.execute(MEMORY_SQL).fetchone()
            wanted = int(used) + heap_budget
            now = size_bytes(str(before))
            if now is not None and wanted >= now:
                return None
            cur.execute(f"SET memory_limit = '{wanted}B'")
            return str(before)
        except Exception:  # noqa: BLE001 - an older DuckDB: the byte budget still holds
            return None
        finally:
            cur.close()

    def restore(self, before: str | None) -> None:
        """Puts the limit back: the default exactly (``RESET``), else the user's value as
        DuckDB showed it."""
        if before is None:
            return
        cur = self.connection.cursor()
        try:
            if before != self._default:
                cur.execute("RESET memory_limit")
                default = cur.execute("SELECT current_setting('memory_limit')").fetchone()[0]
                self._default = default
                if default != before:
                    cur.execute(f"SET memory_limit = '{before}'")
            else:
                cur.execute("RESET memory_limit")
        except Exception:  # noqa: BLE001 - a closed connection
            pass
        finally:
            cur.close()
