"""The frames' runner on DuckDB (edge: duckdb imported when a runner is made).

A private in-memory connection per question, opened with file access and DuckDB's replacement
scans of Python variables disabled, on which each cursor the runner opens has the frames
registered (scanned in place, never copied); see :mod:`cadet_magic.db.frames`.

Example:
    >>> import pyarrow as pa
    >>> r = FramesRunner({"t": pa.table({"x": [1, 2, 3]})})
    >>> r.run("SELECT sum(x) AS s FROM t", limit=5, timeout=5).rows
    [(6,)]
    >>> r.schema().table("t").columns[0].type
    'BIGINT'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cadet_magic.db.duckdb import DuckDBRunner
from cadet_magic.db.schema_cache import SchemaCache
from cadet_magic.db.session import DbSession, current
from cadet_magic.schema.structure import Schema

#: The private connection's settings: no file system, no scans of Python variables by name.
DUCKDB_CONFIG = {"enable_external_access": False, "python_enable_replacements": False}


class _Registered:
    """The private DuckDB connection as the runner uses it: every cursor it opens (the runner
    runs each query, schema read and setting on a sibling cursor) has the frames registered,
    since DuckDB keeps a registration to the cursor that made it."""

    def __init__(self, connection: Any, frames: Mapping[str, Any]) -> None:
        self._connection = connection
        self._frames = dict(frames)

    def cursor(self) -> Any:
        cur = self._connection.cursor()
        for name, frame in self._frames.items():
            cur.register(name, frame)
        return cur

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class FramesRunner(DuckDBRunner):
    """A :class:`~cadet_magic.db.duckdb.DuckDBRunner` on a private in-memory connection whose
    tables are the frames, registered (scanned in place) on each cursor it opens."""

    def __init__(
        self,
        frames: Mapping[str, Any],
        label: str = "DataFrames (in-memory DuckDB)",
        session: DbSession | None = None,
    ) -> None:
        import duckdb

        self.frames = dict(frames)
        connection = duckdb.connect(":memory:", config=dict(DUCKDB_CONFIG))
        if session is None:  # a schema cache of its own: the frames' schema dies with it
            session = DbSession(SchemaCache(), current().watchdog, current().reused_connections)
        super().__init__(_Registered(connection, self.frames), label=label, session=session)

    def _read_schema(self) -> Schema:
        """The frames as tables (DuckDB lists a registered frame as a temporary view): their
        columns and types as DuckDB scans them, with samples, and DuckDB's function catalog."""
        from cadet_magic.db.duckdb_schema import schema_from_rows, with_samples
        from cadet_magic.db.function_catalogs import duckdb_functions, with_functions
        from cadet_magic.schema.samples import TIME_BUDGET

        cur = self.connection.cursor()
        try:
            cols = cur.execute(
                "SELECT schema_name, table_name, column_name, data_type, NULL "
                "FROM duckdb_columns() WHERE database_name = 'temp' AND schema_name = 'main' "
                "ORDER BY table_name, column_index"
            ).fetchall()
            order = {name: i for i, name in enumerate(self.frames)}
            cols = sorted(
                (c for c in cols if c[1] in order), key=lambda c: order[c[1]]
            )  # stable: each frame's columns keep their order
            schema = schema_from_rows(cols, [], {})
            schema = with_samples(cur, schema, set(), TIME_BUDGET, self.session.watchdog)
        finally:
            cur.close()
        return with_functions(schema, duckdb_functions(self.connection))
