"""DataFrames asked as tables (edge: pandas, polars, pyarrow and duckdb imported lazily).

``ask(question, con={"sales": sales, "customers": customers})``, ``ask(question, con=df)``
(one frame: the table ``df``) and ``%%ask --df sales,customers`` ask notebook DataFrames as
if they were a database: pandas and polars DataFrames and Arrow tables (or record batches).

Each question gets a **private in-memory DuckDB connection** the agent alone uses, with the
frames registered on it (:meth:`duckdb.DuckDBPyConnection.register`: DuckDB scans the frame's
own buffers in place, so a large frame is not copied), made again for every question: a frame
changed or replaced between two questions is read afresh, its columns included (the schema is
read once per question, never from an earlier one). The frames are never written: a registered
frame is a view over a Python object, which no SQL statement can change (``INSERT``,
``UPDATE``, ``DROP`` fail on it), the query runs in the runner's read-only transaction like on
any DuckDB connection, and the connection is opened with file access disabled
(``enable_external_access``: no ``COPY ... TO``, ``read_csv``, ``ATTACH``) and without DuckDB's
replacement scans of Python variables (``python_enable_replacements``: a query can read the
registered frames and nothing else of the process). The sharing levels, the limits, the vote
and the fallback apply as on any connection: the fallback's SELECT runs on the same
connection, and its pandas code gets that SELECT's rows in its confined worker, never the
frames themselves.

In JupyterLite's kernel (``sys.platform == "emscripten"``) DuckDB does not load: there the
frames are **copied** into a private in-memory SQLite database (pandas' ``to_sql``), at most
:data:`SQLITE_COPY_BYTES` in all; past it the question ends with one line saying so.

Example:
    >>> import pandas as pd
    >>> runner = frames_runner({"sales": pd.DataFrame({"g": ["a", "b"], "v": [1, 2]})})
    >>> runner.label
    'DataFrame sales (in-memory DuckDB)'
    >>> [(t.name, [c.name for c in t.columns]) for t in runner.schema().tables]
    [('sales', ['g', 'v'])]
    >>> frames_of(pd.DataFrame({"x": [1]})).keys()
    dict_keys(['df'])
    >>> frames_of(42) is None
    True
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Mapping
from typing import Any

from cadet_magic.db.schema_cache import SchemaCache
from cadet_magic.db.session import DbSession, current
from cadet_magic.errors import NoConnectionError
from cadet_magic.runner import Runner

#: The table a single frame given as the connection (``con=df``) is asked as.
SINGLE_NAME = "df"
#: Bytes of frames copied into SQLite at most where DuckDB is missing (JupyterLite): the copy
#: lives in the browser tab's memory beside the frames themselves.
SQLITE_COPY_BYTES = 64 * 2**20
#: Rows copied into SQLite at a time: pandas turns the rows it writes into Python objects
#: first, so a frame written whole would take several times its size meanwhile.
COPY_CHUNK = 50_000
#: The browser kernel (Pyodide), where DuckDB does not load.
IN_BROWSER = sys.platform == "emscripten"

#: The frame kinds accepted, as (module, class name) pairs read from ``sys.modules``.
_KINDS = (
    ("pandas", "DataFrame"),
    ("polars", "DataFrame"),
    ("pyarrow", "Table"),
    ("pyarrow", "RecordBatch"),
)


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a pandas or polars DataFrame or an Arrow table or record batch
    (without importing any of them: a library not imported holds no frame)."""
    for module, name in _KINDS:
        lib = sys.modules.get(module)
        kind = getattr(lib, name, None) if lib is not None else None
        if isinstance(kind, type) and isinstance(value, kind):
            return True
    return False


def a_kind(value: Any) -> str:
    """``value``'s type name with its article ("an int", "a str").

    Example:
        >>> a_kind(42), a_kind("x")
        ('an int', 'a str')
    """
    kind = type(value).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def _kind_hint(value: Any) -> str:
    """What to do with a value that is not a frame, in a few words."""
    kind = type(value)
    if kind.__module__.startswith("polars") and kind.__name__ == "LazyFrame":
        return " (a polars LazyFrame: pass frame.collect())"
    if kind.__module__.startswith("pandas") and kind.__name__ == "Series":
        return " (a pandas Series: pass series.to_frame())"
    return ""


def frames_of(con: Any) -> dict[str, Any] | None:
    """``con`` as named frames: one frame as the table :data:`SINGLE_NAME`, a mapping of
    names to frames as it is; None when ``con`` is neither (another kind of connection).

    Raises:
        NoConnectionError: a mapping whose names are not identifiers or whose values are not
            frames, in one line naming the first wrong entry.
    """
    if is_frame(con):
        return {SINGLE_NAME: con}
    if not isinstance(con, Mapping):
        return None
    if not con:
        raise NoConnectionError("con={}: name at least one DataFrame, e.g. con={'sales': sales}.")
    for name, value in con.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise NoConnectionError(
                f"con: the table name {name!r} is not an identifier; name each DataFrame as "
                "a table would be named, e.g. con={'sales': sales}."
            )
        if not is_frame(value):
            raise NoConnectionError(
                f"con[{name!r}] is {a_kind(value)}{_kind_hint(value)}, not a "
                "DataFrame: pass pandas or polars DataFrames or Arrow tables."
            )
    return dict(con)


def label_of(frames: Mapping[str, Any], engine: str) -> str:
    """The connection's label: the frames' table names and where they are asked."""
    names = ", ".join(frames)
    return f"DataFrame{'s' if len(frames) > 1 else ''} {names} (in-memory {engine})"


def frames_runner(con: Any, *, engine: str | None = None) -> Runner:
    """A runner asking the frames of ``con`` (see :func:`frames_of`) as tables: on a private
    in-memory DuckDB connection, or with ``engine="sqlite"`` (the default in JupyterLite) on
    a private in-memory SQLite copy of them."""
    frames = frames_of(con)
    if frames is None:
        raise NoConnectionError(
            f"{type(con).__name__} is not a DataFrame: pass pandas or polars DataFrames or "
            "Arrow tables."
        )
    engine = engine or ("sqlite" if IN_BROWSER else "duckdb")
    if engine == "sqlite":
        return sqlite_copy(frames)
    from cadet_magic.db.duckdb_frames import FramesRunner

    return FramesRunner(frames, label=label_of(frames, "DuckDB"), session=private_session())


def private_session() -> DbSession:
    """The current session's watchdog and reused connections with a schema cache of the
    runner's own: the frames' schema is read once per question and dies with the runner."""
    session = current()
    return DbSession(SchemaCache(), session.watchdog, session.reused_connections)


def frame_bytes(frame: Any) -> int:
    """About how many bytes ``frame`` holds (its values; a pandas frame's text measured)."""
    kind = type(frame).__module__.split(".")[0]
    if kind == "pandas":
        return int(frame.memory_usage(index=False, deep=True).sum())
    if kind == "polars":
        return int(frame.estimated_size())
    return int(frame.nbytes)  # Arrow


def _as_pandas(frame: Any) -> Any:
    kind = type(frame).__module__.split(".")[0]
    return frame if kind == "pandas" else frame.to_pandas()


def sqlite_copy(frames: Mapping[str, Any], limit: int | None = None) -> Runner:
    """A runner on a private in-memory SQLite database holding a copy of ``frames`` (pandas'
    ``to_sql``; the frames' index is left out, as DuckDB leaves it out); ``limit`` bytes of
    frames at most (default :data:`SQLITE_COPY_BYTES`).

    Raises:
        NoConnectionError: the frames hold more than ``limit`` bytes, or pandas is missing.
    """
    from cadet_magic.db.sqlite import SQLiteRunner

    limit = SQLITE_COPY_BYTES if limit is None else limit
    total = sum(frame_bytes(f) for f in frames.values())
    if total > limit:
        raise NoConnectionError(
            f"The DataFrames hold {total / 2**20:.0f} MiB, more than the "
            f"{limit / 2**20:.0f} MiB this kernel copies into SQLite (DuckDB, which scans "
            "frames in place, is not available here): select the rows and columns the "
            "question needs first (df[['col', ...]], df.head(n)), or ask in a Jupyter kernel."
        )
    try:
        import pandas  # noqa: F401 - to_sql writes the copy
    except ImportError:
        raise NoConnectionError(
            "Copying DataFrames into SQLite needs pandas in this kernel: %pip install pandas."
        ) from None
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    for name, frame in frames.items():
        whole = _as_pandas(frame)
        for start in range(0, max(len(whole), 1), COPY_CHUNK):
            part = whole.iloc[start : start + COPY_CHUNK]
            part.to_sql(name, connection, index=False, if_exists="append" if start else "fail")
    connection.commit()
    return SQLiteRunner(
        connection, label=label_of(frames, "SQLite copy"), session=private_session()
    )
