"""Which functions a query may call: the engine's own catalog, decided here (stdlib only).

The engines know which of their functions cannot change anything: PostgreSQL marks
them ``immutable`` or ``stable`` in ``pg_proc.provolatile`` (and forbids writes inside
them), DuckDB reports a ``stability`` in ``duckdb_functions()``, SQLite flags its
deterministic built-ins in ``pragma_function_list``. The edge (``cadet_magic.db.function_catalogs``)
reads those rows; this module turns them into a :class:`FunctionCatalog`:

- allowed: the engine's own state-free functions, plus :data:`HARMLESS_VOLATILE` (random
  numbers, the clock, random UUIDs), minus
- never: functions that run SQL text, read or write files or large objects, touch
  sequences, locks, replication, other sessions, settings or the server's administration,
  or report what is not the data (the server's address and version, the roles and their
  memberships and privileges, the definitions of views, functions, triggers and constraints:
  what a result or an error would carry to the model), whatever their volatility
  (:func:`never_reason`);
- defined: functions the database or the connection defines itself (a DuckDB file's macros,
  a PostgreSQL function of the database's own schemas, an application-defined SQLite function,
  a MySQL stored function, a Spark UDF): code that is not the engine's, which no agent's query
  runs unless the user allowed it by name (:meth:`FunctionCatalog.allowing`). Where the engine
  binds its own function first when the database defines one of the same name (DuckDB, with
  the search path its runner sets) such a name is ``shadowed``: a call of it stays the engine's.

:func:`catalog_refusal` is what the safety check asks for every function it meets. The tables
come first (:data:`NEVER`, :data:`ENGINE_NEVER`, :data:`NEVER_PREFIXES`, each name mapped to
``(what it does, what to use instead)``, the words the refusal and the model's feedback use;
:data:`HARMLESS_VOLATILE`), then the decision (:func:`never_reason`, :class:`FunctionCatalog`,
:func:`catalog_refusal`).

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
    >>> NEVER["pg_read_file"][0], "random" in HARMLESS_VOLATILE
    ('reads or writes files or large objects', True)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cadet_magic.sql import rules
from cadet_magic.sql.pg_catalog_lookups import CATALOG_NAMES

#: Volatile functions that only produce a value: random numbers, the clock, random UUIDs.
HARMLESS_VOLATILE: frozenset[str] = frozenset(
    {
        "random",
        "rand",
        "randomblob",
        "random_normal",
        "clock_timestamp",
        "timeofday",
        "now",
        "statement_timestamp",
        "transaction_timestamp",
        "current_timestamp",
        "current_date",
        "current_time",
        "localtime",
        "localtimestamp",
        "get_current_time",
        "get_current_timestamp",
        "gen_random_uuid",
        "uuid",
        "uuidv4",
        "uuidv7",
        "uuid_generate_v4",
    }
)

_SQL_TEXT = ("runs SQL given as text", "write that SQL into this query itself")
FILE_ACCESS = ("reads or writes files or large objects", "read from the database's tables")
_SEQUENCE = (
    "reads or advances a sequence",
    "number rows with row_number() OVER (ORDER BY ...)",
)
_LOCKS = ("takes or releases locks", "a read-only query needs no locks; remove the call")
_REPLICATION = ("touches replication or the write-ahead log", "query the database's tables")
_SESSIONS = (
    "reads or signals other sessions or the transaction's identity",
    "query the database's tables",
)
_SETTINGS = ("reads or changes settings", "write the value you need as a literal")
_ADMIN = ("administers the server", "query the database's tables")
_EXTENSION = ("loads code into the engine", "use the engine's built-in functions")
_SLEEP = ("sleeps or burns server time", "remove the call")
_LOG = ("writes to the engine's log", "remove the call")
#: Decided one by one on PostgreSQL 15's stable functions (and their MySQL/MariaDB and Spark
#: namesakes): none answers a question about the data, and each would carry the server's
#: address, version, roles or catalog definitions into a result or an error the model reads.
_SERVER_INFO = (
    "reports the server's address, version, roles or catalog definitions, not the data",
    "query the database's tables",
)

#: Names never allowed, with (what the function does, what to use instead).
NEVER: dict[str, tuple[str, str]] = {
    # ``glob`` is also SQLite's GLOB operator; DuckDB's file glob is a table function, which
    # the DuckDB catalog allows only for value generators anyway.
    **{n: FILE_ACCESS for n in rules.FILE_FUNCTIONS if n != "glob"},
    **dict.fromkeys(
        (
            "query",
            "query_table",
            "query_to_xml",
            "query_to_xmlschema",
            "query_to_xml_and_xmlschema",
            "cursor_to_xml",
            "cursor_to_xmlschema",
            "table_to_xml",
            "table_to_xmlschema",
            "table_to_xml_and_xmlschema",
            "schema_to_xml",
            "schema_to_xmlschema",
            "schema_to_xml_and_xmlschema",
            "database_to_xml",
            "database_to_xmlschema",
            "database_to_xml_and_xmlschema",
            "ts_stat",
            "crosstab",
            "crosstab2",
            "crosstab3",
            "crosstab4",
            "connectby",
            "json_execute_serialized_sql",
            "json_serialize_sql",
            "json_serialize_plan",
            "json_deserialize_sql",
            "postgres_query",
            "postgres_execute",
            "mysql_query",
            "mysql_execute",
            "sqlite_query",
            "pg_prepared_statement",
            "xp_cmdshell",
            "sql_auto_complete",
        ),
        _SQL_TEXT,
    ),
    **dict.fromkeys(
        (
            "loread",
            "lowrite",
            "pg_available_extension_versions",
            "pg_available_extensions",
            "pg_extension_update_paths",
            "pg_relation_filepath",
            "pg_relation_filenode",
            "pg_filenode_relation",
            "pg_tablespace_location",
            "pg_tablespace_databases",
            "pg_current_logfile",
            "writefile",
            "readfile",
            "read_duckdb",
            "duckdb_temporary_files",
        ),
        FILE_ACCESS,
    ),
    **dict.fromkeys(
        (
            "nextval",
            "currval",
            "lastval",
            "setval",
            "next_value_for",
            "nextvaluefor",
            "pg_sequence_last_value",
            "pg_sequence_parameters",
        ),
        _SEQUENCE,
    ),
    **dict.fromkeys(
        ("pg_lock_status", "pg_blocking_pids", "pg_safe_snapshot_blocking_pids", "get_lock"),
        _LOCKS,
    ),
    **dict.fromkeys(
        (
            "pg_backend_pid",
            "pg_current_xact_id",
            "pg_current_xact_id_if_assigned",
            "pg_current_snapshot",
            "pg_export_snapshot",
            "pg_notify",
            "pg_listening_channels",
            "pg_notification_queue_usage",
            "pg_terminate_backend",
            "pg_cancel_backend",
            "current_connection_id",
            "current_transaction_id",
            "current_query",
            "current_query_id",
            "changes",
            "total_changes",
            "last_insert_rowid",
        ),
        _SESSIONS,
    ),
    **dict.fromkeys(
        (
            "current_setting",
            "set_config",
            "setseed",
            "getenv",
            "pg_show_all_settings",
            "pg_show_all_file_settings",
            "pg_settings_get_flags",
            "pg_hba_file_rules",
            "pg_ident_file_mappings",
            "pg_config",
            "pg_conf_load_time",
            "duckdb_settings",
            "duckdb_secrets",
            "which_secret",
            "secret",
            "sqlite_compileoption_get",
            "sqlite_compileoption_used",
        ),
        _SETTINGS,
    ),
    **dict.fromkeys(
        (
            "pg_reload_conf",
            "pg_rotate_logfile",
            "pg_promote",
            "pg_switch_wal",
            "pg_create_restore_point",
            "pg_import_system_collations",
            "pg_log_backend_memory_contexts",
            "pg_postmaster_start_time",
            "pg_control_checkpoint",
            "pg_control_system",
            "pg_control_init",
            "pg_control_recovery",
            "pg_get_publication_tables",
            "pg_replication_origin_oid",
            "pg_get_replication_slots",
            "checkpoint",
            "force_checkpoint",
            "enable_logging",
            "disable_logging",
            "truncate_duckdb_logs",
            "enable_profiling",
            "disable_profiling",
            "vector_type",
            "stats",
            "error",
        ),
        _ADMIN,
    ),
    **dict.fromkeys(("load_extension", "fts3_tokenizer"), _EXTENSION),
    **dict.fromkeys(("write_log", "sqlite_log"), _LOG),
    **{n: _SLEEP for n, why in rules.OTHER_FUNCTIONS.items() if "sleep" in why or "burns" in why},
    **dict.fromkeys(("sleep_ms",), _SLEEP),
    # MySQL / MariaDB
    **dict.fromkeys(("release_lock", "release_all_locks", "is_free_lock", "is_used_lock"), _LOCKS),
    **dict.fromkeys(
        (
            "master_pos_wait",
            "master_gtid_wait",
            "source_pos_wait",
            "wait_for_executed_gtid_set",
            "wait_until_sql_thread_after_gtids",
            "wsrep_sync_wait_upto_gtid",
        ),
        _SLEEP,
    ),
    **dict.fromkeys(
        (
            "connection_id",
            "last_insert_id",
            "row_count",
            "found_rows",
            "binlog_gtid_pos",
            "wsrep_last_seen_gtid",
            "wsrep_last_written_gtid",
        ),
        _SESSIONS,
    ),
    **dict.fromkeys(("des_encrypt", "des_decrypt"), FILE_ACCESS),
    **dict.fromkeys(
        (
            # address and version
            "inet_server_addr",
            "inet_server_port",
            "inet_client_addr",
            "inet_client_port",
            "version",
            # roles, memberships, privileges
            "current_user",
            "session_user",
            "user",
            "system_user",
            "current_role",
            "getpgusername",
            "pg_has_role",
            "pg_get_userbyid",
            "to_regrole",
            "row_security_active",
            "has_any_column_privilege",
            "has_column_privilege",
            "has_database_privilege",
            "has_foreign_data_wrapper_privilege",
            "has_function_privilege",
            "has_language_privilege",
            "has_parameter_privilege",
            "has_schema_privilege",
            "has_sequence_privilege",
            "has_server_privilege",
            "has_table_privilege",
            "has_tablespace_privilege",
            "has_type_privilege",
            "acldefault",
            "aclexplode",
            "aclcontains",
            "aclinsert",
            "aclremove",
            "makeaclitem",
            "shobj_description",
            # catalog definitions and object identities (pg_get_* is a prefix below)
            "pg_describe_object",
            "pg_identify_object",
            "pg_identify_object_as_address",
            "pg_options_to_table",
            "pg_cursor",
            "pg_my_temp_schema",
            "pg_is_other_temp_schema",
            "pg_trigger_depth",
            "pg_visible_in_snapshot",
            "obj_description",
            "col_description",
            "pg_database_size",
            "pg_tablespace_size",
            "pg_collation_actual_version",
            "pg_database_collation_actual_version",
            "pg_jit_available",
            "pg_last_committed_xact",
            "current_schemas",
        ),
        _SERVER_INFO,
    ),
}

_COLLECTS = (
    "collects every value of a group into one buffer in one JVM, which no Spark limit bounds "
    "(a large group stops the Spark driver or the Connect server)",
    "use count(), approx_count_distinct() or approx_percentile(), or select the rows themselves",
)
#: Per engine: names never allowed on that engine only (the same functions are bounded by the
#: other engines' memory limits or spill to disk).
ENGINE_NEVER: dict[str, dict[str, tuple[str, str]]] = {
    "spark": dict.fromkeys(
        (
            "collect_list",
            "collect_set",
            "array_agg",
            "listagg",
            "string_agg",
            "percentile",
            "percentile_cont",
            "percentile_disc",
            "median",
            "mode",
        ),
        _COLLECTS,
    ),
}

#: Name prefixes never allowed (families of the functions above).
NEVER_PREFIXES: tuple[tuple[str, tuple[str, str]], ...] = (
    ("dblink", ("runs SQL on another connection", "query this database's tables")),
    ("read_", FILE_ACCESS),
    ("pg_read_", FILE_ACCESS),
    ("pg_ls_", FILE_ACCESS),
    ("pg_file_", FILE_ACCESS),
    ("pg_stat_file", FILE_ACCESS),
    ("lo_", FILE_ACCESS),
    ("parquet_", FILE_ACCESS),
    ("pg_advisory", _LOCKS),
    ("pg_try_advisory", _LOCKS),
    ("pg_stat_", _SESSIONS),
    ("txid_", _SESSIONS),
    ("pg_xact_", _SESSIONS),
    ("pg_snapshot_", _SESSIONS),
    ("pg_replication_", _REPLICATION),
    ("pg_logical_", _REPLICATION),
    ("pg_create_", _REPLICATION),
    ("pg_drop_", _REPLICATION),
    ("pg_copy_", _REPLICATION),
    ("pg_wal", _REPLICATION),
    ("pg_current_wal", _REPLICATION),
    ("pg_last_wal", _REPLICATION),
    ("pg_walfile", _REPLICATION),
    ("pg_backup_", _ADMIN),
    ("pg_is_in_", _ADMIN),
    ("pg_get_wal", _REPLICATION),
    ("pg_sleep", _SLEEP),
    ("pg_get_", _SERVER_INFO),
    ("to_reg", CATALOG_NAMES),
    ("pg_event_trigger_", _SERVER_INFO),
    ("duckdb_", ("reads the engine's internals", "query the database's tables")),
    ("pragma_", ("reads the engine's internals", "query the database's tables")),
    ("sqlite_", ("reads the engine's internals", "query the database's tables")),
    ("system$", _ADMIN),
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
        defined: lower-case names of the functions the database or the connection defines
            (not the engine's own), never allowed unless ``permitted``.
        shadowed: of ``defined``, the names the engine also has and binds to its own function
            in an agent's query (a call of one runs the engine's function).
        permitted: of ``defined``, the names the user allowed by name.
        operators: the symbols of the operators the database defines (PostgreSQL), refused
            in a query's text (:mod:`cadet_magic.sql.checks.defined_operators`).

    Example:
        >>> cat = FunctionCatalog.from_duckdb([("lower", "scalar", "CONSISTENT", False, True),
        ...     ("lower", "macro", None, False, False), ("fmt", "macro", None, False, False)])
        >>> sorted(cat.allowed), sorted(cat.defined), sorted(cat.shadowed)
        (['lower'], ['fmt', 'lower'], ['lower'])
        >>> cat.runs_defined(["lower", "fmt"]), cat.runs_defined(["lower"], shadows=True)
        (['fmt'], ['lower'])
        >>> sorted(cat.allowing(["Fmt"]).allowed), cat.allowing(["fmt"]).runs_defined(["fmt"])
        (['fmt', 'lower'], [])
    """

    engine: str
    allowed: frozenset[str]
    known: frozenset[str] = field(default_factory=frozenset)
    defined: frozenset[str] = field(default_factory=frozenset)
    shadowed: frozenset[str] = field(default_factory=frozenset)
    permitted: frozenset[str] = field(default_factory=frozenset)
    operators: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def build(
        cls,
        engine: str,
        safe: Iterable[str],
        known: Iterable[str],
        defined: Iterable[str] = (),
        shadowed: Iterable[str] = (),
        operators: Iterable[str] = (),
    ) -> FunctionCatalog:
        """The catalog from the engine's own state-free names, all its names, and the names
        the database defines (those of them the engine binds to its own: ``shadowed``), and
        the symbols of the operators it defines."""
        defined = frozenset(n.lower() for n in defined)
        shadowed = frozenset(n.lower() for n in shadowed) & defined
        known = frozenset(n.lower() for n in known) | defined
        safe = {n.lower() for n in safe} | (HARMLESS_VOLATILE & known)
        safe -= defined - shadowed
        allowed = frozenset(n for n in safe if never_reason(n, engine) is None)
        return cls(engine, allowed, known, defined, shadowed, operators=frozenset(operators))

    def allowing(self, names: Iterable[str]) -> FunctionCatalog:
        """A copy in which the functions the database defines named in ``names`` may be called
        (the user's choice, by name; a never-listed name stays refused)."""
        wanted = {n.lower() for n in names} & self.defined
        wanted = {n for n in wanted if never_reason(n, self.engine) is None}
        if not wanted:
            return self
        return replace(
            self, allowed=self.allowed | wanted, permitted=self.permitted | frozenset(wanted)
        )

    def runs_defined(self, names: Iterable[str], *, shadows: bool = False) -> list[str]:
        """The names among ``names`` (as the engine binds them) that would run a function the
        database defines and the user did not allow, in order, once each; with ``shadows`` the
        shadowed names count too (where the engine binds the database's own function first,
        as inside a DuckDB view)."""
        found: list[str] = []
        for name in names:
            lowered = name.lower()
            if lowered not in self.defined or lowered in self.permitted or lowered in found:
                continue
            if lowered in self.shadowed and not shadows:
                continue
            found.append(lowered)
        return found

    @classmethod
    def from_postgres(
        cls, rows: Iterable[Sequence[Any]], operators: Iterable[str] = ()
    ) -> FunctionCatalog:
        """From ``(proname, provolatile, prokind[, own])`` rows of ``pg_proc``: a name is safe
        when every overload of it is an immutable or stable function, aggregate or window
        function; ``own`` (default true) is false for a function of the database's own schemas
        that no extension installed: the name is then defined by the database, and refused even
        where ``pg_catalog`` has one too (PostgreSQL may pick the database's overload).
        ``operators``: the symbols of the operators the database defines."""
        known: set[str] = set()
        unsafe: set[str] = set()
        defined: set[str] = set()
        for name, volatility, kind, *own in rows:
            name = name.lower()
            known.add(name)
            if own and not own[0]:
                defined.add(name)
            elif volatility not in ("i", "s") or kind not in ("f", "a", "w"):
                unsafe.add(name)
        return cls.build("postgres", known - unsafe - defined, known, defined, operators=operators)

    @classmethod
    def from_duckdb(cls, rows: Iterable[Sequence[Any]]) -> FunctionCatalog:
        """From ``(function_name, function_type, stability, has_side_effects, internal[,
        own])`` rows of ``duckdb_functions()``: the engine's own scalar, aggregate and window
        functions that are consistent and free of side effects, its own macros, and table
        functions that only generate values (``range``, ``unnest`` ...; file readers and
        ``query()`` are not). ``own`` (default: ``internal``) is false for what the database
        or the connection defines: a file's macros (not internal) and a Python function
        registered on the connection (internal, but neither DuckDB's nor an extension's). The
        runner puts DuckDB's own catalog first on its search path, so a defined name the
        engine also has is bound to the engine's function in the query itself (shadowed)."""
        known: set[str] = set()
        safe: set[str] = set()
        unsafe: set[str] = set()
        defined: set[str] = set()
        for name, kind, stability, side_effects, internal, *own in rows:
            name = name.lower()
            known.add(name)
            if not (own[0] if own else internal):
                defined.add(name)
                continue  # never allowed, and no verdict on the engine's own of that name
            if kind in ("scalar", "aggregate", "window"):
                ok = stability in ("CONSISTENT", "CONSISTENT_WITHIN_QUERY") and not side_effects
            elif kind == "macro":
                ok = True
            elif kind in ("table", "table_macro"):
                if name in rules.SAFE_TABLE_FUNCTIONS:
                    safe.add(name)
                continue  # only callable in FROM, where the check allows value generators only
            else:
                ok = False
            (safe if ok else unsafe).add(name)
        engine_own = safe | unsafe | (known - defined)
        return cls.build("duckdb", safe - unsafe, known, defined, defined & engine_own)

    @classmethod
    def from_sqlite(cls, rows: Iterable[tuple[str, int, str, int]]) -> FunctionCatalog:
        """From ``(name, builtin, type, flags)`` rows of ``pragma_function_list``: built-in
        aggregates and window functions, and built-in scalars flagged deterministic."""
        deterministic = 0x800
        known: set[str] = set()
        safe: set[str] = set()
        unsafe: set[str] = set()
        defined: set[str] = set()
        for name, builtin, kind, flags in rows:
            name = name.lower()
            known.add(name)
            if not builtin:
                defined.add(name)
            ok = bool(builtin) and (kind in ("a", "w") or bool(flags & deterministic))
            (safe if ok else unsafe).add(name)
        return cls.build("sqlite", safe - unsafe, known, defined)

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
        return cls.build("mysql", names - own, names | own, own)


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
    if lowered in catalog.defined:
        return (
            "forbidden_function",
            f"The function {name}() is defined by this database, not by {catalog.engine}: "
            f"queries here call only {catalog.engine}'s own functions; use its built-in "
            "functions instead." + _instead(lowered, catalog),
        )
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
