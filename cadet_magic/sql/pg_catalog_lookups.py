"""PostgreSQL's catalog lookups that are not written as a function call (stdlib only): the
SQL-value keywords (``user``, ``session_user``, written without parentheses) and the casts to
object-identifier types (``'t'::regclass``). The rule :mod:`cadet_magic.sql.checks.server_facts`
refuses them with these tables; the ``to_reg*`` functions share their wording
(:data:`CATALOG_NAMES`, used by :mod:`cadet_magic.sql.functions`).

Example:
    >>> PG_KEYWORD_CALLS["user"], OBJECT_ID_TYPES["regconfig"] is None
    ('current_user', True)
"""

from __future__ import annotations

#: PostgreSQL's SQL-value keywords written without parentheses (sqlglot reads some of them as
#: a bare column name): the function each one calls, decided by that function's entry in
#: :data:`cadet_magic.sql.functions.NEVER`.
#: ``current_catalog`` (the database you connected to) and ``current_schema`` (the first schema
#: of the search path) stay allowed: they name what the schema already shows.
PG_KEYWORD_CALLS: dict[str, str] = {
    "user": "current_user",
    "current_user": "current_user",
    "session_user": "session_user",
    "current_role": "current_role",
    "system_user": "system_user",
    "current_catalog": "current_database",
    "current_schema": "current_schema",
}

#: What a lookup in the server's catalog does, and what to use instead.
CATALOG_NAMES = (
    "turns numbers or names into the server's catalog objects (its roles, tables, schemas, "
    "functions or types, including those you cannot query)",
    "use the tables' own columns (pg_typeof(x) names a value's type)",
)
#: PostgreSQL's object-identifier types (``'t'::regclass``, ``oid::regrole``): a cast to one
#: looks a name or a number up in the server's catalog. Decided one by one: None = allowed.
OBJECT_ID_TYPES: dict[str, tuple[str, str] | None] = {
    "regclass": CATALOG_NAMES,
    "regrole": CATALOG_NAMES,
    "regnamespace": CATALOG_NAMES,
    "regproc": CATALOG_NAMES,
    "regprocedure": CATALOG_NAMES,
    "regoper": CATALOG_NAMES,
    "regoperator": CATALOG_NAMES,
    "regtype": CATALOG_NAMES,
    "regcollation": CATALOG_NAMES,
    # text search configurations and dictionaries: to_tsvector('english'::regconfig, body)
    # answers a question about the data, and their names are no secret
    "regconfig": None,
    "regdictionary": None,
}
