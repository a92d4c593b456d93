"""The small protocol through which the agent runs SQL (stdlib only).

A runner wraps one user connection. ``run`` executes one already-checked
statement so that nothing can persist, fetches at most ``limit`` rows, stops the
engine after ``timeout`` seconds (raising :class:`~cadet_magic.errors.QueryTimeout`)
and leaves the connection as usable as it found it. Any other failure is the
engine's own exception, raised unchanged for the diagnosis to read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from cadet_magic.schema.model import Schema


@dataclass
class RunResult:
    """Rows fetched by a runner."""

    columns: list[str]
    rows: list[tuple]
    truncated: bool = False
    elapsed: float = 0.0
    sql: str = ""
    extra: dict = field(default_factory=dict)


@runtime_checkable
class Runner(Protocol):
    """What the agent needs from a database connection."""

    #: sqlglot dialect name: "duckdb", "sqlite", "postgres", ...
    dialect: str
    #: a short label for displays, e.g. "duckdb (native)" or "postgresql://.../shop".
    label: str

    def run(self, sql: str, *, limit: int, timeout: float) -> RunResult: ...

    def schema(self) -> Schema: ...
