"""Shared by every benchmark: print a table and put it into BENCHMARKS.md under its own heading.

Each benchmark owns one section, delimited by ``<!-- NAME:start -->`` and
``<!-- NAME:end -->``; rewriting one section leaves the others as they were. BENCHMARKS.md holds
the current figures; ``docs/benchmarks-history.md`` holds the figures of past changes (before
and after, re-runs). A section is rewritten in whichever of the two pages holds it, so a
section moved to the history stays there when its benchmark runs again; a new section goes to
BENCHMARKS.md unless its writer names the history (a comparison of a change).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
HISTORY_MD = ROOT / "docs" / "benchmarks-history.md"

#: The pages a section may live in: the current figures first, then their history.
PAGES = (BENCHMARKS_MD, HISTORY_MD)

#: What a page holds before its first section.
_HEADINGS = {BENCHMARKS_MD: "# Benchmarks\n\n", HISTORY_MD: "# Benchmarks: history\n\n"}


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


def load_average() -> str:
    """The load average over 1, 5 and 15 minutes, as the reports print it."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def commit(short: bool = True) -> str:
    """The git commit the benchmark runs on (``+dirty`` when the package has changes that are
    not committed; ``unknown`` outside a git checkout)."""
    try:
        sha = _git("rev-parse", "--short" if short else "--verify", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "cadet_magic")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def product_tree() -> str:
    """The git tree of the package at HEAD (``+dirty`` with changes not committed): the same
    tree is the same product, whatever else the commits between changed."""
    try:
        tree = _git("rev-parse", "HEAD:cadet_magic")
        dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "cadet_magic")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return tree + ("+dirty" if dirty else "")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def shown(path: str | os.PathLike) -> str:
    """A path as a report names it: relative to the repository or to ``CADET_DATA``, never a
    path of the machine that ran the benchmark."""
    from cadet_magic.eval.report import data_label

    return data_label(path, base=ROOT)


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"<!-- {re.escape(name)}:start -->.*?<!-- {re.escape(name)}:end -->", re.S)


def page_of(name: str, pages: Sequence[Path] = PAGES) -> Path | None:
    """The page that holds the section ``name`` now, or None."""
    for page in pages:
        if page.exists() and _pattern(name).search(page.read_text()):
            return page
    return None


def write_section(
    name: str,
    title: str,
    body: str,
    packages: Sequence[str] = (),
    page: Path | None = None,
    pages: Sequence[Path] = PAGES,
) -> Path:
    """Replaces the section ``name`` in the page that holds it, or appends it to ``page``
    (default: BENCHMARKS.md, the current figures), prints it and returns the page written."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta = f"_Measured {stamp} on {machine()}"
    if packages:
        meta += f"; {versions(*packages)}"
    meta += "._"
    section = f"<!-- {name}:start -->\n## {title}\n\n{meta}\n\n{body.strip()}\n<!-- {name}:end -->"
    print(section)
    target = page_of(name, pages) or page or pages[0]
    text = target.read_text() if target.exists() else _HEADINGS.get(target, "# Benchmarks\n\n")
    pattern = _pattern(name)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target
