"""The run skeleton every runner shares, and the portable reading of an engine's exception
(stdlib only: the SQLite runner uses it in Pyodide too).

A runner wraps one user connection. :meth:`BaseRunner.run` is the protocol's ``run``, the same
for every engine: it opens the engine's read-only transaction (:meth:`~BaseRunner.transaction`,
always rolled back, the user's connection left as found), arms the deadline on the session's
watchdog (or lets the engine stop itself), routes Ctrl-C to the engine, executes the statement
(:meth:`~BaseRunner.execute`), fetches at most ``limit`` rows and about ``max_bytes`` bytes
(:func:`~cadet_magic.db.bounded_fetch.fetch_bounded`), and turns a failure into what the agent expects:
:class:`~cadet_magic.errors.QueryTimeout`, :class:`~cadet_magic.errors.ResultTooLarge`, a
``KeyboardInterrupt``, or the engine's error read into one portable
:class:`~cadet_magic.errors.EngineError` (:meth:`~BaseRunner.engine_error`). Each runner module
fills in those hooks for its engine and driver; nothing else of a run is written twice.

Example:
    >>> e = read_exception(KeyError("amout"))
    >>> str(e), e.kinds
    ("'amout'", ('KeyError',))
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cadet_magic.db.bounded_fetch import FIRST_CHUNK, fetch_bounded, rows_bytes
from cadet_magic.db.error_reader import read, table_for
from cadet_magic.db.error_table import ErrorTable
from cadet_magic.errors import (
    CadetError,
    EngineError,
    QueryTimeout,
    ResultTooLarge,
    exception_chain,
)
from cadet_magic.runner import RunResult
from cadet_magic.sql.query import CheckedQuery
from cadet_magic.sql.refusal import SafetyRefusal
from cadet_magic.sql.target import Target
from cadet_magic.text import error_text

#: Failures a runner raises as they are (ours, and a refusal of the engine's own plan check).
PASSED_ON = (CadetError, SafetyRefusal)


def read_exception(error: BaseException, **fields: Any) -> EngineError:
    """An exception of any wrapping as an :class:`EngineError`: the classes of its chain as
    ``kinds``, the words the attempt's record shows (the driver's own exception's, without
    SQLAlchemy's ``[SQL: ...]``) as ``message``, the innermost exception's words as ``plain``
    when they differ; ``fields`` (what the engine's reader knows besides) are added.
    """
    chain = exception_chain(error)
    inner = str(chain[-1]) if str(chain[-1]).strip() else str(error)
    message = error_text(error) or type(error).__name__
    fields.setdefault("kinds", tuple(type(e).__name__ for e in chain))
    fields.setdefault("plain", inner if inner != message else None)
    return EngineError(message, **fields)


@dataclass(frozen=True)
class Statement:
    """A statement the engine is running: its columns, how to fetch its next rows, how to
    size them (:func:`~cadet_magic.db.bounded_fetch.rows_bytes` or a column sizer), how many rows the
    first fetch asks for (fewer when a row's values may be large), and what to close once the
    rows are in."""

    columns: list[str]
    fetchmany: Callable[[int], Sequence]
    size: Callable[[Sequence[Sequence[object]]], int] = rows_bytes
    close: Callable[[], None] | None = None
    first: int = FIRST_CHUNK


class RunControl:
    """What one run's deadline, its interrupt handler and its error reading share: whether the
    deadline fired, whether the user pressed Ctrl-C, when the run started, and its byte budget
    (``max_bytes``, for an engine bounded during the run)."""

    def __init__(self, timeout: float, max_bytes: int | None = None) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.started = time.perf_counter()
        self.deadline = time.monotonic() + timeout
        self.fired = threading.Event()
        self.user_stop = threading.Event()
        self._guard = threading.Lock()
        self._done = False

    def fire(self, cancel: Callable[[], object]) -> None:
        """The deadline: ``cancel`` the statement, unless the run is over (never cancel what
        runs after it)."""
        with self._guard:
            if not self._done:
                self.fired.set()
                cancel()

    def finish(self) -> None:
        with self._guard:
            self._done = True


class BaseRunner:
    """The protocol's ``run``, once, over hooks each engine's runner fills in (see the module).

    Class attributes a runner may change: :attr:`grace` (seconds the watchdog waits past the
    limit, when the engine's own limit comes first), :attr:`watched` (False: the engine stops
    itself at the deadline), :attr:`routes_ctrl_c` (Ctrl-C is sent to the engine while the
    statement runs) and :attr:`cancel_during_cleanup` (the deadline stays armed until the
    transaction's cleanup is over).
    """

    dialect: str
    label: str
    session: Any  # the DbSession: its watchdog fires deadlines, its cache holds schemas
    grace: float = 0.0
    watched: bool = True
    routes_ctrl_c: bool = False
    cancel_during_cleanup: bool = False

    # -- the hooks -------------------------------------------------------------------------

    def transaction(self, timeout: float, control: RunControl) -> AbstractContextManager[Any]:
        """The engine's read-only transaction, always rolled back; yields the handle the
        other hooks get (a cursor, a connection)."""
        raise NotImplementedError

    def execute(
        self, handle: Any, sql: str | CheckedQuery, limit: int, control: RunControl
    ) -> Statement:
        """Starts ``sql`` (``str(sql)`` is its text; a :class:`CheckedQuery` also has its
        tree, for a row limit written into the query) for at most ``limit`` + 1 rows (so a cut
        can be told)."""
        raise NotImplementedError

    def cancel(self, handle: Any) -> None:
        """Stops the running statement (called by the watchdog at the deadline)."""

    def interrupt(self, handle: Any) -> None:
        """Stops the running statement after a Ctrl-C in this thread."""
        self.cancel(handle)

    def on_signal(self, handle: Any) -> None:
        """Ctrl-C arrived while the statement runs (a signal handler: keep it short)."""
        self.interrupt(handle)

    def fetched(self, handle: Any, why: str) -> None:
        """The rows are in (``why`` the result was cut: ``"rows"``, ``"bytes"`` or ``""``)."""

    def timed_out(self, error: BaseException, control: RunControl) -> bool:
        """Whether ``error`` is the engine's report of our deadline."""
        return False

    def user_interrupt(self, error: BaseException) -> bool:
        """Whether ``error`` is the engine's report of a Ctrl-C."""
        return False

    def out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError)

    def engine_error(self, error: BaseException) -> EngineError:
        """The driver's exception as an :class:`EngineError` (each engine's reader adds what
        its driver knows: SQLSTATE, error codes, positions, hints); :meth:`read_error` then
        reads it through the engine's table."""
        return read_exception(error)

    @property
    def engine(self) -> str:
        """The engine's name, under which its error table is registered: its dialect's name,
        unless the runner names another."""
        return self.dialect

    @cached_property
    def target(self) -> Target:
        """What this runner runs on, as the check and the diagnosis take it: its dialect
        resolved once, under :attr:`engine` (the schema's names are added when it is read)."""
        return Target.named(self.dialect, self.engine)

    @property
    def error_table(self) -> ErrorTable:
        """The table that reads this engine's errors (every known one when no table is
        registered under :attr:`engine`)."""
        return table_for(self.engine)

    def read_error(self, error: EngineError, sql: str | CheckedQuery) -> EngineError:
        """``error`` read through :attr:`error_table`, in terms of the query the model wrote:
        functions the check spelled in the dialect's own way named as written, and no echo of
        a statement line the model did not write."""
        if isinstance(sql, CheckedQuery):
            return read(error, self.error_table, renamed=sql.renamed, written=sql.written)
        return read(error, self.error_table, written=str(sql))

    # -- the skeleton ----------------------------------------------------------------------

    def run(
        self, sql: str | CheckedQuery, *, limit: int, timeout: float, max_bytes: int | None = None
    ) -> RunResult:
        """Runs ``sql`` (the check's :class:`CheckedQuery`, or a text) read-only, at most
        ``limit`` rows and about ``max_bytes`` bytes of values, stopped after ``timeout``
        seconds; the connection is left as it was found. A failure of the engine anywhere
        (opening the transaction as well as running the statement) is raised read."""
        try:
            return self._run(sql, limit, timeout, max_bytes)
        except PASSED_ON:
            raise
        except Exception as e:  # the engine failed before or after the statement ran
            raise self.read_error(self.engine_error(e), sql) from e

    def _run(
        self, sql: str | CheckedQuery, limit: int, timeout: float, max_bytes: int | None
    ) -> RunResult:
        control = RunControl(timeout, max_bytes)
        timer = None
        try:
            with self.transaction(timeout, control) as handle:
                if self.watched:
                    timer = self.session.watchdog.schedule(
                        timeout + self.grace, lambda: control.fire(lambda: self.cancel(handle))
                    )
                restore: Callable[[], object] = _nothing
                if self.routes_ctrl_c:
                    restore = on_ctrl_c(lambda: self._signalled(control, handle))
                statement: list[Statement] = []
                try:
                    rows, truncated, why = self._fetch(
                        handle, sql, limit, max_bytes, control, statement
                    )
                finally:
                    restore()
                    if not self.cancel_during_cleanup:
                        control.finish()
                        if timer is not None:
                            timer.cancel()
                    for s in statement:
                        if s.close is not None:
                            _quietly(s.close)
        finally:
            control.finish()
            if timer is not None:
                timer.cancel()
        columns = statement[0].columns
        return RunResult(
            columns,
            rows,
            truncated,
            time.perf_counter() - control.started,
            str(sql),
            truncation=why,
        )

    def _signalled(self, control: RunControl, handle: Any) -> None:
        control.user_stop.set()
        self.on_signal(handle)

    def _fetch(
        self,
        handle: Any,
        sql: str | CheckedQuery,
        limit: int,
        max_bytes: int | None,
        control: RunControl,
        box: list[Statement],
    ) -> tuple[list[tuple], bool, str]:
        try:
            box.append(self.execute(handle, sql, limit, control))
            statement = box[0]
            rows, truncated, why = fetch_bounded(
                statement.fetchmany, limit, max_bytes, statement.size, statement.first
            )
            self.fetched(handle, why)
        except KeyboardInterrupt:
            self.interrupt(handle)
            raise
        except PASSED_ON:
            raise
        except Exception as e:
            failed = self.failure(e, control)
            if isinstance(failed, EngineError):
                failed = self.read_error(failed, sql)
            raise failed from e
        if control.user_stop.is_set():
            raise KeyboardInterrupt
        return [tuple(r) for r in rows], truncated, why

    def failure(self, error: BaseException, control: RunControl) -> BaseException:
        """What a failed statement raises: a Ctrl-C, our deadline, memory, else the engine's
        error read portably."""
        if control.user_stop.is_set():
            return KeyboardInterrupt()
        if self.timed_out(error, control):
            return QueryTimeout(control.timeout)
        if self.user_interrupt(error):
            return KeyboardInterrupt()
        if self.out_of_memory(error):
            return ResultTooLarge()
        return self.engine_error(error)


def on_ctrl_c(callback: Callable[[], object]) -> Callable[[], object]:
    """Routes SIGINT to ``callback`` while a statement runs (main thread only); returns the
    undo."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return _nothing
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda signum, frame: callback())
    return lambda: signal.signal(signal.SIGINT, previous)


def _nothing() -> None:
    return None


def _quietly(f: Callable[[], object]) -> None:
    try:
        f()
    except Exception:  # noqa: BLE001 - the rollback that follows closes it anyway
        pass
