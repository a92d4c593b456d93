"""Functions a DuckDB database defines itself, kept out of the agent's queries (edge).

A DuckDB file keeps ``CREATE MACRO``s, and a Python program can register functions on the
connection. DuckDB binds a name to the database's macro before its own function of that name,
and it binds names the SQL text never writes: ``count(*)`` is ``count_star``, ``||`` is
``"||"``, ``LIKE`` is ``"~~"``, ``+`` is ``"+"``, ``EXTRACT`` is ``date_part``, ``[...]`` is
``list_value``. So, once the catalog shows the database defines functions
(:attr:`FunctionCatalog.defined <cadet_magic.sql.functions.FunctionCatalog>`):

- every cursor the agent reads or queries on puts DuckDB's own catalog (``system.main``) first
  on its search path (:func:`engine_first`), so a name DuckDB has is bound to DuckDB's function
  in the query itself, whatever the file defines under that name;
- before a query runs, DuckDB's own parser lists the functions it calls as DuckDB binds them
  (``json_serialize_sql``), and a query that calls a function the database defines, which the
  user did not allow by name, does not run (:func:`refuse_defined_calls`);
- a view (bound in its own schema, where the database's macros come first) and a table whose
  generated column calls such a function, shadowing names included, are withheld from the
  schema and never sampled (:func:`defined_uses`).

The safety check refuses those calls by name first (precise feedback for the model); this is
what holds whatever the check missed. In the same way, on every connection (a user's own has
file access on), a query that, as DuckDB's parser reads it, calls a function that reads files
or the network, or scans a table named like a file (``FROM 'notes.csv'``), does not run
(:func:`refuse_file_reads`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from cadet_magic.sql.functions import FunctionCatalog
from cadet_magic.sql.rules import FILE_FUNCTIONS

log = logging.getLogger("cadet_magic")

#: The schemas of the current database, ``main`` first (DuckDB lists ``main`` as internal).
SCHEMAS_SQL = (
    "SELECT schema_name FROM duckdb_schemas() WHERE database_name = current_database() "
    "AND (NOT internal OR schema_name = 'main') ORDER BY schema_name <> 'main', schema_name"
)
#: DuckDB's own parse of one SELECT, as JSON (called qualified: a macro cannot stand for it).
SERIALIZE_SQL = "SELECT system.main.json_serialize_sql(?)"
GENERATED_SQL = (
    "SELECT schema_name, table_name, column_name, generation_expression FROM duckdb_columns() "
    "WHERE database_name = current_database() AND is_generated"
)
#: Without ``is_generated`` (older DuckDB): the tables whose own statement has one.
GENERATED_OLD_SQL = (
    "SELECT schema_name, table_name, NULL, NULL FROM duckdb_tables() "
    "WHERE database_name = current_database() AND sql ILIKE '%GENERATED ALWAYS AS%'"
)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def engine_first(cur: Any) -> None:
    """Puts DuckDB's own catalog first on ``cur``'s search path, then the current database's
    schemas (``main`` first): names DuckDB has are bound to its own functions, and the
    database's tables resolve as before. ``cur`` is a cursor of the agent's own; on it
    ``current_database()`` says ``system`` from then on."""
    database = cur.execute("SELECT current_database()").fetchone()[0]
    schemas = [r[0] for r in cur.execute(SCHEMAS_SQL).fetchall()]
    path = ["system.main"] + [f"{_quoted(database)}.{_quoted(s)}" for s in schemas]
    path.append("system.pg_catalog")
    cur.execute("SET search_path = " + "'" + ",".join(path).replace("'", "''") + "'")


def _function_names(tree: Any) -> Iterator[str]:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            name = node.get("function_name")
            if isinstance(name, str):
                yield name
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def bound_functions(cur: Any, sql: str) -> list[str] | None:
    """The function names DuckDB's parser binds in ``sql`` (one SELECT), operators and
    ``count_star`` included; None when DuckDB cannot serialize it (a PIVOT, not a SELECT).

    Example:
        >>> import duckdb
        >>> sorted(set(bound_functions(duckdb.connect(), "SELECT count(*), 'a' || 'b' LIKE 'x'")))
        ['count_star', '||', '~~']
    """
    text = cur.execute(SERIALIZE_SQL, [sql]).fetchone()[0]
    parsed = json.loads(text)
    if not isinstance(parsed, dict) or parsed.get("error"):
        return None
    return list(_function_names(parsed.get("statements")))


def _file_reads(tree: Any) -> Iterator[str]:
    """What in DuckDB's parse of a statement reads a file: a function of
    :data:`~cadet_magic.sql.rules.FILE_FUNCTIONS`, a table named like a path or a file."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            name = node.get("function_name")
            if isinstance(name, str) and name.lower() in FILE_FUNCTIONS:
                yield f"{name}()"
            table = node.get("table_name") if node.get("type") == "BASE_TABLE" else None
            if isinstance(table, str) and any(c in table for c in "./\\:"):
                yield f"the file {table!r}"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def refuse_file_reads(cur: Any, sql: str) -> None:
    """Raises ``duckdb.PermissionException`` when ``sql`` (one SELECT), as DuckDB's parser reads
    it on ``cur``, reads a file (:func:`_file_reads`): whatever the connection's own file access,
    an agent's query reads none. A statement DuckDB cannot serialize (a PIVOT) is left to the
    safety check.

    Example:
        >>> import duckdb
        >>> refuse_file_reads(duckdb.connect(), "SELECT * FROM read_text('/etc/hostname')")
        Traceback (most recent call last):
        ...
        _duckdb.PermissionException: Not run: this query reads read_text(); queries here read no file.
    """
    import duckdb

    parsed = json.loads(cur.execute(SERIALIZE_SQL, [sql]).fetchone()[0])
    if not isinstance(parsed, dict) or parsed.get("error"):
        return
    found = list(dict.fromkeys(_file_reads(parsed.get("statements"))))
    if found:
        raise duckdb.PermissionException(
            f"Not run: this query reads {', '.join(found)}; queries here read no file."
        )


def refusal(names: Iterable[str], where: str) -> str:
    """The one line that says why a query (or a view) does not run."""
    shown = ", ".join(f"{n}()" for n in names)
    return (
        f"Not run: {where} calls {shown}, defined by this database itself (not one of "
        "DuckDB's own functions); queries here run only DuckDB's own functions."
    )


def refuse_defined_calls(cur: Any, sql: str, catalog: FunctionCatalog) -> None:
    """Raises ``duckdb.PermissionException`` when ``sql`` (the text that runs) calls, as
    DuckDB binds it on ``cur`` (search path from :func:`engine_first`), a function the
    database defines that the user did not allow, or when DuckDB cannot list its calls."""
    import duckdb

    names = bound_functions(cur, sql)
    if names is None:
        raise duckdb.PermissionException(
            "Not run: this database defines functions of its own, and DuckDB cannot list the "
            "functions this statement calls; write it as one plain SELECT (GROUP BY instead "
            "of PIVOT)."
        )
    found = catalog.runs_defined(names)
    if found:
        raise duckdb.PermissionException(refusal(found, "this query"))


def _view_body(statement: str) -> str | None:
    """The query of DuckDB's ``CREATE VIEW ... AS <query>;`` text, as written there."""
    from sqlglot.tokens import TokenType

    from cadet_magic.sql.dialect import dialect_of

    try:
        tokens = dialect_of("duckdb").tokenize(statement)
    except Exception:  # noqa: BLE001 - not readable: the caller withholds the view
        return None
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif token.token_type == TokenType.ALIAS and depth == 0:
            return statement[token.end + 1 :].strip().rstrip(";").strip() or None
    return None


def _uses(cur: Any, sql: str | None, catalog: FunctionCatalog) -> list[str] | None:
    """The defined functions ``sql`` binds (shadowing names included); None if unreadable."""
    if not sql:
        return None
    try:
        names = bound_functions(cur, sql)
    except Exception:  # noqa: BLE001 - unreadable
        return None
    return None if names is None else catalog.runs_defined(names, shadows=True)


def _named(schema: str, name: str) -> str:
    return name if schema == "main" else f"{schema}.{name}"


def defined_uses(con: Any, catalog: FunctionCatalog | None) -> dict[str, str]:
    """Relations (named as the schema names them) that call a function the database defines,
    each with why: views whose query calls one, tables whose generated column does (or whose
    definition cannot be read). Empty when the database defines none."""
    if catalog is None or not catalog.defined:
        return {}
    cur = con.cursor()
    reasons: dict[str, str] = {}
    try:
        views = cur.execute(
            "SELECT schema_name, view_name, sql FROM duckdb_views() "
            "WHERE NOT internal AND database_name = current_database()"
        ).fetchall()
        for schema, view, statement in views:
            found = _uses(cur, _view_body(statement or ""), catalog)
            if found is None:
                reasons[_named(schema, view)] = (
                    "this database defines functions, and DuckDB cannot list what it calls"
                )
            elif found:
                reasons[_named(schema, view)] = (
                    "it calls "
                    + ", ".join(f"{n}()" for n in found)
                    + ", defined by this database itself"
                )
        try:
            generated = cur.execute(GENERATED_SQL).fetchall()
        except Exception:  # noqa: BLE001 - an older DuckDB: judged by the table's statement
            generated = cur.execute(GENERATED_OLD_SQL).fetchall()
        for schema, table, column, expression in generated:
            key = _named(schema, table)
            found = _uses(cur, f"SELECT {expression}" if expression else None, catalog)
            if found is None:
                reasons.setdefault(key, "its generated columns cannot be read")
            elif found:
                reasons.setdefault(
                    key,
                    f"its generated column {column} calls "
                    + ", ".join(f"{n}()" for n in found)
                    + ", defined by this database itself",
                )
    finally:
        cur.close()
    return reasons
