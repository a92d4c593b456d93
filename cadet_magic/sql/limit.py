"""Row limit on the syntax tree (placeholder until the safety issue's version lands)."""

from __future__ import annotations


def add_limit(sql: str, dialect: str | None, n: int) -> str:
    """Returns ``sql`` unchanged for now: the runners bound the fetch with ``fetchmany``."""
    return sql
