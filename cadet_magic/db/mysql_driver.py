"""The agent's own MySQL/MariaDB connections (edge: the drivers are imported lazily).

How :class:`~cadet_magic.db.mysql.MySQLRunner` opens a connection of its own with the
parameters of the user's (PyMySQL's, or a private copy of a SQLAlchemy engine's pool), which
drivers it accepts (:data:`DRIVERS`), how it forces ``utf8mb4`` on the driver and the server
and verifies both, which ``sql_mode`` flags it clears, and how it streams rows and shuts a
connection's socket down.

Example:
    >>> one_line(ValueError("two\\n   lines"))
    'two lines'
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

#: sql_mode flags that change how the server reads SQL text; cleared on the agent's connection.
TEXT_MODES = frozenset(
    {
        "ANSI_QUOTES",
        "NO_BACKSLASH_ESCAPES",
        "PIPES_AS_CONCAT",
        "IGNORE_SPACE",
        "ANSI",
        "ORACLE",
        "MSSQL",
        "DB2",
        "POSTGRESQL",
        "MAXDB",
        "EMPTY_STRING_IS_NULL",
        "SIMULTANEOUS_ASSIGNMENT",
    }
)
#: The one character set the agent's connection speaks: no byte of a multibyte character is an
#: ASCII byte, so the server splits the text into tokens exactly as the check did.
CHARSET = "utf8mb4"
CHARSET_SQL = (
    "SELECT @@SESSION.character_set_client, @@SESSION.character_set_connection, "
    "@@SESSION.character_set_results"
)


def is_pymysql(obj: Any) -> bool:
    """Whether ``obj`` is a PyMySQL connection (without importing PyMySQL)."""
    return type(obj).__module__.startswith("pymysql") and hasattr(obj, "thread_id")


def pymysql_opener(con: Any) -> Callable[[], Any]:
    """Opens new PyMySQL connections with the parameters of ``con`` (host, port, socket, user,
    password, database, character set, TLS); not its session state."""
    import pymysql

    params: dict[str, Any] = {
        "host": con.host,
        "port": con.port,
        "user": con.user,
        "password": con.password,
        "database": con.db,
        "unix_socket": con.unix_socket,
        "charset": CHARSET,  # never the user's: see the module
        "connect_timeout": getattr(con, "connect_timeout", 10),
        "autocommit": False,
    }
    import ssl

    if isinstance(getattr(con, "_sock", None), ssl.SSLSocket) and getattr(con, "ctx", None):
        params["ssl"] = con.ctx  # encrypted like the user's connection, with the same context
    else:
        # Unencrypted like the user's connection; PyMySQL would otherwise build a new TLS
        # context for every connection it tries TLS on (~150 ms).
        params["ssl_disabled"] = True
    for key in ("bind_address", "server_public_key", "init_command", "sql_mode"):
        if getattr(con, key, None):
            params[key] = getattr(con, key)

    def open_() -> Any:
        return pymysql.connect(**params)

    return open_


def sqlalchemy_opener(engine: Any) -> Callable[[], Any]:
    """Opens new driver connections through a private copy of ``engine``'s pool (same URL,
    connect arguments and pool events), never one of the user's pooled connections."""
    pool = engine.pool.recreate()

    def open_() -> Any:
        fairy = pool.connect()
        raw = fairy.dbapi_connection
        fairy.detach()  # the agent's from now on: it closes the driver connection itself
        return raw

    return open_


def use_utf8mb4(con: Any, cur: Any) -> None:
    """Sets the agent's connection to utf8mb4 on the driver and the server, after anything the
    connection ran when it opened (``init_command``, pool events), and verifies both; raises
    :class:`~cadet_magic.errors.ConfigurationError` (one line) when either is something else."""
    from cadet_magic.errors import ConfigurationError

    module = type(con).__module__
    try:
        if module.startswith("MySQLdb"):
            con.set_character_set(CHARSET)  # the driver's encoding and SET NAMES in one
        else:
            cur.execute(f"SET NAMES {CHARSET}")
        cur.execute(CHARSET_SQL)
        server = tuple(str(v or "").lower() for v in cur.fetchone())
    except Exception as e:  # an old server without utf8mb4, a driver refusing it
        raise ConfigurationError(
            f"The agent's MySQL connection could not be set to {CHARSET} ({one_line(e)}); "
            "the agent runs SQL only in utf8mb4."
        ) from e
    client = driver_charset(con)
    if server != (CHARSET,) * 3 or client != CHARSET:
        raise ConfigurationError(
            f"The agent's MySQL connection is not in {CHARSET} (driver: {client or 'unknown'}, "
            f"server: {'/'.join(server)}); the agent runs SQL only in utf8mb4: connect with "
            "PyMySQL or mysqlclient and a server that supports utf8mb4."
        )


def driver_charset(con: Any) -> str | None:
    """The character set the driver encodes SQL text in (PyMySQL, mysqlclient, MariaDB
    Connector/Python), or None when it cannot tell."""
    module = type(con).__module__
    if module.startswith("pymysql"):
        return str(con.charset) if getattr(con, "encoding", None) == "utf8" else con.encoding
    if module.startswith("MySQLdb"):
        return str(con.character_set_name())
    if module.startswith("mariadb"):
        return str(getattr(con, "character_set", "") or "") or None
    return None


def one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:200] or type(e).__name__


#: The drivers the runner knows, by the module their connection class lives in: how each
#: encodes SQL text, streams rows, reports a killed statement and exposes its socket is known
#: and tested. Any other driver is refused before any SQL runs (:func:`known_driver`). MariaDB
#: Connector/Python (``mariadb``) is among the refused: with it, a statement stopped by ``KILL
#: QUERY`` came back as an ordinary result with no error (measured with its unbuffered
#: cursor), so a time limit could not be told from an answer.
DRIVERS = {"pymysql": "PyMySQL", "MySQLdb": "mysqlclient"}


def known_driver(con: Any) -> str:
    """The name of ``con``'s driver when it is one of :data:`DRIVERS`.

    Raises:
        ConfigurationError: for any other driver (one line naming the supported ones).
    """
    from cadet_magic.errors import ConfigurationError

    module = type(con).__module__
    for prefix, name in DRIVERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return name
    raise ConfigurationError(
        f"The agent does not run SQL through the MySQL driver {module.split('.')[0]}: its "
        "character set handling and cancellation are not verified; connect with PyMySQL "
        "(mysql+pymysql:// or mariadb+pymysql://) or mysqlclient (mysql+mysqldb://)."
    )


def driver_cursor(con: Any, unbuffered: bool) -> Any:
    """A cursor of one of :data:`DRIVERS`; with ``unbuffered`` one that streams rows from
    the server (PyMySQL's and mysqlclient's ``SSCursor``)."""
    if not unbuffered:
        return con.cursor()
    module = type(con).__module__
    if module.startswith("pymysql"):
        from pymysql.cursors import SSCursor

        return con.cursor(SSCursor)
    from MySQLdb.cursors import SSCursor

    return con.cursor(SSCursor)


def shutdown_socket(con: Any) -> None:
    """Shuts down a driver connection's socket so a read blocked on it returns at once."""
    import socket

    sock = getattr(con, "_sock", None)  # PyMySQL
    try:
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
        elif hasattr(con, "fileno"):  # mysqlclient, MariaDB Connector/Python
            dup = socket.socket(fileno=os.dup(con.fileno()))
            try:
                dup.shutdown(socket.SHUT_RDWR)
            finally:
                dup.close()
    except Exception:  # noqa: BLE001 - already closed
        pass


def close_quietly(cons: list) -> None:
    for con in cons:
        if con is None:
            continue
        try:
            con.close()
        except Exception:  # noqa: BLE001 - already closed or broken
            pass
