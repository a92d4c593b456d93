"""``SELECT ... INTO`` creates a table or writes a file: refused wherever it appears.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("SELECT * INTO backup FROM t", read="postgres")
    >>> [i.code for i in check_tree(tree, Context(Target.named("postgres")))]
    ['select_into']
"""

from __future__ import annotations

from sqlglot import exp

from cadet_magic.sql.checks.context import Context

NODES = (exp.Into,)


def check(node: exp.Expression, context: Context) -> None:
    context.add(
        "select_into",
        "SELECT ... INTO creates a table or writes a file; remove the INTO clause "
        "and just SELECT the rows.",
    )


def finish(context: Context) -> None:
    """Nothing is left to word after the walk."""
