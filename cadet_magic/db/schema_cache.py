"""The schema read once per connection, re-read only when the catalog changes (stdlib only).

Runners are created per question, so the cache lives here, keyed on the user's
connection object: weakly where the object allows it (DuckDB, SQLAlchemy
connections), else strongly in a small least-recently-used set (``sqlite3``
connections cannot be weakly referenced). Each entry keeps a *fingerprint* of
the catalog, a cheap query the runner runs on every ask (SQLite's
``PRAGMA schema_version``, a hash over DuckDB's ``duckdb_tables()``, ``xmin``
sums over PostgreSQL's ``pg_catalog``); the schema is read again only when the
fingerprint differs. Sample values are read with the schema and therefore
reflect the data at the time of the last schema change.

Example:
    >>> from cadet_magic.schema.structure import Schema
    >>> class Con: pass
    >>> con, cache, version = Con(), SchemaCache(), [1]
    >>> read = lambda: Schema.from_mapping({"t": ["a"] * version[0]})
    >>> s1 = cache.get(con, lambda: version[0], read)
    >>> s1 is cache.get(con, lambda: version[0], read), cache.reads
    (True, 1)
    >>> version[0] = 2
    >>> len(cache.get(con, lambda: version[0], read).tables[0].columns), cache.reads
    (2, 2)
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from cadet_magic.schema.structure import Schema

#: Connections that cannot be weakly referenced are remembered strongly, at most this many.
STRONG_ENTRIES = 8


@dataclass
class _Entry:
    fingerprint: Hashable
    schema: Schema


class SchemaCache:
    """Schemas by connection object, each with the catalog fingerprint it was read at.

    Attributes:
        reads: how many times a schema was read (a miss), for tests and benchmarks.
        hits: how many times the cached schema was returned unchanged.
    """

    def __init__(self, strong_entries: int = STRONG_ENTRIES) -> None:
        self._weak: weakref.WeakKeyDictionary[Any, _Entry] = weakref.WeakKeyDictionary()
        self._strong: OrderedDict[int, tuple[Any, _Entry]] = OrderedDict()
        self._strong_entries = strong_entries
        self._lock = threading.Lock()
        self.reads = 0
        self.hits = 0

    def _lookup(self, con: Any) -> _Entry | None:
        try:
            return self._weak.get(con)
        except TypeError:
            found = self._strong.get(id(con))
            if found is None or found[0] is not con:
                return None
            self._strong.move_to_end(id(con))
            return found[1]

    def _store(self, con: Any, entry: _Entry) -> None:
        try:
            self._weak[con] = entry
        except TypeError:
            self._strong[id(con)] = (con, entry)
            self._strong.move_to_end(id(con))
            while len(self._strong) > self._strong_entries:
                self._strong.popitem(last=False)

    def get(
        self,
        con: Any,
        fingerprint: Callable[[], Hashable],
        read: Callable[[], Schema],
    ) -> Schema:
        """The schema of ``con``: cached while ``fingerprint()`` is unchanged, else ``read()``.

        Args:
            con: the connection object the schema belongs to (the cache key).
            fingerprint: a cheap function of the catalog; None means "cannot tell",
                which always reads.
            read: reads the schema (tables, keys, comments, samples).

        Returns:
            The schema.
        """
        mark = fingerprint()
        with self._lock:
            entry = self._lookup(con)
            if entry is not None and mark is not None and entry.fingerprint == mark:
                self.hits += 1
                return entry.schema
        schema = read()
        with self._lock:
            self.reads += 1
            if mark is not None:
                self._store(con, _Entry(mark, schema))
        return schema

    def clear(self) -> None:
        """Drops every entry and resets the counters."""
        with self._lock:
            self._weak = weakref.WeakKeyDictionary()
            self._strong.clear()
            self.reads = self.hits = 0


#: The process-wide cache the runners use.
SCHEMA_CACHE = SchemaCache()
