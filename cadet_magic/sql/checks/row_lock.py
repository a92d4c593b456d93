"""Row-locking clauses (``FOR UPDATE``, ``FOR SHARE`` ...) take locks a read-only query never needs.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("SELECT * FROM t FOR SHARE", read="postgres")
    >>> [i.code for i in check_tree(tree, Context(Target.named("postgres")))]
    ['row_lock']
"""

from __future__ import annotations

from sqlglot import exp

from cadet_magic.sql.checks.context import Context

NODES = (exp.Lock,)


def check(node: exp.Expression, context: Context) -> None:
    context.add(
        "row_lock",
        "Row-locking clauses (FOR UPDATE / FOR SHARE ...) are not allowed; remove "
        "the FOR ... clause, a read-only query needs no locks.",
    )


def finish(context: Context) -> None:
    """Nothing is left to word after the walk."""
