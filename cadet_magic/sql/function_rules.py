"""The tables of functions a query may never call, whatever an engine's catalog says, and of
the volatile ones that only produce a value (stdlib only): the data
:mod:`cadet_magic.sql.functions` decides with (:func:`~cadet_magic.sql.functions.never_reason`).

Each entry maps a function name to ``(what it does, what to use instead)``, the words the
refusal and the model's feedback use.

Example:
    >>> NEVER["pg_read_file"][0], "random" in HARMLESS_VOLATILE
    ('reads or writes files or large objects', True)
"""

from __future__ import annotations

from cadet_magic.sql import rules
from cadet_magic.sql.pg_catalog_lookups import (  # noqa: F401 - the PostgreSQL tables stay importable here
    CATALOG_NAMES,
    OBJECT_ID_TYPES,
    PG_KEYWORD_CALLS,
)

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
