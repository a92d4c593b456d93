"""Double-quoted strings, written the way the engine reads them (stdlib + sqlglot).

SQLite reads ``"France"`` as a string when no column in scope has that name, and MySQL and
MariaDB (without the ``ANSI_QUOTES`` mode) always read double quotes as a string. With
``ANSI_QUOTES`` (read from the connection's ``sql_mode`` once, when the runner opens its
connection) they read double quotes as names, like PostgreSQL: :func:`ansi_identifiers`
writes such text for the parser, and nothing is turned into a string. Models write
``WHERE country = "France"`` often. The query runs either way, but a reader of the SQL (and
the result check, which compares string literals with the stored values) should see what
the engine sees: :func:`single_quoted` turns each double-quoted token that the engine reads
as a string into a single-quoted literal, in the checked tree (the text that runs) and in the
text the user gets back, keeping everything else as the model wrote it.

A double-quoted token stays a name when it names a column of a table the query reads, a
table, a CTE or an alias of the query; when the query reads a table the schema does not
describe, nothing is changed (its columns are unknown).

Example:
    >>> from cadet_magic.sql.validate import validate_sql
    >>> cols = {"singer": ["Name", "Country"]}
    >>> q = validate_sql('SELECT Name FROM singer WHERE Country = "France"', "sqlite",
    ...                  columns=cols).query
    >>> q.written, q.sql
    ("SELECT Name FROM singer WHERE Country = 'France'", "SELECT Name FROM singer WHERE Country = 'France'")
    >>> validate_sql('SELECT "Name" FROM singer', "sqlite", columns=cols).query.written
    'SELECT "Name" FROM singer'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from cadet_magic.sql.target import Target

#: Dialects (sqlglot's names) where a double-quoted token can be a string literal.
STRING_QUOTE_DIALECTS = frozenset({"sqlite", "mysql"})

#: ``sql_mode`` flags under which MySQL and MariaDB read double quotes as name quotes:
#: ``ANSI_QUOTES`` and the combination modes that include it.
ANSI_QUOTES_MODES = frozenset(
    {"ANSI_QUOTES", "ANSI", "DB2", "MAXDB", "MSSQL", "ORACLE", "POSTGRESQL"}
)


def reads_ansi_quotes(sql_mode: str | None) -> bool:
    """Whether a MySQL/MariaDB session with this ``@@SESSION.sql_mode`` reads ``"x"`` as a name.

    Example:
        >>> reads_ansi_quotes("STRICT_TRANS_TABLES,ANSI_QUOTES"), reads_ansi_quotes("ansi")
        (True, True)
        >>> reads_ansi_quotes("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION"), reads_ansi_quotes(None)
        (False, False)
    """
    return any(m.strip().upper() in ANSI_QUOTES_MODES for m in (sql_mode or "").split(","))


def ansi_identifiers(sql: str) -> str:
    """``sql`` as a MySQL session with ``ANSI_QUOTES`` reads it, written for sqlglot's MySQL
    dialect (which reads ``"x"`` as a string): each double-quoted token in backticks, a name.

    Example:
        >>> print(ansi_identifiers('SELECT "order id" FROM "t" WHERE c = 1'))
        SELECT `order id` FROM `t` WHERE c = 1
    """
    if '"' not in sql:
        return sql
    try:
        tokens = sqlglot.Dialect.get_or_raise("mysql").tokenize(sql)
    except Exception:  # noqa: BLE001 - the parser reports what it cannot read
        return sql
    out, last = [], 0
    for tok in tokens:
        if tok.token_type is TokenType.STRING and sql[tok.start : tok.start + 1] == '"':
            out.append(sql[last : tok.start])
            out.append("`" + tok.text.replace("`", "``") + "`")
            last = tok.end + 1
    return "".join(out) + sql[last:] if out else sql


def _lower_map(columns: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    return {t.lower(): {c.lower() for c in cs} for t, cs in columns.items()}


def _names_in_scope(tree: exp.Expression, columns: Mapping[str, set[str]]) -> set[str] | None:
    """The lower-cased names a double-quoted token may refer to in ``tree``: the columns of the
    tables it reads, the tables, CTEs and aliases; None when a table's columns are unknown."""
    names: set[str] = set()
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        names.add(name)
        if table.alias:
            names.add(table.alias.lower())
        if name in ctes:
            continue
        if name not in columns:
            return None
        names |= columns[name]
    names |= ctes
    for node in tree.find_all(exp.Alias, exp.TableAlias):
        if node.alias:
            names.add(node.alias.lower())
        for col in node.args.get("columns") or ():
            names.add(col.name.lower())
    return names


def string_identifiers(
    tree: exp.Expression, columns: Mapping[str, Iterable[str]]
) -> list[exp.Column]:
    """The columns of ``tree`` that SQLite reads as strings: written in double quotes, without
    a qualifier, naming nothing in scope.

    Example:
        >>> t = sqlglot.parse_one('SELECT a FROM t WHERE b = "x" AND "a" = 1', read="sqlite")
        >>> [c.name for c in string_identifiers(t, {"t": ["a", "b"]})]
        ['x']
    """
    names = _names_in_scope(tree, _lower_map(columns))
    if names is None:
        return []
    out = []
    for col in tree.find_all(exp.Column):
        ident = col.this
        if (
            isinstance(ident, exp.Identifier)
            and ident.quoted
            and not col.table
            and ident.name.lower() not in names
        ):
            out.append(col)
    return out


def _requote(written: str, target: Target, values: set[str]) -> str:
    """``written`` with each double-quoted token that is a string (a name in ``values`` on
    SQLite; any double-quoted string on MySQL) in single quotes; the rest untouched."""
    try:
        tokens = target.dialect.tokenize(written)
    except Exception:  # noqa: BLE001 - text we cannot tokenize is left as written
        return written
    out, last = [], 0
    for tok in tokens:
        if written[tok.start : tok.start + 1] != '"':
            continue
        if (
            tok.token_type is TokenType.IDENTIFIER
            and tok.text in values
            or (tok.token_type is TokenType.STRING and target.read == "mysql")
        ):
            out.append(written[last : tok.start])
            out.append("'" + tok.text.replace("'", "''") + "'")
            last = tok.end + 1
    if not out:
        return written
    return "".join(out) + written[last:]


def single_quoted(
    tree: exp.Expression, target: Target, written: str
) -> tuple[exp.Expression, str, tuple[str, ...]]:
    """The tree and the written text with the double-quoted strings in single quotes (SQLite:
    those naming none of the target's columns in scope), and the values that were
    double-quoted (the tree is changed in place; nothing changes outside
    :data:`STRING_QUOTE_DIALECTS`).

    Example:
        >>> from cadet_magic.sql.target import Target
        >>> sqlite = Target.named("sqlite").with_names(["t"], {"t": ["a", "b"]})
        >>> t = sqlglot.parse_one('SELECT a FROM t WHERE b IN ("x", "it\\'s")', read="sqlite")
        >>> tree, text, values = single_quoted(t, sqlite, 'SELECT a FROM t WHERE b IN ("x", "it\\'s")')
        >>> text, values
        ("SELECT a FROM t WHERE b IN ('x', 'it''s')", ('x', "it's"))
    """
    read = target.read
    if read not in STRING_QUOTE_DIALECTS or '"' not in written:
        return tree, written, ()
    values: list[str] = []
    if read == "sqlite":
        for col in string_identifiers(tree, target.columns or {}):
            values.append(col.name)
            col.replace(exp.Literal.string(col.name))
    elif '"' in written:
        values = [
            t.text
            for t in target.dialect.tokenize(written)
            if t.token_type is TokenType.STRING and written[t.start : t.start + 1] == '"'
        ]
    if not values:
        return tree, written, ()
    return tree, _requote(written, target, set(values)), tuple(dict.fromkeys(values))
