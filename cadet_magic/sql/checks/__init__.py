"""The safety check's tree rules, one module per rule, chained in order.

:func:`check_tree` walks the parsed statement once; each node goes to the first rule in
:data:`RULES` whose ``NODES`` it is an instance of, and that rule's ``check(node, context)``
records what it refuses on the :class:`~cadet_magic.sql.checks.context.Context`. After the walk
every rule's ``finish(context)`` runs (the table rule words the unknown tables there).

A new rule is a module with ``NODES``, ``check`` and ``finish``, added to :data:`RULES` where its
issues should come in the order of refusals.

Example:
    >>> import sqlglot
    >>> tree = sqlglot.parse_one("SELECT * FROM t FOR UPDATE", read="postgres")
    >>> [i.code for i in check_tree(tree, Context(Target.named("postgres").with_names(["t"])))]
    ['row_lock']
"""

from __future__ import annotations

from sqlglot import exp

from cadet_magic.sql.checks import (
    function_calls,
    row_lock,
    select_into,
    server_facts,
    side_effects,
    substitution,
    tables,
    variables,
)
from cadet_magic.sql.checks.context import Context, Issue
from cadet_magic.sql.target import Target

__all__ = ["RULES", "Context", "Issue", "Target", "check_tree"]

#: The tree rules in the order they are tried on each node.
RULES = (
    side_effects,
    select_into,
    row_lock,
    variables,
    function_calls,
    server_facts,
    substitution,
    tables,
)

_DISPATCH = tuple((rule.NODES, rule.check) for rule in RULES)


def check_tree(tree: exp.Expression, context: Context) -> list:
    """Runs every rule of :data:`RULES` over ``tree`` (its root excluded); returns the issues."""
    for node in tree.walk():
        if node is tree:
            continue
        for nodes, check in _DISPATCH:
            if isinstance(node, nodes):
                check(node, context)
                break
    for rule in RULES:
        rule.finish(context)
    return context.issues
