"""Shared by every benchmark: its detail page, its rows of the one table of BENCHMARKS.md, and
the history's sections.

Each benchmark writes its **detail page**, ``docs/benchmarks/NAME.md`` (what it measured, every
table a reader may want), and its **rows**, ``docs/benchmarks/NAME.json``: each row a figure with
its value now, its budget, whether the budget is met, the command that reproduces it and when it
was measured (date, commit, load average). ``BENCHMARKS.md`` is generated from those rows
(:func:`front_page`): one table and nothing a benchmark wrote by hand; ``python -m
benchmarks.report`` writes it again from the rows files, and a benchmark's :func:`write_page`
does so each time it runs. A benchmark reported without a budget writes no row: its page is
listed below the table. Comparisons of a change (before and after) are history:
:func:`write_history` rewrites their section between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` in ``docs/benchmarks-history.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
HISTORY_MD = ROOT / "docs" / "benchmarks-history.md"
#: The detail pages and their rows.
PAGES_DIR = ROOT / "docs" / "benchmarks"
#: Load average (1 min) above which a figure is marked as taken under load.
LOADED = 1.5
#: BENCHMARKS.md's length at most.
MAX_LINES = 150
#: The order of the benchmarks in the table (a page not named here comes after, by name).
ORDER = (
    "validate",
    "linking",
    "corruption",
    "corruption_mariadb",
    "corruption_spark",
    "literal_check",
    "perf",
    "large_catalog",
    "isolation",
    "frames",
    "mariadb",
    "spark",
    "lite",
    "lite_model",
    "local_memory",
    "eval",
    "readings",
    "fallback",
    "peers",
    "vote_seconds",
    "local_model",
    "conversation",
)


@dataclass(frozen=True)
class Stamp:
    """When a figure was measured: the date, the commit of the code measured, the load
    average over the last minute (as text; "" when not recorded)."""

    date: str
    commit: str
    load: str = ""

    @classmethod
    def now(cls) -> Stamp:
        date = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
        return cls(date, commit(), f"{os.getloadavg()[0]:.1f}")

    @classmethod
    def of_run(cls, run: dict) -> Stamp:
        """When a real-model run was measured: its first start (``run.json``'s ``starts``).

        >>> Stamp.of_run({"commit": "a7be178", "starts": [
        ...     {"time": "2026-11-29 08:50 UTC", "commit": "a7be178", "load_average": "0.60 1.2 1.6"}]})
        Stamp(date='2026-11-29', commit='a7be178', load='0.6')
        """
        starts = run.get("starts") or [{}]
        first = starts[0]
        load = (first.get("load_average") or "").split()
        return cls(
            str(first.get("time", ""))[:10],
            str(run.get("commit") or first.get("commit") or "unknown"),
            f"{float(load[0]):.1f}" if load else "",
        )

    @property
    def under_load(self) -> bool:
        """Whether the load average was above :data:`LOADED` (the figure is marked so); a
        range (``"12-14"``, several samples) counts by its top.

        >>> Stamp("2026-11-29", "a7be178", "0.6").under_load, Stamp("d", "c", "4.2").under_load
        (False, True)
        >>> Stamp("d", "c", "1.2-1.5").under_load, Stamp("d", "c", "").under_load
        (False, False)
        """
        found = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", self.load)]
        return bool(found) and max(found) > LOADED

    def text(self) -> str:
        """The table's cell.

        >>> Stamp("2026-11-29", "a7be178", "2.6").text()
        '2026-11-29, a7be178, load 2.6 (**under load**)'
        """
        load = f"load {self.load}" if self.load else "load not recorded"
        return f"{self.date}, {self.commit}, {load}" + (
            " (**under load**)" if self.under_load else ""
        )


@dataclass(frozen=True)
class Row:
    """One figure of the table: its value now, its budget and whether it is met, the command
    that reproduces it, and when it was measured."""

    figure: str
    value: str
    budget: str
    met: bool
    command: str
    stamp: Stamp

    def cells(self, page: str) -> list[str]:
        link = f"[{self.figure}](docs/benchmarks/{page}.md)"
        return [
            link,
            self.value,
            self.budget,
            "yes" if self.met else "**no**",
            f"`{self.command}`",
            self.stamp.text(),
        ]

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Row:
        return cls(**{**data, "stamp": Stamp(**data["stamp"])})


def row(
    figure: str,
    value: str,
    budget: str,
    met: bool,
    command: str,
    stamp: Stamp | None = None,
) -> Row:
    """A row measured now (or at ``stamp``)."""
    return Row(figure, value, budget, bool(met), command, stamp or Stamp.now())


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


def _meta(packages: Sequence[str], measured: bool = True) -> str:
    """When and where the page was written: measured now, or written now from results files
    measured earlier (the rows say when)."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if not measured:  # the versions of now are not those the figures were measured with
        return f"_Written {stamp} from results files measured earlier (the rows say when)._"
    meta = f"_Measured {stamp} on {machine()}"
    if packages:
        meta += f"; {versions(*packages)}"
    return meta + "._"


def rows_table(rows: Sequence[Row], page: str) -> str:
    headers = ["figure", "now", "budget", "met", "command", "measured (date, commit, load)"]
    return table(headers, [r.cells(page) for r in rows])


def detail_page(title: str, body: str, rows: Sequence[Row], page: str, meta: str = "") -> str:
    """A detail page's text: its title, when and where it was measured, its rows of the front
    page's table (linked back there), then the benchmark's own body."""
    parts = [f"# {title}", ""]
    if meta:
        parts += [meta, ""]
    if rows:
        own = rows_table(rows, page).replace(f"](docs/benchmarks/{page}.md)", "](#figures)")
        parts += [
            "## Figures",
            "",
            "The rows of [BENCHMARKS.md](../../BENCHMARKS.md)'s table this page details:",
            "",
            own,
            "",
            "## Detail",
            "",
        ]
    else:
        parts += [
            "Reported, without a budget: not a row of [BENCHMARKS.md](../../BENCHMARKS.md).",
            "",
        ]
    return "\n".join([*parts, body.strip()]) + "\n"


def write_page(
    name: str,
    title: str,
    body: str,
    rows: Sequence[Row] = (),
    packages: Sequence[str] = (),
    pages_dir: Path = PAGES_DIR,
    front: Path | None = BENCHMARKS_MD,
    measured: bool = True,
) -> Path:
    """Writes the benchmark's detail page ``pages_dir/NAME.md`` and its rows
    ``pages_dir/NAME.json``, prints the page, then writes the front page again from every
    benchmark's rows (``front``: None leaves it alone). ``measured``: False when the figures
    were computed from results files measured earlier. Returns the detail page."""
    pages_dir.mkdir(parents=True, exist_ok=True)
    text = detail_page(title, body, rows, name, _meta(packages, measured))
    print(text)
    path = pages_dir / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    record = {"title": title, "rows": [r.to_json() for r in rows]}
    (pages_dir / f"{name}.json").write_text(
        json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    if front is not None:
        front.write_text(front_page(pages_dir), encoding="utf-8")
    return path


def read_rows(pages_dir: Path = PAGES_DIR) -> dict[str, tuple[str, list[Row]]]:
    """Every benchmark's title and rows, in :data:`ORDER`."""
    found = {}
    for path in pages_dir.glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[path.stem] = (data["title"], [Row.from_json(r) for r in data["rows"]])
    ranked = sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    return {n: found[n] for n in ranked}


PREAMBLE = """\
# Benchmarks

The product's figures now: speed, memory and the accuracy of each check against baselines,
and the real local model's answers on Spider dev with the shipped defaults, on this project's
2-core x86-64 machine (no GPU). Each row is one figure with its budget and whether it is met,
the command that reproduces it (the project's interpreter, `.venv/bin/python -m ...`, after
`bash scripts/setup.sh`; the public data sets from `CADET_DATA`,
[CONTRIBUTING.md](CONTRIBUTING.md#public-data-sets-cadet_data)) and when it was measured: the
date, the commit of the code measured (for a figure measured before this page was generated,
2026-12-01, the commit that recorded it) and the load average (1 min); a figure taken at a load
above 1.5 is marked **under load** and is not the product's speed. Accuracy of the real model
is a figure with its interval, never a test threshold. Each figure links to its page under
[docs/benchmarks/](docs/benchmarks/), which holds the detail; changes measured before and after,
and the decision records that chose the product's settings, are in
[docs/benchmarks-history.md](docs/benchmarks-history.md).

This page is generated from the benchmarks' rows (`docs/benchmarks/NAME.json`): a benchmark
rewrites its page and its rows when it runs, and `python -m benchmarks.report` writes this page
again from them. Do not edit it by hand.
"""


def front_page(pages_dir: Path = PAGES_DIR) -> str:
    """BENCHMARKS.md: the preamble, one table of every benchmark's rows, then the pages of
    what is reported without a budget."""
    benchmarks = read_rows(pages_dir)
    cells = [r.cells(name) for name, (_, rows) in benchmarks.items() for r in rows]
    headers = ["figure", "now", "budget", "met", "command", "measured (date, commit, load)"]
    met = sum(r.met for _, rows in benchmarks.values() for r in rows)
    reported = [
        f"[{title}](docs/benchmarks/{n}.md)" for n, (title, rows) in benchmarks.items() if not rows
    ]
    text = (
        PREAMBLE
        + f"\n{met} of {len(cells)} budgets met.\n\n"
        + table(headers, cells)
        + "\n"
        + (
            "\nReported without a budget (their pages): " + "; ".join(reported) + ".\n"
            if reported
            else ""
        )
    )
    return text


def write_history(
    name: str,
    title: str,
    body: str,
    packages: Sequence[str] = (),
    page: Path = HISTORY_MD,
) -> Path:
    """Replaces the section ``name`` of the history page, or appends it (a comparison of a
    change is history); prints it and returns the page."""
    section = f"<!-- {name}:start -->\n## {title}\n\n{_meta(packages)}\n\n{body.strip()}\n<!-- {name}:end -->"
    print(section)
    text = page.read_text() if page.exists() else "# Benchmarks: history\n\n"
    pattern = _pattern(name)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return page


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.report",
        description="Writes BENCHMARKS.md again from the benchmarks' rows (no benchmark runs).",
    )
    p.add_argument("--check", action="store_true", help="exit 1 if BENCHMARKS.md differs")
    args = p.parse_args(argv)
    text = front_page()
    if args.check:
        same = BENCHMARKS_MD.read_text(encoding="utf-8") == text
        print("BENCHMARKS.md is what the rows give" if same else "BENCHMARKS.md differs")
        return 0 if same else 1
    BENCHMARKS_MD.write_text(text, encoding="utf-8")
    lines = len(text.splitlines())
    print(
        f"BENCHMARKS.md written: {lines} lines"
        + (f" (over {MAX_LINES})" if lines > MAX_LINES else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
