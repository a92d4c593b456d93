"""The local model in a kernel: memory and speed by how it is loaded (``--model local``).

For each way :mod:`cadet_magic.local.machine` may load the model (context 8192 with the weights
repacked for this CPU, then 8192, 4096 and 2048 without), a fresh process loads it, as a kernel
does, and asks the sample shop's questions through ``ask()``; it reports the load time, the
seconds per question and the model's share, and the process's peak resident memory split
into the mapped file and anonymous memory (the part that cannot be dropped and re-read).
Rounds alternate the ways, so a busy machine weighs on all of them alike.

Run: ``python -m benchmarks.local_memory`` (needs the installed local model: ``python -m
cadet_magic.local install``; writes its page and its row of BENCHMARKS.md; ``--no-write`` prints only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks.report import ROOT, Row, row, table, write_page

#: One question each way keeps the run short: the memory is allocated when the model loads
#: (the attention cache for the whole context), not by the prompt's length.
QUESTIONS = ("What is the revenue per product category, highest first?",)
#: The way Binder's 2 GB kernel gets the model (its context, weights repacked or not), and the
#: kernel's peak resident memory it must stay below, in MB.
BINDER_WAY = (4096, False)
BINDER_PEAK_MB = 1800


def child(n_ctx: int, repack: bool) -> dict:
    """In a fresh process: load the model this way, ask the questions, measure."""
    from cadet_magic.api import ask
    from cadet_magic.examples.shop import create_shop
    from cadet_magic.llm.llamacpp import load_gguf
    from cadet_magic.llm.local import LABEL, LocalChatModel, check_file
    from cadet_magic.local.machine import threads
    from cadet_magic.local.model_store import model_file

    path = model_file()
    check_file(path)
    started = time.perf_counter()
    llama = load_gguf(path, n_ctx, threads(), repack=repack)
    loaded = time.perf_counter() - started
    model = LocalChatModel(path, llama, n_ctx, LABEL, 0.0)
    con = create_shop()
    runs = []
    for question in QUESTIONS:
        result = ask(question, con=con, model=model, model_timeout=None)
        tokens = result.tokens
        runs.append(
            {
                "seconds": result.elapsed,
                "model_seconds": result.model_seconds,
                "input_tokens": tokens.input if tokens else 0,
                "output_tokens": tokens.output if tokens else 0,
            }
        )
    status = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile"):
                status[key] = int(value.split()[0]) // 1024
    return {"n_ctx": n_ctx, "repack": repack, "load": loaded, "runs": runs, **status}


def measure(rounds: int) -> tuple[list[dict], list[str]]:
    from cadet_magic.local.machine import FITS

    rows: list[dict] = []
    loads = [os.getloadavg()[0]]
    for _ in range(rounds):
        for fit in FITS:
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.local_memory", "--child"]
                + [str(fit.n_ctx), str(int(fit.repack))],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=True,
            )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    return rows, [f"{x:.2f}" for x in loads]


def report(rows: list[dict], loads: list[str]) -> str:
    out = []
    for n_ctx, repack in dict.fromkeys((r["n_ctx"], r["repack"]) for r in rows):
        mine = [r for r in rows if (r["n_ctx"], r["repack"]) == (n_ctx, repack)]
        runs = [run for r in mine for run in r["runs"]]
        tokens_in = sum(run["input_tokens"] for run in runs)
        model_s = sum(run["model_seconds"] or 0 for run in runs)
        out.append(
            [
                n_ctx,
                "yes" if repack else "no",
                f"{max(r['VmHWM'] for r in mine)} MB",
                f"{max(r['RssAnon'] for r in mine)} MB",
                f"{max(r['RssFile'] for r in mine)} MB",
                f"{statistics.median(r['load'] for r in mine):.1f} s",
                f"{statistics.median(run['seconds'] for run in runs):.1f} s",
                f"{tokens_in / model_s:.0f}" if model_s else "-",
            ]
        )
    worst = max(float(x) for x in loads)
    under = (
        " **Taken under load** (other work on the machine): the seconds are slower than the "
        "model's own speed; the memory does not depend on the load."
        if worst > 1.5
        else ""
    )
    return (
        f"Load average (1 min) before, between and after the runs: {', '.join(loads)}.{under}\n\n"
        f"Each row: a fresh process (as a kernel) loads the model that way and asks the sample "
        f"shop's question(s) ({'; '.join(QUESTIONS)}) through `ask()` (temperature 0, "
        f"{len(rows) // len(out)} round(s), the ways alternating). Peak resident memory of the "
        "process, and at its end the part mapped from the model file (the kernel may drop and "
        "re-read it under pressure) and the anonymous part (it cannot); tokens read per second "
        "of waiting for the model, over the questions.\n\n"
        + table(
            [
                "context (tokens)",
                "weights repacked",
                "peak resident",
                "anonymous",
                "mapped file",
                "load",
                "s/question (median)",
                "input tokens per model second",
            ],
            out,
        )
    )


def figures(rows: list[dict]) -> list[Row]:
    """The row of BENCHMARKS.md: the peak resident memory of the way Binder gets.

    >>> r = {"n_ctx": 4096, "repack": False, "VmHWM": 1489}
    >>> [(x.value, x.met) for x in figures([r, r | {"VmHWM": 1500}])]
    [('1500 MB (4096-token context, weights not repacked)', True)]
    """
    mine = [r for r in rows if (r["n_ctx"], r["repack"]) == BINDER_WAY]
    peak = max((r["VmHWM"] for r in mine), default=None)
    n_ctx, repack = BINDER_WAY
    return [
        row(
            "Local model in a kernel: peak resident memory the way Binder's 2 GB loads it",
            f"{peak} MB ({n_ctx}-token context, weights {'' if repack else 'not '}repacked)"
            if peak is not None
            else "not measured",
            f"< {BINDER_PEAK_MB:,} MB",
            peak is not None and peak < BINDER_PEAK_MB,
            "python -m benchmarks.local_memory",
        )
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("N_CTX", "REPACK"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1] == "1")))
        return
    rows, loads = measure(args.rounds)
    body = report(rows, loads)
    if args.no_write:
        print(body)
    else:
        write_page(
            "local_memory",
            "The local model in a kernel: memory and speed by how it is loaded",
            body,
            figures(rows),
            packages=("llama_cpp_python", "duckdb"),
        )


if __name__ == "__main__":
    main()
