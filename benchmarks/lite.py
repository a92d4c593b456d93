"""``python -m benchmarks.lite``: the JupyterLite site against a CPython kernel, side by side.

Measures the offline site's build time and size, the browser kernel's boot (page open to idle)
against a CPython kernel's start (to idle), and the first and later ``%%ask`` in each, on the
same questions, the same scripted replies and the same SQLite shop (the site's ``shop.sqlite``).
Browser: the built site served on 127.0.0.1, headless Chromium that resolves no other host. The
scripted model makes the model's time zero: what is measured is the kernel, the agent and the
panel. Writes the ``lite`` section of BENCHMARKS.md (``--no-write`` to only print).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.report import table, write_section

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "lite"
NOTEBOOK = "cadet_in_the_browser.ipynb"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
QUESTIONS = [  # first: a first-try answer; later: the same again, then a corrected one
    "How many customers are there in each country? Show the five largest.",
    "How many customers are there in each country? Show the five largest.",
    "What is the revenue per product category, highest first?",
]
SETUP_CELLS = [
    "%load_ext cadet_magic",
    "import sqlite3\ncon = sqlite3.connect('file:{db}?mode=ro', uri=True)",
    "%config AskMagic.model = 'scripted:{replies}'",
]


def build() -> tuple[float, float, int, dict[str, float]]:
    """Builds the offline site; returns (seconds, MB, files, MB by top folder)."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_lite.py"), "--variant", "offline"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - t0
    files = [f for f in SITE.rglob("*") if f.is_file()]
    parts: dict[str, float] = {}
    for f in files:
        rel = f.relative_to(SITE).parts
        key = "/".join(rel[:2]) if rel[0] == "static" else rel[0] if len(rel) > 1 else "(top)"
        parts[key] = parts.get(key, 0.0) + f.stat().st_size / 1e6
    return seconds, sum(parts.values()), len(files), parts


def browser(reps: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    from tests.lite.site import serve  # the test suite's static server on 127.0.0.1

    idle = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
      const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
      return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"""
    out: dict[str, list[float]] = {"boot": [], "first": [], "later": []}
    with serve(SITE) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for _ in range(reps):
                context = browser.new_context(viewport={"width": 1280, "height": 1000})
                page = context.new_page()
                page.set_default_timeout(240_000)
                t0 = time.perf_counter()
                page.goto(f"{base}/lab/index.html?path={NOTEBOOK}")
                page.wait_for_function(idle)
                out["boot"].append(time.perf_counter() - t0)

                def run(source: str, page=page) -> float:
                    page.evaluate(
                        """src => { const nb = window.jupyterapp.shell.currentWidget;
                        const n = nb.content.model.cells.length;
                        nb.content.model.sharedModel.insertCell(n, {cell_type: 'code', source: src});
                        nb.content.activeCellIndex = n; }""",
                        source,
                    )
                    t = time.perf_counter()
                    page.evaluate(
                        "async () => { await window.jupyterapp.commands.execute("
                        "'notebook:run-cell'); }"
                    )
                    page.wait_for_function(idle)
                    return time.perf_counter() - t

                for cell in SETUP_CELLS:
                    run(cell.format(db="/drive/shop.sqlite", replies="/drive/browser_replies.json"))
                out["first"].append(run(f"%%ask --con con\n{QUESTIONS[0]}"))
                out["later"].append(
                    statistics.mean(run(f"%%ask --con con\n{q}") for q in QUESTIONS[1:])
                )
                context.close()
        finally:
            browser.close()
    return out


def cpython(reps: int) -> dict[str, list[float]]:
    from jupyter_client.manager import start_new_kernel

    files = SITE / "files"
    out: dict[str, list[float]] = {"boot": [], "first": [], "later": []}
    for _ in range(reps):
        t0 = time.perf_counter()
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(files))
        try:
            kc.wait_for_ready(timeout=120)
            out["boot"].append(time.perf_counter() - t0)

            def run(source: str, kc=kc) -> float:
                t = time.perf_counter()
                reply = kc.execute_interactive(source, timeout=300, output_hook=lambda m: None)
                assert reply["content"]["status"] == "ok", reply["content"]
                return time.perf_counter() - t

            for cell in SETUP_CELLS:
                run(cell.format(db=files / "shop.sqlite", replies=files / "browser_replies.json"))
            out["first"].append(run(f"%%ask --con con\n{QUESTIONS[0]}"))
            out["later"].append(
                statistics.mean(run(f"%%ask --con con\n{q}") for q in QUESTIONS[1:])
            )
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    seconds, mb, nfiles, parts = build()
    lite = browser(args.reps)
    py = cpython(args.reps)
    med = statistics.median
    rows = []
    for key, label in (
        ("boot", "kernel start to idle (browser: page open to idle)"),
        ("first", "first `%%ask` (cold: imports, schema, panel)"),
        ("later", "later `%%ask` (mean of a repeat and a 2-attempt correction)"),
    ):
        b, c = med(lite[key]), med(py[key])
        rows.append([label, f"{b:.2f} s", f"{c:.2f} s", f"{b / c:.1f}x"])
    big = sorted(parts.items(), key=lambda kv: -kv[1])[:5]
    body = "\n\n".join(
        [
            f"**Site build** (`scripts/build_lite.py --variant offline`, from the prepared caches): "
            f"{seconds:.1f} s; `build/lite/` is {mb:.1f} MB in {nfiles} files (largest parts: "
            + ", ".join(f"{k} {v:.1f} MB" for k, v in big)
            + ").",
            table(
                [
                    f"median of {args.reps} runs",
                    "JupyterLite (Pyodide)",
                    "CPython kernel",
                    "ratio",
                ],
                rows,
            ),
            "Same questions, same stored scripted replies (the model answers instantly), same "
            "SQLite shop, `%%ask --con con` with the live panel on. Browser: the offline site on "
            "127.0.0.1 in headless Chromium (nothing leaves the machine), timed from the run "
            "command to the kernel's idle; CPython: ipykernel through jupyter_client, timed from "
            "execute to reply. The machine was shared with other builds and tests while "
            "measuring (2 cores): read the ratios, not the absolute times. Raw (s): "
            + str(
                {
                    kernel: {k: [round(x, 2) for x in v] for k, v in runs.items()}
                    for kernel, runs in (("browser", lite), ("cpython", py))
                }
            ),
        ]
    )
    if args.no_write:
        print(body)
    else:
        write_section(
            "lite",
            "JupyterLite: site, kernel boot and %%ask in the browser vs a CPython kernel",
            body,
            ["jupyterlite-core", "jupyterlite-pyodide-kernel", "playwright", "ipykernel"],
        )


if __name__ == "__main__":
    main()
