"""Statements that change data, schema, settings or the session, anywhere in the tree
(a data-modifying CTE above all): refused.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
    ...                          read="postgres")
    >>> [i.code for i in check_tree(tree, Context(Target.named("postgres")))]
    ['data_modifying_cte']
"""

from __future__ import annotations

from sqlglot import exp

from cadet_magic.sql.checks.context import QUERY_HINT, Context, classes

#: How a refusal names each statement kind.
STATEMENT_WORDS: dict[type[exp.Expression], str] = {
    cls: words
    for name, words in (
        ("Insert", "INSERT (it writes rows)"),
        ("Update", "UPDATE (it changes rows)"),
        ("Delete", "DELETE (it removes rows)"),
        ("Merge", "MERGE (it changes rows)"),
        ("Copy", "COPY (it reads or writes files)"),
        ("Create", "CREATE (it changes the schema)"),
        ("Drop", "DROP (it removes objects)"),
        ("Alter", "ALTER (it changes the schema)"),
        ("TruncateTable", "TRUNCATE (it removes rows)"),
        ("Transaction", "a transaction statement"),
        ("Commit", "COMMIT"),
        ("Rollback", "ROLLBACK"),
        ("Set", "SET (it changes settings)"),
        ("Use", "USE (it switches the database)"),
        ("Pragma", "PRAGMA (it reads or changes settings)"),
        ("Grant", "GRANT (it changes permissions)"),
        ("Revoke", "REVOKE (it changes permissions)"),
        ("Describe", "DESCRIBE"),
        ("Show", "SHOW"),
        ("Attach", "ATTACH (it opens another database)"),
        ("Detach", "DETACH"),
        ("Analyze", "ANALYZE"),
        ("QueryTransform", "TRANSFORM ... USING (it runs a program on the server)"),
        ("Cache", "CACHE (it changes the session)"),
        ("Uncache", "UNCACHE (it changes the session)"),
    )
    for cls in classes(name)
}

#: Statement nodes that are never read-only, wherever they sit in the tree.
SIDE_EFFECT_NODES: tuple[type[exp.Expression], ...] = classes(
    "DML",
    "DDL",
    "Insert",
    "Update",
    "Delete",
    "Merge",
    "Copy",
    "Create",
    "Command",
    "Transaction",
    "Commit",
    "Rollback",
    "Set",
    "Use",
    "Pragma",
    "Grant",
    "Revoke",
    "Attach",
    "Detach",
    "Analyze",
    "TruncateTable",
    "Alter",
    "Drop",
    "QueryTransform",
    "Cache",
    "Uncache",
)

NODES = SIDE_EFFECT_NODES


def statement_name(tree: exp.Expression) -> str:
    if isinstance(tree, exp.Command):
        return str(tree.this).upper()
    for cls, words in STATEMENT_WORDS.items():
        if isinstance(tree, cls):
            return words
    return tree.key.upper()


def check(node: exp.Expression, context: Context) -> None:
    name = statement_name(node)
    if node.find_ancestor(exp.CTE) is not None:
        context.add(
            "data_modifying_cte",
            f"A CTE may not contain {name}; every WITH part must be a plain SELECT. " + QUERY_HINT,
        )
    else:
        context.add(
            "forbidden_statement",
            f"Only read-only queries may run, and this one contains {name}. " + QUERY_HINT,
        )


def finish(context: Context) -> None:
    """Nothing is left to word after the walk."""
