"""PostgreSQL's ways of asking the server about itself that are not written as a call:
SQL-value keywords without parentheses (``SELECT user``, ``current_role``, ``system_user``) and
casts to object-identifier types (``'t'::regclass``, ``10::oid::regrole``), which look names and
numbers up in the server's catalog. Each is decided in the catalog tables of
:mod:`cadet_magic.sql.pg_catalog_lookups` (:data:`~cadet_magic.sql.pg_catalog_lookups.PG_KEYWORD_CALLS`,
:data:`~cadet_magic.sql.pg_catalog_lookups.OBJECT_ID_TYPES`): what reports roles, the server or catalog
objects is refused, so such facts never reach a result or an error the model reads.

Example:
    >>> import sqlglot
    >>> from cadet_magic.sql.checks import Context, Target, check_tree
    >>> tree = sqlglot.parse_one("SELECT user, 't'::regclass, name FROM t", read="postgres")
    >>> [i.message.split(':')[0] for i in check_tree(tree, Context(Target.named("postgres").with_names(["t"])))]
    ['The keyword user is not allowed', 'The cast to regclass is not allowed']
    >>> tree = sqlglot.parse_one("SELECT to_tsvector('english'::regconfig, name) FROM t", read="postgres")
    >>> check_tree(tree, Context(Target.named("postgres").with_names(["t"])))
    []
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from cadet_magic.sql.checks.context import Context
from cadet_magic.sql.functions import never_reason
from cadet_magic.sql.pg_catalog_lookups import OBJECT_ID_TYPES, PG_KEYWORD_CALLS

NODES = (exp.Column, exp.DataType)

#: Dialects whose unquoted SQL-value keywords are calls (PostgreSQL and its relatives).
DIALECTS = frozenset({"postgres", "redshift", "materialize", "risingwave"})


def check(node: Any, context: Context) -> None:
    if context.read not in DIALECTS:
        return
    if isinstance(node, exp.Column):
        _keyword(node, context)
    else:
        _cast_type(node, context)


def _keyword(node: exp.Column, context: Context) -> None:
    """An unqualified, unquoted column named like a SQL-value keyword is that keyword."""
    if node.table or not isinstance(node.this, exp.Identifier) or node.this.quoted:
        return
    word = node.name.lower()
    function = PG_KEYWORD_CALLS.get(word)
    why = never_reason(function, context.read) if function else None
    if why is not None:
        context.add(
            "forbidden_function",
            f"The keyword {word} is not allowed: it {why[0]}; {why[1]} instead.",
        )


def _cast_type(node: exp.DataType, context: Context) -> None:
    """A cast to an object-identifier type (also written ``pg_catalog.regclass``)."""
    name = node.sql(dialect="postgres").rsplit(".", 1)[-1].strip('"').lower()
    if not name.startswith("reg"):
        return
    why = OBJECT_ID_TYPES.get(name, OBJECT_ID_TYPES["regclass"])
    if why is not None:
        context.add(
            "forbidden_function",
            f"The cast to {name} is not allowed: it {why[0]}; {why[1]} instead.",
        )


def finish(context: Context) -> None:
    """Nothing is left to word after the walk."""
