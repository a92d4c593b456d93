"""Shared by every benchmark: print a table and put it into BENCHMARKS.md under its own heading.

Each benchmark owns one section, delimited by ``<!-- NAME:start -->`` and
``<!-- NAME:end -->``; rewriting one section leaves the others as they were.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table."""
    rows = [[str(c) for c in r] for r in rows]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def versions(*packages: str) -> str:
    found = []
    for p in packages:
        try:
            found.append(f"{p} {metadata.version(p)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(found)


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def write_section(name: str, title: str, body: str, packages: Sequence[str] = ()) -> None:
    """Replaces (or appends) the section ``name`` of BENCHMARKS.md and prints it."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta = f"_Measured {stamp} on {machine()}"
    if packages:
        meta += f"; {versions(*packages)}"
    meta += "._"
    section = f"<!-- {name}:start -->\n## {title}\n\n{meta}\n\n{body.strip()}\n<!-- {name}:end -->"
    print(section)
    text = BENCHMARKS_MD.read_text() if BENCHMARKS_MD.exists() else "# Benchmarks\n\n"
    pattern = re.compile(
        rf"<!-- {re.escape(name)}:start -->.*?<!-- {re.escape(name)}:end -->", re.S
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    BENCHMARKS_MD.write_text(text)
