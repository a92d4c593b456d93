"""Does the SQL compute what the question names? And does the engine have what it calls?
(stdlib + sqlglot.)

Two signs that the SQL route is the wrong one for a question, read from the question's words
and the query's syntax tree only (nothing asks the database):

- :func:`missing_computation`: the question names a computation (a median, a percentile, a
  standard deviation, a variance, a correlation, a growth rate, a rolling or moving average, a
  running total or cumulative share) and the query that ran holds nothing that computes it:
  the median answered by ``AVG``, a growth rate by a plain ``SUM`` per month. Each named
  computation (:data:`COMPUTATIONS`) lists what would compute it: the functions of any engine
  that do, or the constructs a hand-written version needs (an ``OFFSET`` or a window for a
  median, ``SQRT`` for a standard deviation, ``LAG``, a division of two figures or a self-join
  for a growth rate, a window or a correlated subquery for a running total). What it lacks is
  a sign, not a proof: a query may compute the figure in a way the rule does not know.
- :func:`engine_lacks`: the query calls a function other engines have and this one does not
  (``MEDIAN``, ``PERCENTILE_CONT``, ``STDDEV``, ``REGEXP`` on SQLite: checked against the
  engine's own catalog) or uses a construct its dialect lacks (``WITHIN GROUP`` on SQLite):
  rewriting the SQL for the same computation cannot help.

Example:
    >>> import sqlglot
    >>> q = "What is the median order value?"
    >>> t = sqlglot.parse_one("SELECT AVG(total) AS median_order_value FROM orders")
    >>> m = missing_computation(q, t)
    >>> m.name, m.computed
    ('median', ('AVG',))
    >>> print(m.message())
    The question asks for a median, and the SQL computes AVG instead.
    >>> missing_computation(q, sqlglot.parse_one("SELECT MEDIAN(total) FROM orders")) is None
    True
    >>> missing_computation("How many orders?", t) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

# -- what computes a named figure --------------------------------------------------------------


def _has(*types: type[exp.Expression]) -> Callable[[exp.Expression], bool]:
    return lambda tree: any(True for _ in tree.find_all(*types))


def _calls(*names: str) -> Callable[[exp.Expression], bool]:
    """Calls of functions of these names (as written, any case), known to sqlglot or not."""
    wanted = {n.lower() for n in names}

    def test(tree: exp.Expression) -> bool:
        return any(function_name(f) in wanted for f in tree.find_all(exp.Func))

    return test


def _any(*tests: Callable[[exp.Expression], bool]) -> Callable[[exp.Expression], bool]:
    return lambda tree: any(t(tree) for t in tests)


def _self_join(tree: exp.Expression) -> bool:
    """A table read twice (a self-join or a correlated subquery over the same table)."""
    names = [t.name.lower() for t in tree.find_all(exp.Table)]
    return len(names) != len(set(names))


def _two_figures_divided(tree: exp.Expression) -> bool:
    """A division whose both sides hold an aggregate or a subquery (this year over last)."""
    figure = (exp.AggFunc, exp.Subquery, exp.Select, exp.Window, exp.Column)
    for div in tree.find_all(exp.Div):
        left, right = div.left, div.right
        if any(True for _ in left.find_all(*figure)) and any(True for _ in right.find_all(*figure)):
            return True
    return False


def _squares_subtracted(tree: exp.Expression) -> bool:
    """A hand-written variance: a square (``x * x``, ``POWER``) and a subtraction."""
    return _has(exp.Pow)(tree) or (_has(exp.Mul)(tree) and _has(exp.Sub)(tree))


_QUANTILE = _any(
    _has(
        exp.Median,
        exp.PercentileCont,
        exp.PercentileDisc,
        exp.Quantile,
        exp.ApproxQuantile,
        exp.Window,  # ROW_NUMBER/NTILE/PERCENT_RANK... over the ordered values
        exp.Offset,  # the middle row: ORDER BY x LIMIT 1 OFFSET n / 2
    ),
    _calls("quantile_cont", "quantile_disc", "quantile", "percentile", "ntile"),
)
_WINDOW_OR_SELF = _any(_has(exp.Window, exp.Subquery), _self_join)


@dataclass(frozen=True)
class Computation:
    """A computation a question can name: its ``name`` (as the feedback says it), the words
    that name it (a regular expression over the lower-cased question) and ``computes(tree)``:
    whether a query holds something that computes it."""

    name: str
    words: re.Pattern[str]
    computes: Callable[[exp.Expression], bool]


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


#: The computations a question can name, in the order they are looked for (the first one
#: named and not computed is the finding).
COMPUTATIONS: tuple[Computation, ...] = (
    Computation("median", _words(r"\bmedian\b"), _QUANTILE),
    Computation(
        "percentile",
        _words(r"\bpercentile\b|\bquartile\b|\binterquartile\b|\bquantile\b"),
        _QUANTILE,
    ),
    Computation(
        "standard deviation",
        _words(r"\bstandard deviation\b|\bstd\.? ?dev\b|\bstdev\b"),
        _any(_has(exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Sqrt), _calls("stdev")),
    ),
    Computation(
        "variance",
        _words(r"\bvariance\b"),
        _any(
            _has(exp.Variance, exp.VariancePop), _calls("var_pop", "var_samp"), _squares_subtracted
        ),
    ),
    Computation(
        "correlation",
        _words(r"\bcorrelat\w*\b"),
        _any(_has(exp.Corr, exp.Sqrt), _calls("corr")),
    ),
    Computation(
        "growth rate",
        _words(
            r"\bgrowth\b|\bgrow\b|\bgrew\b|\bmonth[- ]over[- ]month\b|\byear[- ]over[- ]year\b"
            r"|\bpercent(?:age)? change\b"
        ),
        _any(_calls("lag", "lead"), _two_figures_divided, _self_join),
    ),
    Computation(
        "rolling average",
        _words(r"\brolling\b|\bmoving average\b|\btrailing\b"),
        _WINDOW_OR_SELF,
    ),
    Computation(
        "running total",
        _words(r"\bcumulative\b|\brunning total\b|\brunning sum\b"),
        _WINDOW_OR_SELF,
    ),
)


def function_name(f: exp.Func) -> str:
    """A function call's name in lower case, as the query writes it where sqlglot keeps it
    (``Anonymous`` calls), else sqlglot's name for it.

    >>> import sqlglot
    >>> [function_name(f) for f in sqlglot.parse_one("SELECT foo(x), avg(y)").find_all(exp.Func)]
    ['foo', 'avg']
    """
    if isinstance(f, exp.Anonymous):
        return str(f.name).lower()
    return f.sql_name().lower()


@dataclass(frozen=True)
class MissingComputation:
    """The question names ``name`` and the query computes none of it; ``computed``: the
    aggregate functions the query calls instead (upper case, in order; may be empty)."""

    name: str
    computed: tuple[str, ...] = ()

    def message(self) -> str:
        """The finding in one sentence."""
        instead = ", ".join(self.computed) if self.computed else "something else"
        return f"The question asks for a {self.name}, and the SQL computes {instead} instead."


def _aggregates(tree: exp.Expression) -> tuple[str, ...]:
    names = [function_name(f).upper() for f in tree.find_all(exp.AggFunc)]
    return tuple(dict.fromkeys(names))


def named_computations(question: str) -> tuple[str, ...]:
    """The computations the question names (:data:`COMPUTATIONS`' names), in their order.

    >>> named_computations("What is the month-over-month growth and the 3-month rolling average?")
    ('growth rate', 'rolling average')
    >>> named_computations("What is the average price?")
    ()
    """
    text = question.lower()
    return tuple(c.name for c in COMPUTATIONS if c.words.search(text))


def missing_computation(question: str, tree: exp.Expression | None) -> MissingComputation | None:
    """The first computation the question names that the query does not compute (None: every
    one it names is computed, or it names none)."""
    if tree is None:
        return None
    text = question.lower()
    for c in COMPUTATIONS:
        if c.words.search(text) and not c.computes(tree):
            return MissingComputation(c.name, _aggregates(tree))
    return None


# -- what the engine lacks ---------------------------------------------------------------------

#: Functions some engines have that a query may call for a statistic, a pattern or a
#: percentile, by sqlglot's node (the name the feedback says).
ELSEWHERE: dict[type, str] = {
    exp.Median: "median",
    exp.PercentileCont: "percentile_cont",
    exp.PercentileDisc: "percentile_disc",
    exp.Quantile: "quantile",
    exp.ApproxQuantile: "approx_quantile",
    exp.Stddev: "stddev",
    exp.StddevPop: "stddev_pop",
    exp.StddevSamp: "stddev_samp",
    exp.Variance: "variance",
    exp.VariancePop: "var_pop",
    exp.Corr: "corr",
    exp.CovarPop: "covar_pop",
    exp.CovarSamp: "covar_samp",
    exp.RegexpLike: "regexp",
    exp.RegexpExtract: "regexp_extract",
    exp.RegexpReplace: "regexp_replace",
}
#: The same by the name a query writes, for calls sqlglot leaves anonymous in some dialects.
ELSEWHERE_NAMES = frozenset(
    {*ELSEWHERE.values(), "stdev", "var_samp", "quantile_cont", "quantile_disc", "percentile"}
)


_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def _runs_as(f: exp.Func, target: Any) -> str:
    """The name of the function a call runs as on the target's engine (sqlglot writes
    ``QUANTILE_CONT`` on DuckDB for a ``PERCENTILE_CONT``), lower case; an operator's
    (``a REGEXP b``) is its name in :data:`ELSEWHERE`."""
    try:
        text = f.sql(dialect=getattr(target, "dialect", None) or getattr(target, "read", None))
    except Exception:  # noqa: BLE001 - a call sqlglot cannot write for the engine: as written
        text = ""
    call = _CALL.match(text)
    if call is not None:
        return call.group(1).lower()
    return ELSEWHERE.get(type(f)) or function_name(f)


#: The functions that compute a named statistic, on any engine: an engine with none of them
#: lacks the statistic itself (SQLite has no median, percentile, deviation or correlation).
STATISTICS: dict[str, frozenset[str]] = {
    "median": frozenset({"median", "percentile_cont", "quantile_cont", "quantile", "percentile"}),
    "percentile": frozenset({"percentile_cont", "percentile_disc", "quantile_cont", "quantile"}),
    "standard deviation": frozenset({"stddev", "stddev_samp", "stddev_pop", "stdev"}),
    "variance": frozenset({"variance", "var_samp", "var_pop"}),
    "correlation": frozenset({"corr"}),
}


def lacks_named(question: str, target: Any) -> tuple[str, ...]:
    """The statistics the question names that the engine of ``target`` has no function for
    (its own catalog read; empty when the catalog is not known).

    >>> import dataclasses
    >>> from cadet_magic.sql.functions import FunctionCatalog
    >>> from cadet_magic.sql.target import Target
    >>> lite = dataclasses.replace(Target.named("sqlite"),
    ...     functions=FunctionCatalog.build("sqlite", ["avg"], ["avg"]))
    >>> lacks_named("What is the median and the standard deviation of x?", lite)
    ('median', 'standard deviation')
    >>> lacks_named("What is the average of x?", lite)
    ()
    """
    known = getattr(getattr(target, "functions", None), "known", None)
    if not known:
        return ()
    return tuple(
        name
        for name in named_computations(question)
        if name in STATISTICS and not STATISTICS[name] & known
    )


def engine_lacks(tree: exp.Expression | None, target: Any) -> tuple[str, ...]:
    """What the query uses that the engine of ``target`` lacks: functions of
    :data:`ELSEWHERE` missing from its catalog (upper case, as the feedback says them), and
    ``WITHIN GROUP`` on SQLite, whose dialect has no ordered-set aggregates. Empty when the
    engine has everything, or when its catalog is not known.

    >>> import sqlglot
    >>> from cadet_magic.sql.functions import FunctionCatalog
    >>> from cadet_magic.sql.target import Target
    >>> import dataclasses
    >>> lite = dataclasses.replace(Target.named("sqlite"),
    ...     functions=FunctionCatalog.build("sqlite", ["avg", "sum"], ["avg", "sum"]))
    >>> engine_lacks(sqlglot.parse_one("SELECT MEDIAN(x), AVG(x) FROM t", read="sqlite"), lite)
    ('MEDIAN',)
    >>> engine_lacks(sqlglot.parse_one("SELECT AVG(x) FROM t"), lite)
    ()
    """
    if tree is None:
        return ()
    catalog = getattr(target, "functions", None)
    known = getattr(catalog, "known", None)
    lacking: list[str] = []
    if known:
        for f in tree.find_all(exp.Func):
            name = ELSEWHERE.get(type(f))
            if name is None and isinstance(f, exp.Anonymous):
                written = function_name(f)
                name = written if written in ELSEWHERE_NAMES else None
            if name is not None and _runs_as(f, target) not in known:
                lacking.append(name.upper())
    engine = str(getattr(target, "read", None) or getattr(target, "name", "") or "")
    if engine == "sqlite" and any(True for _ in tree.find_all(exp.WithinGroup)):
        lacking.append("WITHIN GROUP")
    return tuple(dict.fromkeys(lacking))
