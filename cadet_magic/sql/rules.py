"""What the SQL safety check refuses and allows, as data (stdlib only).

The check in :mod:`cadet_magic.sql.validate` looks names up here after sqlglot
has parsed the query; nothing here is matched against raw SQL text. Names are
lower-case; every list applies to every dialect, because a function that does
not exist in an engine is refused by that engine anyway, and a wrong dialect
name must not open a hole.
"""

from __future__ import annotations

#: Functions that read or write files, reach the network or load code.
FILE_FUNCTIONS: frozenset[str] = frozenset(
    {
        # DuckDB file readers, scanners and extensions
        "read_csv",
        "read_csv_auto",
        "read_json",
        "read_json_auto",
        "read_json_objects",
        "read_ndjson",
        "read_ndjson_auto",
        "read_ndjson_objects",
        "read_parquet",
        "read_text",
        "read_blob",
        "read_xlsx",
        "parquet_scan",
        "parquet_metadata",
        "parquet_schema",
        "parquet_file_metadata",
        "parquet_kv_metadata",
        "sniff_csv",
        "glob",
        "csv_scan",
        "json_scan",
        "iceberg_scan",
        "iceberg_metadata",
        "iceberg_snapshots",
        "delta_scan",
        "sqlite_scan",
        "sqlite_attach",
        "postgres_scan",
        "postgres_attach",
        "mysql_scan",
        "http_get",
        "http_post",
        "http_head",
        # PostgreSQL server files and programs
        "pg_read_file",
        "pg_read_binary_file",
        "pg_stat_file",
        "pg_ls_dir",
        "pg_ls_logdir",
        "pg_ls_waldir",
        "pg_ls_tmpdir",
        "pg_ls_archive_statusdir",
        "pg_ls_logicalmapdir",
        "pg_ls_logicalsnapdir",
        "pg_ls_replslotdir",
        "pg_file_write",
        "pg_file_rename",
        "pg_file_unlink",
        "pg_file_sync",
        "pg_logdir_ls",
        "lo_import",
        "lo_export",
        # SQLite shell / extension functions
        "load_extension",
        "readfile",
        "writefile",
        "edit",
        "fsdir",
        "zipfile",
        "fts3_tokenizer",
        # MySQL
        "load_file",
        "sys_exec",
        "sys_eval",
        # others
        "openrowset",
        "opendatasource",
        "openquery",
        "external_query",
        "read_files",
        "to_file",
        "url",
        "s3",
        "s3cluster",
        "hdfs",
        "remote",
        "remotesecure",
        "file",
    }
)

#: Prefixes of families of file/network functions.
FILE_PREFIXES: tuple[str, ...] = ("read_", "parquet_", "pg_read_", "pg_ls_", "pg_file_", "lo_")

#: Functions that run a SQL string, expose or change settings and secrets,
#: sleep, lock, change sequences, or signal the server.
OTHER_FUNCTIONS: dict[str, str] = {
    "query": "runs a SQL string",
    "query_table": "reads a table named by a string",
    "query_to_xml": "runs a SQL string",
    "query_to_xmlschema": "runs a SQL string",
    "query_to_xml_and_xmlschema": "runs a SQL string",
    "cursor_to_xml": "runs a cursor",
    "table_to_xml": "reads a table named by a string",
    "table_to_xmlschema": "reads a table named by a string",
    "table_to_xml_and_xmlschema": "reads a table named by a string",
    "schema_to_xml": "reads a whole schema",
    "database_to_xml": "reads the whole database",
    "ts_stat": "runs a SQL string",
    "crosstab": "runs a SQL string",
    "crosstab2": "runs a SQL string",
    "crosstab3": "runs a SQL string",
    "crosstab4": "runs a SQL string",
    "connectby": "runs a SQL string",
    "dblink": "runs SQL on another connection",
    "dblink_exec": "runs SQL on another connection",
    "postgres_query": "runs SQL on another connection",
    "postgres_execute": "runs SQL on another connection",
    "mysql_query": "runs SQL on another connection",
    "mysql_execute": "runs SQL on another connection",
    "sqlite_query": "runs SQL on another connection",
    "getenv": "reads the server's environment",
    "current_setting": "reads server settings",
    "set_config": "changes server settings",
    "setseed": "changes session state",
    "duckdb_secrets": "exposes secrets",
    "which_secret": "exposes secrets",
    "duckdb_settings": "reads server settings",
    "secret": "exposes secrets",
    "nextval": "advances a sequence (a write)",
    "setval": "changes a sequence (a write)",
    "next_value_for": "advances a sequence (a write)",
    "nextvaluefor": "advances a sequence (a write)",
    "pg_sleep": "sleeps",
    "pg_sleep_for": "sleeps",
    "pg_sleep_until": "sleeps",
    "sleep": "sleeps",
    "sleep_ms": "sleeps",
    "sleepeachrow": "sleeps",
    "benchmark": "burns server time",
    # One call runs as long as its arguments ask (rounds, iterations, cost) and checks neither
    # the statement's time limit nor KILL QUERY (MariaDB ENCRYPT, KDF; pgcrypto crypt).
    "encrypt": "burns server time",
    "kdf": "burns server time",
    "crypt": "burns server time",
    "system$wait": "sleeps",
    "pg_terminate_backend": "signals the server",
    "pg_cancel_backend": "signals the server",
    "pg_reload_conf": "signals the server",
    "pg_rotate_logfile": "signals the server",
    "pg_promote": "signals the server",
    "pg_switch_wal": "changes server state",
    "pg_create_restore_point": "changes server state",
    "pg_import_system_collations": "changes the catalog",
    "pg_log_backend_memory_contexts": "signals the server",
    "pg_export_snapshot": "changes server state",
    "pg_notify": "sends a notification",
    "pg_advisory_lock": "takes a lock",
    "pg_advisory_lock_shared": "takes a lock",
    "pg_advisory_xact_lock": "takes a lock",
    "pg_advisory_xact_lock_shared": "takes a lock",
    "pg_try_advisory_lock": "takes a lock",
    "pg_try_advisory_lock_shared": "takes a lock",
    "pg_try_advisory_xact_lock": "takes a lock",
    "pg_try_advisory_xact_lock_shared": "takes a lock",
    "pg_advisory_unlock": "releases a lock",
    "pg_advisory_unlock_all": "releases locks",
    "pg_advisory_unlock_shared": "releases a lock",
    "get_lock": "takes a lock",
    "release_lock": "releases a lock",
    "release_all_locks": "releases locks",
    "is_free_lock": "reads locks",
    "is_used_lock": "reads locks",
    "master_gtid_wait": "waits on the server",
    "wait_for_executed_gtid_set": "waits on the server",
    "wsrep_sync_wait_upto_gtid": "waits on the server",
    "des_encrypt": "reads the server's key file",
    "des_decrypt": "reads the server's key file",
    "master_pos_wait": "waits on the server",
    "source_pos_wait": "waits on the server",
    "xp_cmdshell": "runs a shell command",
    "result_scan": "reads the results of earlier queries",
    "reflect": "calls Java code",
    "java_method": "calls Java code",
    "try_reflect": "calls Java code",
}

#: Prefixes of families of those functions.
OTHER_PREFIXES: dict[str, str] = {
    "dblink": "runs SQL on another connection",
    "pg_advisory": "takes a lock",
    "pg_try_advisory": "takes a lock",
    "pg_stat_reset": "changes server state",
    "pg_create_": "changes server state",
    "pg_drop_": "changes server state",
    "pg_replication_": "changes server state",
    "pg_logical_": "changes server state",
    "pg_wal_": "changes server state",
    "pg_backup_": "changes server state",
    "system$": "calls a system procedure",
    "duckdb_": "reads engine internals",
    "ducklake_": "reads engine internals",
    "pragma_": "reads engine internals",
}

#: Table functions that only compute values (allowed in FROM / JOIN / LATERAL).
SAFE_TABLE_FUNCTIONS: frozenset[str] = frozenset(
    {
        "range",
        "generate_series",
        "generateseries",
        "exploding_generate_series",
        "explodinggenerateseries",
        "generate_subscripts",
        "unnest",
        "explode",
        "explode_outer",
        "explodeouter",
        "posexplode",
        "posexplode_outer",
        "posexplodeouter",
        "inline",
        "inline_outer",
        "stack",
        "flatten",
        "generator",
        "split_to_table",
        "string_split",
        "string_to_table",
        "regexp_split_to_table",
        "regexp_matches",
        "json_each",
        "json_tree",
        "json_each_text",
        "jsonb_each",
        "jsonb_each_text",
        "json_array_elements",
        "json_array_elements_text",
        "jsonb_array_elements",
        "jsonb_array_elements_text",
        "json_to_record",
        "json_to_recordset",
        "jsonb_to_record",
        "jsonb_to_recordset",
        "json_populate_record",
        "json_populate_recordset",
        "jsonb_populate_record",
        "jsonb_populate_recordset",
        "json_table",
        "jsontable",
        "openjson",
        "json_tuple",
        "parse_url_tuple",
        "sequence",
        "generate_array",
        "generate_date_array",
        "generate_timestamp_array",
    }
)

#: Catalog tables and views that expose secrets, settings or other sessions.
SENSITIVE_TABLES: frozenset[str] = frozenset(
    {
        "pg_authid",
        "pg_shadow",
        "pg_user_mapping",
        "pg_user_mappings",
        "pg_hba_file_rules",
        "pg_ident_file_mappings",
        "pg_file_settings",
        "pg_settings",
        "pg_largeobject",
        "pg_stat_activity",
        "pg_stat_statements",
        "duckdb_secrets",
        "duckdb_settings",
        "sqlite_dbpage",
        "sqlite_dbdata",
        "sqlite_dbptr",
        "mysql.user",
        "mysql.db",
    }
)

#: Schema names that mean "the default schema" when a query qualifies a table.
DEFAULT_SCHEMAS: frozenset[str] = frozenset({"main", "public", "dbo", "temp"})

#: First words of statements that are not queries; used to name what the model wrote
#: when sqlglot cannot parse it into a tree (the refusal holds either way).
NON_QUERY_KEYWORDS: frozenset[str] = frozenset(
    """insert update delete merge replace upsert create drop alter truncate rename comment
    grant revoke begin start commit rollback end abort savepoint release set reset show
    describe desc explain analyze vacuum reindex cluster refresh checkpoint copy export import
    attach detach install force load unload pragma use call exec execute do prepare deallocate
    listen notify unlisten lock unlock discard declare fetch move close kill shutdown handler
    flush optimize repair purge put get remove list undrop secret summarize cache uncache clear
    msck add""".split()
)
