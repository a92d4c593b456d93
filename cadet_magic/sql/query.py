"""The query the safety check let through, made once and handed on whole (stdlib + sqlglot).

:func:`~cadet_magic.sql.validate.validate_sql` parses the model's SQL once; when the query may
run, its :class:`CheckedQuery` carries the checked syntax tree, the
:class:`~cadet_magic.sql.target.Target` it was checked against (its dialect resolved once), the
text that runs (generated from the tree) and the text as the model wrote it. The runner limits the
rows on a copy of the tree (:func:`~cadet_magic.sql.limit.add_limit`), the result check reads the filters
from the tree, and the diagnosis reads the query's tables and aliases from it and names
functions as the model wrote them (:attr:`CheckedQuery.renamed`): no step parses it again. It
is handed on, never looked up by its text: a step given only text parses it.

Example:
    >>> from cadet_magic.sql.validate import validate_sql
    >>> q = validate_sql("SELECT median(amount) FROM orders;", "sqlite").query
    >>> q.sql, q.written, q.dialect.__class__.__name__
    ('SELECT PERCENTILE_CONT(amount, 0.5) FROM orders', 'SELECT median(amount) FROM orders;', 'SQLite')
    >>> q.renamed
    {'PERCENTILE_CONT': 'MEDIAN'}
    >>> from cadet_magic.sql.limit import add_limit
    >>> add_limit(q, q.target, 11)  # on a copy of its tree: not parsed again
    'SELECT PERCENTILE_CONT(amount, 0.5) FROM orders LIMIT 11'
"""

from __future__ import annotations

from functools import cached_property

import sqlglot
from sqlglot import exp

from cadet_magic.sql.dialect import quiet_sqlglot
from cadet_magic.sql.target import Target


class CheckedQuery(str):
    """A query that passed the safety check: the text that runs (it *is* that text, so any
    code that takes SQL text takes it), with what the check learnt about it.

    Attributes:
        tree: the checked syntax tree (never changed: steps that edit work on a copy).
        target: the :class:`~cadet_magic.sql.target.Target` the query was checked against.
        read: the resolved sqlglot dialect's name (``"postgres"`` for ``postgresql``; None:
            sqlglot's generic SQL).
        dialect: the resolved sqlglot dialect itself, resolved once (with the target) and
            handed to sqlglot by every step that reads or writes the query.
        sql: the text that runs, generated from the tree (``str(query)``).
        written: the text as the model wrote it (double-quoted strings in single quotes
            when the check was given the columns: :mod:`cadet_magic.sql.quotes`).
        double_quoted: the values the model wrote in double quotes that the engine reads
            as strings (empty when none, or when the check had no columns).
    """

    tree: exp.Expression
    target: Target
    written: str
    double_quoted: tuple[str, ...] = ()

    def __new__(cls, tree: exp.Expression, target: Target, sql: str, written: str):
        self = super().__new__(cls, sql)
        self.tree = tree
        self.target = target
        self.written = written
        return self

    @property
    def sql(self) -> str:
        """The text that runs."""
        return str(self)

    @property
    def read(self) -> str | None:
        """sqlglot's name of the target's dialect (None: generic SQL)."""
        return self.target.read

    @property
    def dialect(self) -> sqlglot.Dialect:
        """sqlglot's dialect object of the target, resolved once."""
        return self.target.dialect

    @cached_property
    def renamed(self) -> dict[str, str]:
        """Functions the text that runs spells differently from the model:
        ``{RUN_AS: WRITTEN}`` (see :func:`~cadet_magic.sql.validate.renamed_functions`)."""
        return renamed_in([self.tree], self.dialect, self.written)

    @cached_property
    def normalized(self) -> str:
        """A canonical form of the query (comments, keyword case, whitespace ignored), to
        tell whether two attempts wrote the same query."""
        with quiet_sqlglot():
            return self.tree.sql(dialect=self.dialect, comments=False, normalize=True)


#: Argument nodes a function's head is written with as they are (small, and some dialects
#: write a function differently by them: a unit, a type); any other argument stands as a
#: placeholder (``?``, which is no function's name where a node writes only its argument).
_KEPT = (exp.Literal, exp.Identifier, exp.Var, exp.DataType, exp.Boolean, exp.Null, exp.Star)


def _stub(value: object) -> object:
    if isinstance(value, list):
        return [_stub(v) for v in value]
    if isinstance(value, _KEPT):
        return value.copy()
    if isinstance(value, exp.Expression):
        return exp.Placeholder()
    return value


def _head(node: exp.Func, read: sqlglot.Dialect | None) -> str:
    """The name ``read`` writes ``node`` with, read from the node alone: its arguments stand as
    placeholders (:func:`_stub`), so each node costs its own size, not its subtree's (writing each
    node whole made a 1,500-term ``OR`` cost minutes)."""
    alone = type(node)(**{k: _stub(v) for k, v in node.args.items()})
    with quiet_sqlglot():
        text = alone.sql(dialect=read, comments=False)
    return text.split("(", 1)[0].strip().upper()


def renamed_in(
    trees: list[exp.Expression], read: sqlglot.Dialect | None, written: str
) -> dict[str, str]:
    """Functions of ``trees`` that the dialect ``read`` writes otherwise than ``written`` has
    them: ``{RUN_AS: WRITTEN}``; work linear in the trees' size.

    Example:
        >>> trees = [sqlglot.parse_one("SELECT median(a) FROM t WHERE b = 1 OR b = 2")]
        >>> from cadet_magic.sql.dialect import dialect_of
        >>> renamed_in(trees, dialect_of("sqlite"), "SELECT median(a) FROM t WHERE b = 1 OR b = 2")
        {'PERCENTILE_CONT': 'MEDIAN'}
    """
    upper = written.upper()
    written_heads: dict[str, bool] = {}  # a head's test, once per head (few distinct ones)
    renamed: dict[str, str] = {}
    for tree in trees:
        for node in tree.find_all(exp.Func):
            if isinstance(node, exp.Anonymous | exp.Connector):
                continue  # AND, OR: operators, never a renamed function
            try:
                head = _head(node, read)
            except Exception:  # noqa: BLE001 - a node sqlglot cannot write is not renamed
                continue
            name = node.sql_name().upper()
            if not head or not head.replace("_", "").isalnum() or head == name:
                continue
            if head not in written_heads:
                written_heads[head] = head in upper
            if not written_heads[head]:
                renamed[head] = name
    return renamed
