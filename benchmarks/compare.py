"""Before and after a change, in one run: the same public-API workload on two commits, interleaved.

``python -m benchmarks.compare BEFORE [AFTER]`` exports both commits (``AFTER`` defaults to the
working tree) and runs the workload below in fresh interpreters, alternating the two packages
round after round (before/after, then after/before), so that the machine's load drifts over
both alike. Only ``cadet_magic`` differs between the two sides: the workload, the interpreter and
every other package are the same. It uses what both commits have: ``cadet_magic.ask`` with a
scripted model (``cadet_magic.llm.ScriptedModel``).

The workload, per interpreter:

* ``import cadet_magic.api`` (the cold import an ``%%ask`` cell pays once);
* **answered**: Spider dev questions on their SQLite databases, each with its gold SQL as the
  scripted reply (schema read once per connection, then one attempt per question);
* **corrected**: the same questions with a misspelt column first and the gold SQL second (the
  diagnosis, the feedback and a second attempt);
* **first 1000 rows** of a 10^6-row DuckDB scan through ``ask``.

Medians per round are reported with the ratio after/before (below 1: faster after).
Run with ``--write`` to put the table into docs/benchmarks-history.md, in a section of its own
per pair of commits (``compare-BEFORE-AFTER``): a comparison measures a change, so it is history.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from benchmarks.report import table, write_history

ROOT = Path(__file__).resolve().parents[1]

#: The script each fresh interpreter runs (the package under test comes first on sys.path).
WORKLOAD = r"""
import json, sqlite3, statistics, sys, time
t0 = time.perf_counter()
import cadet_magic.api as api
import_s = time.perf_counter() - t0
from cadet_magic.llm import ScriptedModel
from benchmarks.agent_overhead import _spider_db, spider_gold

n = int(sys.argv[1])
items = spider_gold(n)
cons = {}
answered, corrected = [], []

def con_for(db):
    if db not in cons:
        cons[db] = sqlite3.connect(f"file:{_spider_db(db)}?mode=ro", uri=True)
    return cons[db]

for d in items:
    gold = f"```sql\n{d['query']}\n```"
    con = con_for(d["db_id"])
    t = time.perf_counter()
    r = api.ask(d["question"], con=con, model=ScriptedModel({d["question"]: [gold]}), timeout=30)
    if r.ok:
        answered.append(time.perf_counter() - t)
    wrong = "```sql\nSELECT no_such_column_xyz FROM " + d["query"].split(" FROM ", 1)[-1] + "\n```"
    t = time.perf_counter()
    r = api.ask(
        d["question"], con=con, model=ScriptedModel({d["question"]: [wrong, gold]}),
        timeout=30, fallback=False,
    )
    if r.ok and len(r.attempts) == 2:
        corrected.append(time.perf_counter() - t)

import duckdb
dcon = duckdb.connect()
dcon.execute("CREATE TABLE big AS SELECT range AS id, range * 0.5 AS amount FROM range(1000000)")
scan = "```sql\nSELECT id, amount FROM big\n```"
fetch = []
for _ in range(5):
    t = time.perf_counter()
    r = api.ask("all rows?", con=dcon, model=ScriptedModel({"all rows?": [scan]}), timeout=60)
    fetch.append(time.perf_counter() - t)
    assert r.ok and len(r.rows) == 1000, r.message
print(json.dumps({
    "file": api.__file__,
    "import_s": import_s,
    "answered_s": statistics.median(answered), "answered_n": len(answered),
    "corrected_s": statistics.median(corrected), "corrected_n": len(corrected),
    "fetch_s": statistics.median(fetch),
}))
"""

MEASURES = (
    ("import_s", "`import cadet_magic.api` (cold)"),
    ("answered_s", "answered question, 1 attempt (Spider dev on SQLite, median)"),
    ("corrected_s", "corrected question, 2 attempts (median)"),
    ("fetch_s", "first 1000 of 10^6 rows through `ask` (DuckDB, median)"),
)


def export(commit: str, into: Path) -> Path:
    """``commit``'s ``cadet_magic`` package, unpacked under ``into``."""
    archive = into / f"{commit}.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "-o", str(archive), commit, "cadet_magic"], check=True
    )
    tree = into / commit
    tree.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def run_once(tree: Path, n: int) -> dict:
    """One fresh interpreter with ``tree``'s package first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
    out = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(n)],
        env=env,
        cwd=str(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    if not figures["file"].startswith(str(tree)):
        raise RuntimeError(f"imported {figures['file']}, not the package under {tree}")
    return figures


def compare(before: str, after: str | None, rounds: int, n: int) -> tuple[dict, dict]:
    """Medians per measure for each side over ``rounds`` alternating rounds."""
    with tempfile.TemporaryDirectory(prefix="cadet-compare-") as tmp:
        sides = {"before": export(before, Path(tmp))}
        sides["after"] = export(after, Path(tmp)) if after else ROOT
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for i in range(rounds):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for side in order:
                runs[side].append(run_once(sides[side], n))
    medians = {
        side: {key: statistics.median(r[key] for r in rs) for key, _ in MEASURES}
        for side, rs in runs.items()
    }
    counts = {
        side: {k: rs[0][k] for k in ("answered_n", "corrected_n")} for side, rs in runs.items()
    }
    return medians, counts


def render(before: str, after: str, medians: dict, counts: dict, rounds: int, n: int) -> str:
    rows = []
    for key, name in MEASURES:
        b, a = medians["before"][key], medians["after"][key]
        rows.append([name, f"{b * 1000:.1f} ms", f"{a * 1000:.1f} ms", f"{a / b:.2f}x"])
    return (
        table(["measure", f"before ({before})", f"after ({after})", "after / before"], rows)
        + f"\n\n{rounds} rounds, each a fresh interpreter per side, alternating which side runs "
        f"first; medians of the rounds' medians. {n} Spider dev questions per round (answered "
        f"before / after: {counts['before']['answered_n']} / {counts['after']['answered_n']}; "
        f"corrected: {counts['before']['corrected_n']} / {counts['after']['corrected_n']}). "
        "Only `cadet_magic` differs between the sides.\n"
    )


def section_name(before: str, after: str | None) -> str:
    """The history section of one comparison: a new pair of commits gets a section of its
    own, the same pair measured again replaces its own.

    >>> section_name("6660040", "cc87caf"), section_name("HEAD~3", None)
    ('compare-6660040-cc87caf', 'compare-HEAD3-tree')
    """
    return "-".join(["compare", *(re.sub(r"[^\w.]", "", s) for s in (before, after or "tree"))])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the commit before the change")
    parser.add_argument("after", nargs="?", help="the commit after it (default: this tree)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--questions", type=int, default=120)
    parser.add_argument(
        "--write", action="store_true", help="write the table to docs/benchmarks-history.md"
    )
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    medians, counts = compare(args.before, args.after, args.rounds, args.questions)
    after = args.after or "working tree"
    body = render(args.before, after, medians, counts, args.rounds, args.questions)
    print(body)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.write:
        write_history(
            section_name(args.before, args.after),
            f"Before and after, in one run: {args.before} vs {after}",
            body,
            ("sqlglot", "duckdb"),
        )


if __name__ == "__main__":
    main()
