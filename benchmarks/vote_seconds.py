"""``python -m benchmarks.vote_seconds``: what the vote costs in seconds, measured as a user pays
it: the product without a vote and with its default vote, side by side in one run.

The vote's runs on the whole fixed sample take the replies they share with the run before from
the reply store (at once), so their seconds are not the product's, and adding the candidates'
model seconds to before's is only an estimate: a candidate in those runs read its prompt on a
server that had not just read the same prompt for the first attempt, as the product's server
has. Here neither pass shares a reply: the first ``--limit`` questions of the fixed sample (a
stable prefix, grouped by database as the evaluation runs them), targeted mode, through
:mod:`benchmarks.eval` twice on one model server, first with ``--candidates 1`` (folder
``one``), then with the product's default (folder ``vote``). The load average is printed at
each start and at the end.

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

#: Where the two passes' results go (``one/``, ``vote/``): not kept in the repository (the
#: figures are; a new run replaces the passes there).
OUT_DIR = Path(__file__).resolve().parents[1] / ".cache" / "vote_seconds"
#: Questions measured (the fixed sample's first, in its running order).
LIMIT = 50
#: The passes: folder name and the ``--candidates`` it runs with (None: the product's default).
PASSES: tuple[tuple[str, int | None], ...] = (("one", 1), ("vote", None))


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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vote_seconds")
    p.add_argument("--limit", type=int, default=LIMIT, help=f"questions ({LIMIT})")
    p.add_argument("--base-url", help="a running OpenAI-compatible server (default: start one)")
    p.add_argument("--out-dir", type=Path, default=OUT_DIR)
    p.add_argument("--report-only", action="store_true", help="print the medians, run nothing")
    args = p.parse_args(argv)
    if not args.report_only:
        run(args.limit, args.base_url, args.out_dir)
    for name, _ in PASSES:
        median, n = median_seconds(args.out_dir / name)
        print(f"{name}: median {median if median is None else round(median, 2)} s over {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
