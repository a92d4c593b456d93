"""Which functions a query may call: the engine's own catalog, decided here (stdlib only).

The engines know which of their functions cannot change anything: PostgreSQL marks
them ``immutable`` or ``stable`` in ``pg_proc.provolatile`` (and forbids writes inside
them), DuckDB reports a ``stability`` in ``duckdb_functions()``, SQLite flags its
deterministic built-ins in ``pragma_function_list``. The edge (``cadet_magic.db.functions``)
reads those rows; this module turns them into a :class:`FunctionCatalog`:

- allowed: the engine's state-free functions, plus :data:`HARMLESS_VOLATILE` (random
  numbers, the clock, random UUIDs), minus
- never: functions that run SQL text, read or write files or large objects, touch
  sequences, locks, replication, other sessions, settings or the server's administration,
  or report what is not the data (the server's address and version, the roles and their
  memberships and privileges, the definitions of views, functions, triggers and constraints:
  what a result or an error would carry to the model), whatever their volatility
  (:func:`never_reason`).

:func:`catalog_refusal` is what the safety check asks for every function it meets. The tables
(:data:`NEVER`, :data:`ENGINE_NEVER`, :data:`NEVER_PREFIXES`, :data:`HARMLESS_VOLATILE`) are in
:mod:`cadet_magic.sql.function_rules`.

Example:
    >>> cat = FunctionCatalog.from_postgres(
    ...     [("lower", "i", "f"), ("now", "s", "f"), ("nextval", "v", "f"),
    ...      ("query_to_xml", "s", "f"), ("random", "v", "f")])
    >>> sorted(cat.allowed)
    ['lower', 'now', 'random']
    >>> catalog_refusal("nextval", cat)[0]
    'forbidden_function'
    >>> catalog_refusal("lower", cat) is None
    True
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from cadet_magic.sql import rules
from cadet_magic.sql.function_rules import (
    ENGINE_NEVER,
    FILE_ACCESS,
    HARMLESS_VOLATILE,
    NEVER,
    NEVER_PREFIXES,
)


def never_reason(name: str, engine: str | None = None) -> tuple[str, str] | None:
    """``(what it does, what to use instead)`` when ``name`` is never allowed (on ``engine``,
    with :data:`ENGINE_NEVER`), else None.

    Example:
        >>> never_reason("pg_read_file")[0]
        'reads or writes files or large objects'
        >>> never_reason("lower") is None, never_reason("collect_list") is None
        (True, True)
        >>> never_reason("collect_list", "spark")[0].split(" (")[0]
        'collects every value of a group into one buffer in one JVM, which no Spark limit bounds'
    """
    name = name.lower()
    found = ENGINE_NEVER.get(engine or "", {}).get(name) or NEVER.get(name)
    if found is not None:
        return found
    for prefix, why in NEVER_PREFIXES:
        if name.startswith(prefix):
            return why
    return None


@dataclass(frozen=True)
class FunctionCatalog:
    """The functions of one database a query may call, read from its engine's catalog.

    Attributes:
        engine: the sqlglot dialect ("postgres", "duckdb", "sqlite").
        allowed: lower-case names a query may call.
        known: every lower-case function name the engine has (to tell a refused function
            from one that does not exist).
    """

    engine: str
    allowed: frozenset[str]
    known: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def build(cls, engine: str, safe: Iterable[str], known: Iterable[str]) -> FunctionCatalog:
        """The catalog from the engine's state-free names and all its names."""
        known = frozenset(n.lower() for n in known)
        safe = {n.lower() for n in safe} | (HARMLESS_VOLATILE & known)
        return cls(engine, frozenset(n for n in safe if never_reason(n, engine) is None), known)

    @classmethod
    def from_postgres(cls, rows: Iterable[tuple[str, str, str]]) -> FunctionCatalog:
        """From ``(proname, provolatile, prokind)`` rows of ``pg_proc``: a name is safe when
        every overload of it is an immutable or stable function, aggregate or window function."""
        known: set[str] = set()
        unsafe: set[str] = set()
        for name, volatility, kind in rows:
            name = name.lower()
            known.add(name)
            if volatility not in ("i", "s") or kind not in ("f", "a", "w"):
                unsafe.add(name)
        return cls.build("postgres", known - unsafe, known)

    @classmethod
    def from_duckdb(
        cls, rows: Iterable[tuple[str, str, str | None, bool | None, bool | None]]
    ) -> FunctionCatalog:
        """From ``(function_name, function_type, stability, has_side_effects, internal)`` rows
        of ``duckdb_functions()``: scalar, aggregate and window functions that are consistent
        and free of side effects, the engine's own macros, and table functions that only
        generate values (``range``, ``unnest`` ...; file readers and ``query()`` are not)."""
        known: set[str] = set()
        safe: set[str] = set()
        unsafe: set[str] = set()
        for name, kind, stability, side_effects, internal in rows:
            name = name.lower()
            known.add(name)
            if kind in ("scalar", "aggregate", "window"):
                ok = stability in ("CONSISTENT", "CONSISTENT_WITHIN_QUERY") and not side_effects
            elif kind == "macro":
                ok = bool(internal)
            elif kind in ("table", "table_macro"):
                if name in rules.SAFE_TABLE_FUNCTIONS:
                    safe.add(name)
                continue  # only callable in FROM, where the check allows value generators only
            else:
                ok = False
            (safe if ok else unsafe).add(name)
        return cls.build("duckdb", safe - unsafe, known)

    @classmethod
    def from_sqlite(cls, rows: Iterable[tuple[str, int, str, int]]) -> FunctionCatalog:
        """From ``(name, builtin, type, flags)`` rows of ``pragma_function_list``: built-in
        aggregates and window functions, and built-in scalars flagged deterministic."""
        deterministic = 0x800
        known: set[str] = set()
        safe: set[str] = set()
        unsafe: set[str] = set()
        for name, builtin, kind, flags in rows:
            name = name.lower()
            known.add(name)
            ok = bool(builtin) and (kind in ("a", "w") or bool(flags & deterministic))
            (safe if ok else unsafe).add(name)
        return cls.build("sqlite", safe - unsafe, known)

    @classmethod
    def from_mysql(cls, builtin: Iterable[str], stored: Iterable[str] = ()) -> FunctionCatalog:
        """From the topic names of MySQL/MariaDB's help tables (``mysql.help_topic``: the
        server's built-in functions, operators and statements) and the names of stored and
        loadable functions (``information_schema.ROUTINES``, ``mysql.func``): built-ins are
        allowed unless never-listed; stored and loadable functions are known but not allowed
        (they may write, sleep, lock or set variables).

        Example:
            >>> cat = FunctionCatalog.from_mysql(["SUBSTRING\\\\_INDEX", "IF Function", "SLEEP"],
            ...                                  ["add_order"])
            >>> sorted(cat.allowed), sorted(cat.known)
            (['if', 'substring_index'], ['add_order', 'if', 'sleep', 'substring_index'])
        """
        names: set[str] = set()
        for topic in builtin:
            name = str(topic).replace("\\_", "_").strip()
            if name.lower().endswith(" function"):
                name = name[: -len(" function")].strip()
            if name.replace("_", "").isalnum():
                names.add(name.lower())
        own = {str(n).lower() for n in stored}
        return cls.build("mysql", names - own, names | own)


def _instead(name: str, catalog: FunctionCatalog) -> str:
    close = difflib.get_close_matches(name, sorted(catalog.allowed), n=3, cutoff=0.75)
    return f" Did you mean {', '.join(c + '()' for c in close)}?" if close else ""


def catalog_refusal(name: str, catalog: FunctionCatalog) -> tuple[str, str] | None:
    """``(code, message)`` when a call of ``name`` is refused on ``catalog``, else None.

    Example:
        >>> cat = FunctionCatalog.from_sqlite([("upper", 1, "s", 0x800), ("random", 1, "s", 0)])
        >>> catalog_refusal("upper", cat), catalog_refusal("random", cat)
        (None, None)
        >>> print(catalog_refusal("uper", cat)[1])
        uper() is not a function of this sqlite database. Did you mean upper()?
        >>> print(catalog_refusal("load_extension", cat)[1])
        The function load_extension() is not allowed: it loads code into the engine; use the engine's built-in functions instead.
    """
    lowered = name.lower()
    if lowered in catalog.allowed:  # never-listed names are not in it
        return None
    never = never_reason(lowered, catalog.engine)
    if never is not None:
        return (
            "file_access" if never is FILE_ACCESS else "forbidden_function",
            f"The function {name}() is not allowed: it {never[0]}; {never[1]} instead.",
        )
    if lowered in catalog.known:
        return (
            "forbidden_function",
            f"The function {name}() is not allowed: {catalog.engine} does not mark it as free of "
            "side effects (it may change data, sequences or the session). Use deterministic "
            "functions only (random() and now() are fine)." + _instead(lowered, catalog),
        )
    return (
        "unknown_function",
        f"{name}() is not a function of this {catalog.engine} database."
        + (_instead(lowered, catalog) or " Use one of its built-in functions."),
    )
