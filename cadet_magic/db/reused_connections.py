"""The agent's read-only SQLite connections reused from one question to the next (stdlib only).

In JupyterLite's kernel a database file in the notebook's drive (``/drive``) is served by the
page: opening a connection on it reads the file through synchronous requests from the kernel's
worker (about 55 ms measured in Chromium for the sample shop) and closing it costs about 20 ms
more, each question, twice (one connection for the catalog reads, one for the queries). Those
connections are opened ``immutable`` (:func:`unchanging`), so SQLite
never looks at the file again while they are open: they stay open in the session and are used
again while the file's size and modification time (one ``stat``, about 5 ms) are the ones it
had when they were opened. A file that changed is opened again, which reads it as a new
connection would; at most :data:`LIMIT` files have connections open, the least recently used
closed first.

Example:
    >>> import sqlite3
    >>> reused = ReusedConnections(limit=1)
    >>> a, b = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    >>> reused.put("/drive/a.db", True, (10, 1), a)
    >>> reused.get("/drive/a.db", True, (10, 1)) is a
    True
    >>> reused.get("/drive/a.db", True, (11, 2)) is None  # the file changed: closed, forgotten
    True
    >>> a.execute("SELECT 1")
    Traceback (most recent call last):
    ...
    sqlite3.ProgrammingError: Cannot operate on a closed database.
    >>> reused.put("/drive/b.db", True, (5, 1), b); len(reused)
    1
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict

#: Files whose connections stay open at once (up to two connections each).
LIMIT = 4

#: A file's size and modification time (ns), as ``os.stat`` gives them.
Stamp = tuple[int, int]


def unchanging(path: str) -> bool:
    """Whether the agent's own connection to ``path`` may be opened immutable: in JupyterLite's
    kernel, for a file in the notebook's drive (``/drive``). There every look-up SQLite makes
    on the file (the journal's existence, the file's size, before each statement) is a
    synchronous request from the kernel's worker to the page, and nothing can write the file
    while a question runs: the kernel runs one cell at a time, and the drive hands each open
    file its own copy of the contents (a writer's changes reach others when it closes the
    file). The connection is reused by later questions while the file's stamp is unchanged
    (:class:`ReusedConnections`).

    >>> unchanging("/drive/shop.sqlite")  # not in Pyodide here
    False
    """
    from cadet_magic import lite

    return lite.in_pyodide() and path.startswith("/drive/")


def stamp(path: str) -> Stamp | None:
    """``path``'s size and modification time, or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class ReusedConnections:
    """Connections by file and kind (with or without the read-only authorizer), each with the
    stamp its file had when it was opened."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._by_file: OrderedDict[str, tuple[Stamp, dict[bool, sqlite3.Connection]]] = (
            OrderedDict()
        )

    def __len__(self) -> int:
        return len(self._by_file)

    def get(self, path: str, authorizer: bool, now: Stamp | None) -> sqlite3.Connection | None:
        """The open connection of this kind to ``path`` if the file still has the stamp
        ``now``; a file whose stamp changed has its connections closed and forgotten."""
        with self._lock:
            entry = self._by_file.get(path)
            if entry is None:
                return None
            if now is None or entry[0] != now:
                del self._by_file[path]
                _close(entry[1])
                return None
            self._by_file.move_to_end(path)
            return entry[1].get(authorizer)

    def put(self, path: str, authorizer: bool, now: Stamp, con: sqlite3.Connection) -> None:
        """Holds ``con`` open for reuse (opened when the file had the stamp ``now``)."""
        with self._lock:
            entry = self._by_file.get(path)
            if entry is None or entry[0] != now:
                if entry is not None:
                    _close(entry[1])
                entry = (now, {})
            old = entry[1].get(authorizer)
            if old is not None and old is not con:
                old.close()
            entry[1][authorizer] = con
            self._by_file[path] = entry
            self._by_file.move_to_end(path)
            while len(self._by_file) > self.limit:
                _close(self._by_file.popitem(last=False)[1][1])

    def close(self) -> None:
        """Closes every connection held."""
        with self._lock:
            while self._by_file:
                _close(self._by_file.popitem()[1][1])


def _close(connections: dict[bool, sqlite3.Connection]) -> None:
    for con in connections.values():
        con.close()
