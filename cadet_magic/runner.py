"""The small protocol through which the agent runs SQL: part of the portable core (stdlib only).

A runner wraps one user connection. ``run`` executes one already-checked statement so that
nothing can persist, fetches at most ``limit`` rows and at most about ``max_bytes`` bytes of
values, stops the engine after ``timeout`` seconds (raising
:class:`~cadet_magic.errors.QueryTimeout`) and leaves the connection as usable as it found it.
Any other failure is raised as a :class:`~cadet_magic.errors.EngineError`: the engine's error
read at the edge by that engine's reader (its kind, the name or value it is about, the names
the engine proposes), so that the diagnosis never reads a driver's exception or an engine's
wording. The runners themselves are edges, one per connection kind, in :mod:`cadet_magic.db`.

Example:
    >>> r = RunResult(columns=["n"], rows=[(3,)])
    >>> r.truncated, r.truncation
    (False, '')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cadet_magic.schema.structure import Schema
from cadet_magic.sql.target import Target


@dataclass
class RunResult:
    """Rows fetched by a runner.

    ``truncation`` says why ``truncated`` is set: ``"rows"`` (more rows than the row limit)
    or ``"bytes"`` (the next rows would pass the byte budget).
    """

    columns: list[str]
    rows: list[tuple]
    truncated: bool = False
    elapsed: float = 0.0
    sql: str = ""
    truncation: str = ""


@runtime_checkable
class Runner(Protocol):
    """What the agent needs from a database connection."""

    #: sqlglot dialect name: "duckdb", "sqlite", "postgres", ...
    dialect: str
    #: a short label for displays, e.g. "duckdb (native)" or "postgresql://.../shop".
    label: str

    def run(
        self, sql: str, *, limit: int, timeout: float, max_bytes: int | None = None
    ) -> RunResult: ...

    def schema(self) -> Schema: ...


def target_of(runner: Runner) -> Target:
    """The :class:`~cadet_magic.sql.target.Target` of what ``runner`` runs on, with nothing
    known of its schema yet: its own (a runner of :mod:`cadet_magic.db` makes it once), else
    its dialect resolved once, under the engine name it gives (its dialect's by default).

    Example:
        >>> class Plain:
        ...     dialect, label = "postgresql", "pg"
        >>> target_of(Plain()).engine, target_of(Plain()).read
        ('postgres', 'postgres')
    """
    own = getattr(runner, "target", None)
    if isinstance(own, Target):
        return own
    return Target.named(runner.dialect, getattr(runner, "engine", None))
