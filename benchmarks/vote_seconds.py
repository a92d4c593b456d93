"""``python -m benchmarks.vote_seconds``: what the vote costs in seconds, measured as a user pays
it: the product without a vote and with its default vote, side by side in one run.

The vote's runs on the whole fixed sample take the replies they share with the run before from
the reply store (at once), so their seconds are not the product's, and adding the candidates'
model seconds to before's is only an estimate: a candidate in those runs read its prompt on a
server that had not just read the same prompt for the first attempt, as the product's server
has. Here neither pass shares a reply: the first ``--limit`` questions of the fixed sample (a
stable prefix, grouped by database as the evaluation runs them), targeted mode, through
:mod:`benchmarks.eval` twice on one model server, first with ``--candidates 1`` (folder
``one``), then with the product's default (folder ``vote``), each in ``.cache/vote_seconds/``
(not kept in the repository: a new run replaces them). The load average is printed at each
start and at the end; the page and the row of BENCHMARKS.md (the vote's median seconds against
one answer's, budget :data:`BUDGET`) are written from the two folders, dated by the vote pass's
``run.json``.

Run it on a quiet machine (nothing else on the 2 cores)::

    setsid nohup .venv/bin/python -m benchmarks.vote_seconds >> .cache/vote_seconds.log 2>&1 \\
        < /dev/null &
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks import eval as bench
from benchmarks.eval_change import results
from benchmarks.report import Row, Stamp, row, write_page

#: Where the two passes' results go (``one/``, ``vote/``): not kept in the repository (the
#: figures are; a new run replaces the passes there).
OUT_DIR = Path(__file__).resolve().parents[1] / ".cache" / "vote_seconds"
#: Questions measured (the fixed sample's first, in its running order).
LIMIT = 50
#: The passes: folder name and the ``--candidates`` it runs with (None: the product's default).
PASSES: tuple[tuple[str, int | None], ...] = (("one", 1), ("vote", None))
#: The vote's median seconds per question at most this many times one answer's.
BUDGET = 2.0
COMMAND = "python -m benchmarks.vote_seconds"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def median_seconds(folder: Path) -> tuple[float | None, int]:
    """The median seconds per question of the targeted run in ``folder`` and how many ran."""

    recs = [
        r for r in results(folder, "targeted").values() if isinstance(r.get("seconds"), int | float)
    ]
    values = [r["seconds"] for r in recs]
    return (statistics.median(values) if values else None), len(values)


def run(limit: int, base_url: str | None, out_dir: Path) -> None:
    import contextlib

    with contextlib.ExitStack() as stack:
        if not base_url:
            from workloads.llm import llm_server

            base_url = stack.enter_context(llm_server(timeout=600.0))
        for name, candidates in PASSES:
            print(f"pass {name}: load average {load_average()}", flush=True)
            argv = ["--limit", str(limit), "--feedback", "targeted", "--no-shared-replies"]
            argv += ["--base-url", base_url, "--out-dir", str(out_dir / name), "--no-write"]
            if candidates is not None:
                argv += ["--candidates", str(candidates)]
            bench.main(argv)
    print(f"end: load average {load_average()}", flush=True)


def figures(one: float, vote: float, n: int, stamp: Stamp | None = None) -> list[Row]:
    """The row of BENCHMARKS.md.

    >>> r = figures(4.23, 9.85, 50)[0]
    >>> r.value, r.met
    ('2.33x (9.85 s against 4.23 s, median of 50 questions)', False)
    """
    ratio = vote / one
    return [
        row(
            "The vote's seconds: median question with the shipped vote against one answer",
            f"{ratio:.2f}x ({vote:.2f} s against {one:.2f} s, median of {n} questions)",
            f"≤ {BUDGET:g}x",
            ratio <= BUDGET,
            COMMAND,
            stamp,
        )
    ]


def write(out_dir: Path, measured: bool = True) -> None:
    """The page and the row from the two passes' folders."""
    (one, n_one), (vote, n_vote) = (median_seconds(out_dir / name) for name, _ in PASSES)
    if one is None or vote is None:
        raise SystemExit(f"benchmarks.vote_seconds: no passes in {out_dir}: run it first")
    runs = {name: bench.read_run(out_dir / name) or {} for name, _ in PASSES}
    starts = [s for r in runs.values() for s in r.get("starts", [])]
    body = "\n".join(
        [
            __doc__.split("\n\n")[1].replace("\n", " "),
            "",
            f"One answer (`--candidates 1`): median {one:.2f} s over {n_one} questions; the "
            f"shipped vote: median {vote:.2f} s over {n_vote} questions.",
            "",
            "Starts (time, commit, load average 1/5/15 min): "
            + "; ".join(f"{s['time']}, {s['commit']}, {s['load_average']}" for s in starts)
            + ".",
        ]
    )
    write_page(
        "vote_seconds",
        "The vote's seconds, measured as a user pays them",
        body,
        figures(
            one, vote, min(n_one, n_vote), Stamp.of_run(runs["vote"]) if runs["vote"] else None
        ),
        packages=("llama_cpp_python",),
        measured=measured,
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vote_seconds")
    p.add_argument("--limit", type=int, default=LIMIT, help=f"questions ({LIMIT})")
    p.add_argument("--base-url", help="a running OpenAI-compatible server (default: start one)")
    p.add_argument("--out-dir", type=Path, default=OUT_DIR)
    p.add_argument("--report-only", action="store_true", help="the figures, run nothing")
    p.add_argument("--no-write", action="store_true", help="print the medians, write no page")
    args = p.parse_args(argv)
    if not args.report_only:
        run(args.limit, args.base_url, args.out_dir)
    for name, _ in PASSES:
        median, n = median_seconds(args.out_dir / name)
        print(f"{name}: median {median if median is None else round(median, 2)} s over {n}")
    if not args.no_write:
        write(args.out_dir, measured=not args.report_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
