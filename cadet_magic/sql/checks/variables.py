"""MySQL/MariaDB variables: ``@x := ...`` assigns a user variable (it outlives a rollback) and
``@@name`` reads the server's settings; neither belongs in a read-only query.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("SELECT @n := @n + 1, @@secure_file_priv FROM t", read="mysql")
    >>> [i.code for i in check_tree(tree, Context(Target.named("mysql")))]
    ['variable', 'variable', 'variable']
"""

from __future__ import annotations

from sqlglot import exp

from cadet_magic.sql.checks.context import Context

NODES = (exp.SessionParameter, exp.Parameter, exp.PropertyEQ)

#: Dialects where ``@name`` is a session variable.
DIALECTS = frozenset({"mysql", "singlestore", "doris", "starrocks"})


def check(node: exp.Expression, context: Context) -> None:
    if context.read not in DIALECTS:
        return
    if isinstance(node, exp.SessionParameter):
        context.add(
            "variable",
            "Server variables (@@name) are not allowed: they read the server's settings; "
            "write the value you need as a literal instead.",
        )
    elif isinstance(node, exp.PropertyEQ):
        context.add(
            "variable",
            "Assignments (@name := ...) are not allowed: they change the session; number rows "
            "with ROW_NUMBER() OVER (ORDER BY ...) and carry values with CTEs instead.",
        )
    elif not isinstance(node.parent, exp.PropertyEQ):
        context.add(
            "variable",
            f"User variables (@{node.name}) are not allowed: the query runs on a fresh session "
            "where they are unset; write the value as a literal or compute it in a CTE.",
        )


def finish(context: Context) -> None:
    """Nothing is left to word after the walk."""
