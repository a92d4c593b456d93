"""Variable substitution: Spark (and Hive) replace ``${name}`` and ``${env:NAME}`` in the SQL
text before parsing, so a string or a quoted name holding ``${`` can read the server's
environment or turn into other SQL. Refused in those dialects; elsewhere ``${`` is plain text.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("SELECT '${env:HOME}' AS h", read="spark")
    >>> [i.code for i in check_tree(tree, Context(Target.named("spark")))]
    ['variable_substitution']
    >>> check_tree(sqlglot.parse_one("SELECT '${x}'", read="duckdb"), Context(Target.named("duckdb")))
    []
"""

from __future__ import annotations

from sqlglot import exp

from cadet_magic.sql.checks.context import Context

NODES = (exp.Literal, exp.Identifier)

#: Dialects whose engines substitute ``${...}`` in the SQL text.
SUBSTITUTING = frozenset({"spark", "spark2", "databricks", "hive"})


def check(node: exp.Expression, context: Context) -> None:
    if context.read not in SUBSTITUTING or "${" not in str(node.this):
        return
    context.add(
        "variable_substitution",
        "'${...}' is not allowed in strings or names here: the engine would substitute "
        "variables or environment values into the SQL. Write the value itself.",
    )


def finish(context: Context) -> None:
    """Nothing is left to word after the walk."""
