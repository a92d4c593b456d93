"""The SQL safety check (portable: stdlib + sqlglot).

Every decision is taken on the sqlglot syntax tree of the query, parsed in the
connection's dialect: exactly one statement, a read-only statement kind, and,
anywhere in the tree, no data-modifying CTE, no ``SELECT INTO``, no row lock, no
function that touches files, the network, settings or secrets, runs a SQL
string, sleeps or signals the server, and no table outside the allowed set
(CTE names, subquery aliases and value-only table functions are told apart on
the tree). Comments and a trailing semicolon are harmless and accepted.

The SQL to run (:attr:`Validation.sql`) is generated from the checked tree
without comments, so what runs is exactly what was checked, even where an engine
would read a comment differently from the parser.

Example:
    >>> v = validate_sql("SELECT name FROM singer; -- all singers", "sqlite", tables=["singer"])
    >>> v.ok, v.issues, v.sql
    (True, [], 'SELECT name FROM singer')
    >>> validate_sql("DROP TABLE singer", "sqlite").issues[0].code
    'forbidden_statement'
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import sqlglot
from sqlglot import exp

from cadet_magic.sql import rules
from cadet_magic.sql.functions import FunctionCatalog, catalog_refusal, never_reason


@dataclass(frozen=True)
class Issue:
    """One reason the check refused a query: a short ``code`` and an actionable ``message``."""

    code: str
    message: str


@dataclass
class Validation:
    """The verdict: ``ok``, the ``issues`` found and the ``sql`` to run."""

    ok: bool
    issues: list[Issue] = field(default_factory=list)
    sql: str = ""


#: Names the notebook world uses for dialects, mapped to sqlglot's names.
DIALECT_ALIASES = {
    "postgresql": "postgres",
    "pg": "postgres",
    "psycopg": "postgres",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "sqlite3": "sqlite",
    "mariadb": "mysql",
    "googlesql": "bigquery",
    "databricks": "databricks",
}


def _classes(*names: str) -> tuple[type[exp.Expression], ...]:
    """The sqlglot expression classes with these names that this sqlglot version has."""
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


_QUERY_HINT = "Write one read-only query: SELECT ..., WITH ... SELECT ..., or VALUES ...."

_STATEMENT_WORDS: dict[type[exp.Expression], str] = {
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
    )
    for cls in _classes(name)
}


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    """Silences sqlglot's 'falling back to Command' warnings during one parse."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def resolve_dialect(dialect: str | None) -> str | None:
    """The sqlglot dialect name for ``dialect`` (None when sqlglot does not know it)."""
    if not dialect:
        return None
    name = DIALECT_ALIASES.get(dialect.lower(), dialect.lower())
    try:
        sqlglot.Dialect.get_or_raise(name)
    except ValueError:
        return None
    return name


def parse_statements(sql: str, dialect: str | None) -> list[exp.Expression]:
    """The statements of ``sql``, without the empty ones a trailing ``;`` or comment leaves.

    Raises:
        sqlglot.errors.SqlglotError: when the SQL does not tokenize or parse.
    """
    with _quiet_sqlglot():
        trees = sqlglot.parse(sql, read=dialect)
    return [
        cast(exp.Expression, t)
        for t in trees
        if t is not None and not isinstance(t, exp.Semicolon)
    ]


def _parse_error_message(error: Exception, dialect: str | None) -> str:
    where = f"as {dialect} SQL" if dialect else "as SQL"
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    errors = getattr(error, "errors", None)
    if errors:
        first = errors[0]
        detail = first.get("description") or detail
        line, col = first.get("line"), first.get("col")
        near = (first.get("highlight") or "").strip()
        if line:
            detail += f" at line {line}, column {col}"
        if near:
            detail += f" (near '{near}')"
    return f"The SQL does not parse {where}: {detail}. Fix the syntax; {_QUERY_HINT}"


def _first_word(sql: str, dialect: str | None) -> str | None:
    """The first token of ``sql`` (comments skipped), lower-cased; None if it does not tokenize."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:  # noqa: BLE001 - only used to word a refusal
        return None
    return tokens[0].text.lower() if tokens else None


def _not_a_query(sql: str, dialect: str | None) -> Issue | None:
    """A ``forbidden_statement`` issue when ``sql`` starts with a non-query statement keyword."""
    word = _first_word(sql, dialect)
    if word in rules.NON_QUERY_KEYWORDS:
        return Issue(
            "forbidden_statement",
            f"Only read-only queries may run; {word.upper()} statements are not allowed. "
            + _QUERY_HINT,
        )
    return None


def _statement_name(tree: exp.Expression) -> str:
    if isinstance(tree, exp.Command):
        return str(tree.this).upper()
    for cls, words in _STATEMENT_WORDS.items():
        if isinstance(tree, cls):
            return words
    return tree.key.upper()


_QUERY_NODES = _classes("Select", "SetOperation", "Union", "Intersect", "Except", "Values", "Pivot")


def _is_query(tree: exp.Expression) -> bool:
    """A read-only statement kind: SELECT, a set operation, VALUES, or a DuckDB PIVOT."""
    if isinstance(tree, exp.Subquery):
        return _is_query(cast(exp.Expression, tree.unnest()))
    return isinstance(tree, _QUERY_NODES)


#: Statement nodes that are never read-only, wherever they sit in the tree.
_SIDE_EFFECT_NODES: tuple[type[exp.Expression], ...] = _classes(
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
)


def function_names(node: exp.Func) -> set[str]:
    """Every lower-case name under which ``node`` may be called."""
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return {node.name.lower()}
    return {n.lower() for n in type(node).sql_names()} | {node.key}


def forbidden_function(names: set[str]) -> tuple[str, str] | None:
    """``(code, reason)`` when a function with one of ``names`` is refused, else None."""
    for name in sorted(names):
        if name in rules.FILE_FUNCTIONS or name.startswith(rules.FILE_PREFIXES):
            return "file_access", "reads or writes files or the network"
        if name in rules.OTHER_FUNCTIONS:
            return "forbidden_function", rules.OTHER_FUNCTIONS[name]
        for prefix, reason in rules.OTHER_PREFIXES.items():
            if name.startswith(prefix):
                return "forbidden_function", reason
    return None


_FORBIDDEN_CLASSES: dict[type, tuple[str, str]] = {
    cls: verdict
    for name, verdict in (
        ("ReadCSV", ("file_access", "reads files")),
        ("ReadParquet", ("file_access", "reads files")),
        ("ToFile", ("file_access", "reads staged files")),
        ("NextValueFor", ("forbidden_function", "advances a sequence (a write)")),
        ("Secret", ("forbidden_function", "exposes secrets")),
    )
    for cls in _classes(name)
}


_SQL_NAMES: dict[type, frozenset[str]] = {}


def _sql_names(cls: type[exp.Func]) -> frozenset[str]:
    """The lower-case names sqlglot reads and writes a function class under (memoized)."""
    names = _SQL_NAMES.get(cls)
    if names is None:
        names = _SQL_NAMES[cls] = frozenset(n.lower() for n in cls.sql_names())
    return names


_CALL_HEAD = re.compile(r"\s*([A-Za-z_][\w$]*)\s*\(")
_RENAMED: dict[tuple[str | None, type], bool] = {}
#: Function classes sqlglot writes as grammar (keywords and operators), never as a named call.
_GRAMMAR = _classes("Connector", "Case", "If", "Exists", "Cast", "Binary", "Unary")


def _renamed_by(dialect: str | None, cls: type[exp.Func]) -> bool:
    """Whether ``dialect`` writes ``cls`` with its own generator code (memoized), so the name
    in the SQL to run may differ from the names sqlglot reads it under."""
    key = (dialect, cls)
    found = _RENAMED.get(key)
    if found is None:
        generator = sqlglot.Dialect.get_or_raise(dialect).generator_class
        special = cls in generator.TRANSFORMS or hasattr(generator, f"{cls.key}_sql")
        found = _RENAMED[key] = special and not issubclass(cls, _GRAMMAR)
    return found


def _display_name(node: exp.Func) -> str:
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return node.name
    return type(node).sql_names()[0].lower()


_ROW_SOURCES: tuple[type[exp.Expression], ...] = _classes(
    "Table", "From", "Join", "Lateral", "TableFromRows"
)


def _is_table_function_position(node: exp.Func) -> bool:
    """True for a function used as a row source: ``FROM f(...)``, ``JOIN f(...)``, ``LATERAL``."""
    child: Any = node
    parent = node.parent
    if isinstance(parent, exp.Dot):
        child, parent = parent, parent.parent
    return isinstance(parent, _ROW_SOURCES) and child.arg_key == "this"


def _ctes_in_scope(node: exp.Expression) -> set[str]:
    """Lower-case names of the CTEs a table reference at ``node`` can see."""
    names: set[str] = set()
    child: Any = node
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            ctes = parent.expressions
            if parent.args.get("recursive"):
                names.update(c.alias_or_name.lower() for c in ctes)
            else:
                for cte in ctes:
                    if cte is child:
                        break
                    names.add(cte.alias_or_name.lower())
        else:
            with_ = parent.args.get("with_") or parent.args.get("with")
            if isinstance(with_, exp.With) and with_ is not child:
                names.update(c.alias_or_name.lower() for c in with_.expressions)
        child, parent = parent, parent.parent
    return names


def _looks_like_path(name: str) -> bool:
    return any(ch in name for ch in "/\\:*?~") or "." in name


def _inside_cte(node: exp.Expression) -> bool:
    return node.find_ancestor(exp.CTE) is not None


class _Checker:
    """Walks one parsed statement and collects issues (at most one per distinct message)."""

    def __init__(
        self,
        tables: Iterable[str] | None,
        dialect: str | None = None,
        functions: FunctionCatalog | None = None,
    ) -> None:
        self.dialect = dialect
        self.functions = functions
        self.allowed: set[str] | None = None
        self.allowed_display: list[str] = []
        if isinstance(tables, str):
            tables = [tables]
        if tables is not None:
            self.allowed_display = sorted({str(t) for t in tables}, key=str.lower)
            self.allowed = {t.lower() for t in self.allowed_display}
        self.issues: list[Issue] = []
        self.unknown: list[str] = []

    def add(self, code: str, message: str) -> None:
        if all(i.message != message for i in self.issues):
            self.issues.append(Issue(code, message))

    def check(self, tree: exp.Expression) -> list[Issue]:
        for node in tree.walk():
            if node is tree:
                continue
            if isinstance(node, _SIDE_EFFECT_NODES):
                self._side_effect(node)
            elif isinstance(node, exp.Into):
                self.add(
                    "select_into",
                    "SELECT ... INTO creates a table or writes a file; remove the INTO clause "
                    "and just SELECT the rows.",
                )
            elif isinstance(node, exp.Lock):
                self.add(
                    "row_lock",
                    "Row-locking clauses (FOR UPDATE / FOR SHARE ...) are not allowed; remove "
                    "the FOR ... clause, a read-only query needs no locks.",
                )
            elif isinstance(node, exp.Func):
                self._function(node)
            elif isinstance(node, exp.Table):
                self._table(node)
        if self.unknown:
            self._unknown_tables()
        return self.issues

    def _side_effect(self, node: exp.Expression) -> None:
        name = _statement_name(node)
        if _inside_cte(node):
            self.add(
                "data_modifying_cte",
                f"A CTE may not contain {name}; every WITH part must be a plain SELECT. "
                + _QUERY_HINT,
            )
        else:
            self.add(
                "forbidden_statement",
                f"Only read-only queries may run, and this one contains {name}. " + _QUERY_HINT,
            )

    def _function(self, node: exp.Func) -> None:
        names = function_names(node)
        verdict = _FORBIDDEN_CLASSES.get(type(node)) or forbidden_function(names)
        shown = _display_name(node)
        if verdict is not None:
            code, reason = verdict
            never = next(filter(None, map(never_reason, sorted(names))), None)
            instead = (
                f"{never[1]} instead"
                if never
                else "query only the database's tables with ordinary functions"
            )
            self.add(code, f"The function {shown}() is not allowed: it {reason}; {instead}.")
        elif _is_table_function_position(node) and not names & rules.SAFE_TABLE_FUNCTIONS:
            self.add(
                "forbidden_function",
                f"The table function {shown}() is not allowed in FROM; read from the "
                "database's tables (value generators such as range, generate_series and "
                "unnest are fine).",
            )
        elif self.functions is not None:
            self._catalog(node, shown)

    def _catalog(self, node: exp.Func, shown: str) -> None:
        """The engine's own allow-list: a call by name must be on it; sqlglot's built-in
        function classes whose names the engine does not list are SQL syntax (CAST, COALESCE,
        EXTRACT ...) and checked by their parts."""
        catalog = self.functions
        assert catalog is not None
        if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
            verdict = catalog_refusal(node.name, catalog)
        else:
            names = _sql_names(type(node))
            if names & catalog.known and not names & catalog.allowed:
                verdict = catalog_refusal(shown, catalog)
            else:
                written = self._written_name(node)
                if written is None or written in catalog.allowed:
                    return
                if written not in catalog.known and never_reason(written) is None:
                    return  # syntax (CAST, COALESCE ...), or the engine's own error later
                verdict = catalog_refusal(written, catalog)
        if verdict is not None:
            self.add(*verdict)

    def _written_name(self, node: exp.Func) -> str | None:
        """The function name the SQL to run calls for ``node``, where the dialect writes the
        class its own way (``CURRENT_VERSION`` as SQLite's ``SQLITE_VERSION()``); else None."""
        if not _renamed_by(self.dialect, type(node)):
            return None
        try:
            with _quiet_sqlglot():
                text = node.sql(dialect=self.dialect, comments=False)
        except Exception:  # noqa: BLE001 - not generated: the whole query fails later
            return None
        head = _CALL_HEAD.match(text)
        return head.group(1).lower() if head else None

    def _table(self, node: exp.Table) -> None:
        if node.arg_key == "indexed" or node.this is None or isinstance(node.this, exp.Func):
            return  # an index hint, ROWS FROM (...) or a table function: checked on their own
        if not isinstance(node.this, exp.Identifier):
            text = node.this.sql(dialect=self.dialect)
            if not isinstance(node.this, exp.Placeholder) and (
                text.startswith("@") or _looks_like_path(text)
            ):
                self.add(
                    "file_access",
                    f"'{text}' reads staged or external files, which is not allowed; read "
                    "from the database's tables.",
                )
            else:
                self.add(
                    "table_reference",
                    f"'{text}' is not a table name; name the table directly (one of the "
                    "allowed tables, or a CTE).",
                )
            return
        name = node.name
        lowered = name.lower()
        qualified = ".".join(p.name.lower() for p in node.parts)
        if not node.args.get("db") and lowered in _ctes_in_scope(node):
            return
        if _looks_like_path(name):
            self.add(
                "file_access",
                f"'{name}' looks like a file or URL, and scanning files is not allowed; "
                "read from the database's tables.",
            )
            return
        if lowered in rules.SENSITIVE_TABLES or qualified in rules.SENSITIVE_TABLES:
            self.add(
                "system_table",
                f"The system table {qualified} exposes secrets, settings or other sessions "
                "and may not be read; query the database's own tables.",
            )
            return
        if self.allowed is None or self._allowed(node, lowered, qualified):
            return
        shown = ".".join(p.name for p in node.parts)
        if shown not in self.unknown:
            self.unknown.append(shown)

    def _allowed(self, node: exp.Table, lowered: str, qualified: str) -> bool:
        assert self.allowed is not None
        if qualified in self.allowed:
            return True
        qualifiers = [p.name.lower() for p in node.parts[:-1]]
        if len(qualifiers) > 1 or (qualifiers and qualifiers[0] not in rules.DEFAULT_SCHEMAS):
            return False
        return lowered in self.allowed or any(
            f"{schema}.{lowered}" in self.allowed for schema in rules.DEFAULT_SCHEMAS
        )

    def _unknown_tables(self) -> None:
        listed = repr(self.unknown[0])
        if len(self.unknown) > 1:
            listed += "; also unknown: " + ", ".join(repr(u) for u in self.unknown[1:])
        shown = ", ".join(self.allowed_display[:60]) or "(none)"
        if len(self.allowed_display) > 60:
            shown += f" (and {len(self.allowed_display) - 60} more)"
        message = f"Unknown table {listed}; tables you may use: {shown}."
        for u in self.unknown:
            close = difflib.get_close_matches(u.split(".")[-1], self.allowed_display, n=1)
            if close:
                message += f" Did you mean '{close[0]}' instead of '{u}'?"
        message += " Use only these tables; define helper results as CTEs (WITH name AS (...))."
        self.add("unknown_table", message)


def validate_sql(
    sql: str,
    dialect: str | None,
    tables: Iterable[str] | None = None,
    functions: FunctionCatalog | None = None,
) -> Validation:
    """Checks that ``sql`` is one read-only statement over the allowed tables and functions.

    Args:
        sql: The SQL text, as the model wrote it (comments and a trailing ``;`` are fine).
        dialect: The connection's dialect (``"duckdb"``, ``"sqlite"``, ``"postgres"``,
            ``"mysql"``, ... or a SQLAlchemy name such as ``"postgresql"``); None parses
            generic SQL.
        tables: The table names the query may read (optionally ``schema.table``); None
            switches the allow-list off.
        functions: The functions the engine's catalog allows
            (:class:`~cadet_magic.sql.functions.FunctionCatalog`); every function called by
            name must be on it, besides passing the fixed rules. None: the fixed rules only.

    Returns:
        A :class:`Validation`: ``ok`` and no ``issues`` when the query may run, with
        ``sql`` the text to run (generated from the checked tree, comments dropped);
        otherwise ``ok`` False and the issues, the first one the most important
        (``multiple_statements``, ``parse_error``, ``forbidden_statement``, then what was
        found inside the tree, ``unknown_table`` last).

    Example:
        >>> v = validate_sql("SELECT * FROM orders_2024", "duckdb", ["customers", "orders"])
        >>> v.ok, v.issues[0].code
        (False, 'unknown_table')
        >>> print(v.issues[0].message)  # doctest: +NORMALIZE_WHITESPACE
        Unknown table 'orders_2024'; tables you may use: customers, orders. Did you mean
        'orders' instead of 'orders_2024'? Use only these tables; define helper results as
        CTEs (WITH name AS (...)).
        >>> validate_sql("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "postgres").ok
        False
    """
    read = resolve_dialect(dialect)
    try:
        statements = parse_statements(sql, read)
    except Exception as e:  # noqa: BLE001 - a parser crash is still a refusal, never an escape
        issue = _not_a_query(sql, read) or Issue("parse_error", _parse_error_message(e, read))
        return Validation(False, [issue], sql)
    if not statements:
        return Validation(
            False, [Issue("parse_error", f"The SQL is empty (only comments). {_QUERY_HINT}")], sql
        )
    if len(statements) > 1:
        kinds = ", ".join(_statement_name(s) for s in statements)
        return Validation(
            False,
            [
                Issue(
                    "multiple_statements",
                    f"Write exactly one statement; found {len(statements)} ({kinds}). "
                    "Combine the steps into one query with CTEs (WITH step AS (...) SELECT ...).",
                )
            ],
            sql,
        )
    tree = statements[0]
    if not _is_query(tree):
        if isinstance(tree, (exp.Query, *_SIDE_EFFECT_NODES)) or isinstance(
            tree, tuple(_STATEMENT_WORDS)
        ):
            message = f"Only read-only queries may run; this is {_statement_name(tree)}. "
            return Validation(False, [Issue("forbidden_statement", message + _QUERY_HINT)], sql)
        not_a_query = _not_a_query(sql, read)
        if not_a_query is not None:
            return Validation(False, [not_a_query], sql)
        return Validation(
            False,
            [
                Issue(
                    "parse_error",
                    f"This is not a SQL statement (it parses as a bare {tree.key} expression; "
                    f"check the spelling of SELECT and FROM). {_QUERY_HINT}",
                )
            ],
            sql,
        )
    issues = _Checker(tables, read, functions).check(tree)
    if issues:
        return Validation(False, issues, sql)
    try:
        with _quiet_sqlglot():
            text = tree.sql(dialect=read, comments=False)
    except Exception as e:  # noqa: BLE001 - cannot be generated safely: refuse
        return Validation(
            False,
            [Issue("parse_error", f"The SQL cannot be handled ({e}). Simplify it. {_QUERY_HINT}")],
            sql,
        )
    return Validation(True, [], text)


def renamed_functions(sql: str, dialect: str | None) -> dict[str, str]:
    """Functions the checked SQL spells differently from the model: ``{RUN_AS: WRITTEN}``.

    What runs is regenerated from the checked tree, and sqlglot writes some functions in the
    dialect's own spelling (``median(x)`` becomes ``PERCENTILE_CONT(x, 0.5)`` for SQLite). When
    the engine then rejects a function, the diagnosis names the one the model wrote.

    Example:
        >>> renamed_functions("SELECT median(amount) FROM orders", "sqlite")
        {'PERCENTILE_CONT': 'MEDIAN'}
        >>> renamed_functions("SELECT max(amount) FROM orders", "sqlite")
        {}
    """
    read = resolve_dialect(dialect)
    try:
        with _quiet_sqlglot():
            trees = parse_statements(sql, read)
    except Exception:  # noqa: BLE001 - nothing parsed, nothing renamed
        return {}
    written = sql.upper()
    renamed: dict[str, str] = {}
    for tree in trees:
        for node in tree.find_all(exp.Func):
            if isinstance(node, exp.Anonymous):
                continue
            try:
                with _quiet_sqlglot():
                    text = node.sql(dialect=read, comments=False)
            except Exception:  # noqa: BLE001
                continue
            head = text.split("(", 1)[0].strip().upper()
            name = node.sql_name().upper()
            if head and head.replace("_", "").isalnum() and head != name and head not in written:
                renamed[head] = name
    return renamed
