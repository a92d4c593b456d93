"""What the runners share within one session: the schema cache and the deadline watchdog.

No runner reaches for a module-level object. A runner gets a :class:`DbSession` when it is
made (``resolve_runner(con, session=...)``); without one it takes the current session, which
the ``%%ask`` magic sets to the one it holds for as long as a question runs (:func:`using`). Code
outside the magic (the Python API, scripts) gets the process default, :data:`DEFAULT`.

Example:
    >>> mine = DbSession()
    >>> current() is DEFAULT
    True
    >>> with using(mine):
    ...     current() is mine
    True
    >>> current() is DEFAULT
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from cadet_magic.db.reused_connections import ReusedConnections
from cadet_magic.db.schema_cache import SCHEMA_CACHE, SchemaCache
from cadet_magic.db.watchdog import WATCHDOG, Watchdog


@dataclass
class DbSession:
    """The schema cache (one schema read per connection until it changes), the watchdog
    thread that fires query deadlines and the agent's SQLite connections reused between
    questions (JupyterLite's drive), owned together."""

    schema_cache: SchemaCache = field(default_factory=SchemaCache)
    watchdog: Watchdog = field(default_factory=Watchdog)
    reused_connections: ReusedConnections = field(default_factory=ReusedConnections)


#: The session of code that runs outside a magic; its objects are ``SCHEMA_CACHE`` and
#: ``WATCHDOG`` (still importable from their modules).
DEFAULT = DbSession(SCHEMA_CACHE, WATCHDOG)

_CURRENT: ContextVar[DbSession] = ContextVar("cadet_magic_db_session", default=DEFAULT)


def current() -> DbSession:
    """The session runners made now will use."""
    return _CURRENT.get()


@contextmanager
def using(session: DbSession) -> Iterator[DbSession]:
    """Makes ``session`` the current one for the ``with`` block (this thread and context)."""
    token = _CURRENT.set(session)
    try:
        yield session
    finally:
        _CURRENT.reset(token)
