"""``python -m benchmarks.lite``: how fast the JupyterLite site opens and answers, before and after,
and the model in the page against the same model in a CPython kernel (``benchmarks/lite_model.py``;
``--part boot`` or ``--part model`` runs one of the two).

Two offline sites are built: the current tree's (``build/lite``) and the baseline commit's
(``--before``, default :data:`BASELINE`, exported with ``git archive`` and built with its own
build script from the same caches). Each round opens both (the order alternates round by round)
in a **new Chromium profile** (empty HTTP cache), served on 127.0.0.1 by the test suite's static
server, which sends the site's own ``_headers`` caching rules as a static host would; Chromium
resolves no other host. A cold visit runs the browser tutorial's first cells (``%load_ext``, the
SQLite connection, the scripted model) and three ``%%ask`` cells; a **warm second visit** then
opens the page again in the same profile (browser cache; the tutorial as shipped, not the edited copy JupyterLite stored) and waits for the idle kernel. A
CPython kernel runs the same cells each round, for the ratios.

The breakdown is read from the real browser: the page's and the kernel worker's performance
timelines (every file fetched, when and how big; the kernel's Python runs in the worker), and
timestamps taken inside the kernel (``benchmarks/lite_probe.py``: import time per package, the
first schema read, the safety check and the live panel).

The benchmark loads the machine itself (Chromium and the kernel keep a core or two busy during a
visit, and the 1-minute load average remembers it for minutes), so its refusal rule judges the
machine by what the other processes do: before each visit it waits (up to ``--settle``
seconds) for the 1-minute load average to fall to ``--max-load`` (1.5) and records the load it
sampled then; during each visit it measures the CPU the other processes used (the machine's
busy time from ``/proc/stat`` minus this process tree's). Its page and rows are written
only when every visit started at or below ``--max-load`` and the others used at most
``--max-others`` cores (0.5) during it; otherwise they are printed, marked as loaded, and saved
to ``build/lite-bench/loaded.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks import lite_model
from benchmarks.lite_site import (  # noqa: F401 - read by the tests
    ARGS,
    CHROMIUM,
    IDLE,
    MAX_LOAD,
    MAX_OTHERS,
    NOTEBOOK,
    RUN_CELL,
    SETTLE,
    SITE,
    WORK,
    Others,
    Quiet,
    _load,
    _tree_seconds,
    build,
    settle,
    verdict,
)
from benchmarks.report import Row, row, table, write_page

ROOT = Path(__file__).resolve().parents[1]
#: main before issue 27 (JupyterLite that opens in seconds): the site as it was.
BASELINE = "04c63d7"
QUESTIONS = [  # first: a first-try answer; later: the same again, then a corrected one
    "How many customers are there in each country? Show the five largest.",
    "How many customers are there in each country? Show the five largest.",
    "What is the revenue per product category, highest first?",
]
SETUP_CELLS = [
    ("load_ext", "%load_ext cadet_magic"),
    ("connect", "import sqlite3\ncon = sqlite3.connect('file:{db}?mode=ro', uri=True)"),
    ("model", "%config AskMagic.model = 'scripted:{replies}'"),
]
PROBE = (ROOT / "benchmarks" / "lite_probe.py").read_text()

#: Page-side marks: the app object, its start, the first panel on the page.
INIT_SCRIPT = """
(() => {
  const seen = {};
  const mark = n => { if (!seen[n]) { seen[n] = 1; performance.mark(n); } };
  const poll = setInterval(() => {
    const app = window.jupyterapp;
    if (app) {
      mark('app-object');
      app.started.then(() => mark('app-started'));
      app.restored.then(() => mark('app-restored'));
      const sessions = app.serviceManager && app.serviceManager.sessions;
      if (sessions) {  // the notebook asks for its kernel
        const startNew = sessions.startNew.bind(sessions);
        sessions.startNew = (...args) => { mark('session-start'); return startNew(...args); };
      }
      clearInterval(poll);
    }
  }, 10);
  new MutationObserver(() => {
    if (document.querySelector('.cadet-panel')) mark('panel');
  }).observe(document, {subtree: true, childList: true});
})();
"""
ENTRIES = """() => ({origin: performance.timeOrigin,
  marks: Object.fromEntries(performance.getEntriesByType('mark').map(m => [m.name, m.startTime])),
  nav: performance.getEntriesByType('navigation').map(e => e.toJSON()),
  resources: performance.getEntriesByType('resource').map(e => ({name: e.name,
    start: e.startTime, end: e.responseEnd, size: e.decodedBodySize,
    transfer: e.transferSize}))})"""
OUTPUT = """i => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const outs = cells.get(i).toJSON().outputs || [];
  return outs.map(o => o.text || (o.data && o.data['text/plain']) || '').join(''); }"""


# ---------------------------------------------------------------------------------------------
# the two sites


def export(ref: str) -> Path:
    """The tree of commit ``ref`` in build/lite-bench/before (sharing this checkout's caches)."""
    src = WORK / "before"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", ref], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    (src / ".cache").symlink_to(ROOT / ".cache")
    return src


# ---------------------------------------------------------------------------------------------
# one visit


class Visit:
    """One page in a browser profile: runs cells, reads the timelines."""

    def __init__(self, context, base: str) -> None:
        self.page = context.new_page()
        self.page.set_default_timeout(300_000)
        self.base = base
        self.cells = 0

    def open(self) -> float:
        t0 = time.perf_counter()
        self.page.goto(f"{self.base}/lab/index.html?path={NOTEBOOK}")
        #: when the kernel was first seen idle (ms on the page's clock): read again later, it
        #: may be busy (cadet_magic's background load starts 1 s after the kernel's start)
        self.idle_ms = self.page.wait_for_function(IDLE, polling=20).json_value()
        self.cells = self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.content.model.cells.length"
        )
        return time.perf_counter() - t0

    def run(self, source: str) -> tuple[float, str]:
        """Appends a cell, runs it, waits for the idle kernel; (seconds, its text output)."""
        self.page.evaluate(
            """src => { const nb = window.jupyterapp.shell.currentWidget;
            const n = nb.content.model.cells.length;
            nb.content.model.sharedModel.insertCell(n, {cell_type: 'code', source: src});
            nb.content.activeCellIndex = n; }""",
            source,
        )
        index = self.cells
        self.cells += 1
        # timed in the page, from the run command to the kernel's idle status (its own signal,
        # not a poll: a 20 ms poll added half its period to each cell on average, which the
        # CPython kernel's client, told at once, does not pay)
        seconds = self.page.evaluate(RUN_CELL) / 1000
        self.page.wait_for_function(IDLE, polling=20)
        return seconds, self.page.evaluate(OUTPUT, index)

    def timelines(self) -> tuple[dict, dict | None]:
        page = self.page.evaluate(ENTRIES)
        worker = None
        for w in self.page.workers:
            if "comlink.worker" in w.url or "coincident.worker" in w.url:  # isolated or not
                worker = w.evaluate(ENTRIES)
        return page, worker


def kernel_boot(boot: dict, origin: float, idle: float) -> dict:
    """The probe's file stamps from inside the kernel (wall-clock ms) as ms from opening the
    page: the runtime's file system set up, the first and last package unpacked before the
    kernel was idle (``idle``, ms), and the files unpacked in the background after it.

    >>> b = kernel_boot({"stdlib": 1500.0, "packages": {"a": [1600, 1700, 9],
    ...     "b": [1700, 2000, 20], "c": [2600, 2900, 50]}}, 1000.0, 1500.0)
    >>> b["stdlib_written"], b["unpack_first"], b["unpack_last"], b["unpack_files"]
    (500.0, 600.0, 1000.0, 29)
    >>> b["later_files"], b["later_last"]
    (50, 1900.0)
    """
    packages = boot.get("packages") or {}
    at_boot = {k: v for k, v in packages.items() if v[0] - origin <= idle}
    if not at_boot or "stdlib" not in boot:
        return {}
    later = [v for k, v in packages.items() if k not in at_boot]
    return {
        "stdlib_written": boot["stdlib"] - origin,
        "unpack_first": min(v[0] for v in at_boot.values()) - origin,
        "unpack_last": max(v[1] for v in at_boot.values()) - origin,
        "unpack_files": sum(v[2] for v in at_boot.values()),
        "later_files": sum(v[2] for v in later),
        "later_last": max((v[1] - origin for v in later), default=float("nan")),
    }


def cache_use(page: dict, worker: dict | None) -> dict:
    """What a visit's files cost on the wire: bytes and files taken from the HTTP cache without
    asking (transfer size 0), revalidated (a 304: headers only) or fetched whole."""
    out = {"cached_files": 0, "cached_bytes": 0, "revalidated_files": 0, "fetched_files": 0}
    out["fetched_bytes"] = 0
    for r in [*page["resources"], *(worker or {}).get("resources", [])]:
        if r["transfer"] == 0:
            out["cached_files"] += 1
            out["cached_bytes"] += r["size"]
        elif r["transfer"] < r["size"] or r["transfer"] < 1000 < r["size"]:
            out["revalidated_files"] += 1
        else:
            out["fetched_files"] += 1
            out["fetched_bytes"] += r["size"]
    return out


def _wheel(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def boot_breakdown(page: dict, worker: dict | None, idle_ms: float) -> dict:
    """Milestones (ms from navigation start) and what the kernel fetched before it was idle."""
    res = page["resources"]
    js = [r for r in res if r["name"].endswith(".js") and r["start"] < idle_ms]
    out: dict = {
        "html": page["nav"][0]["responseEnd"] if page["nav"] else 0.0,
        "app_js_bytes": sum(r["size"] for r in js),
        "app_js_files": len(js),
        "app_started": page["marks"].get("app-started", float("nan")),
        "session_start": page["marks"].get("session-start", float("nan")),
        "idle": idle_ms,
    }
    if worker is None:
        return out
    shift = worker["origin"] - page["origin"]  # the worker's clock starts when it is created
    out["worker_created"] = shift
    wres = [
        {**r, "start": r["start"] + shift, "end": r["end"] + shift} for r in worker["resources"]
    ]

    def end_of(suffix: str) -> float:
        hits = [r["end"] for r in wres if r["name"].endswith(suffix)]
        return max(hits) if hits else float("nan")

    out["pyodide_core"] = max(end_of("pyodide.asm.wasm"), end_of("python_stdlib.zip"))
    out["pyodide_core_bytes"] = sum(
        r["size"]
        for r in wres
        if r["name"].endswith(
            ("pyodide.asm.wasm", "python_stdlib.zip", "pyodide.asm.js", "pyodide.mjs")
        )
    )
    wheels = [r for r in wres if r["name"].endswith((".whl", ".zip")) and "stdlib" not in r["name"]]
    out["wheels"] = {_wheel(r["name"]): r["size"] for r in wheels}
    out["wheels_first_start"] = min((r["start"] for r in wheels), default=float("nan"))
    out["wheels_last_end"] = max((r["end"] for r in wheels), default=float("nan"))
    out["index_json"] = [_wheel(r["name"]) for r in wres if r["name"].endswith("all.json")]
    return out


def cold_and_warm(pw, base: str, files: str, quiet: Quiet | None = None) -> dict:
    """A new profile: a cold visit with the tutorial's cells, then a warm second visit (each
    after ``quiet``'s wait for the load to settle)."""
    quiet = quiet or Quiet(limit=float("inf"), timeout=0.0)
    profile = tempfile.mkdtemp(prefix="cadet-lite-profile-")
    context = pw.chromium.launch_persistent_context(
        profile,
        executable_path=CHROMIUM,
        args=ARGS,
        headless=True,
        viewport={"width": 1280, "height": 1000},
    )
    try:
        context.add_init_script(INIT_SCRIPT)
        visit = Visit(context, base)
        run: dict = {"load": [quiet.settle()]}
        others = Others().__enter__()
        run["boot"] = visit.open()
        idle_ms = visit.idle_ms
        page, worker = visit.timelines()
        run["breakdown"] = boot_breakdown(page, worker, idle_ms)
        visit.run(PROBE)  # untimed: starts the in-kernel timers
        for key, cell in SETUP_CELLS:
            run[key], _ = visit.run(
                cell.format(db=f"{files}/shop.sqlite", replies=f"{files}/browser_replies.json")
            )
        visit.page.evaluate("() => performance.mark('ask-start')")
        run["first"], _ = visit.run(f"%%ask --con con\n{QUESTIONS[0]}")
        page_after, worker_after = visit.timelines()
        start = page_after["marks"].get("ask-start", 0.0)
        if worker_after is not None:  # the kernel's file reads: /drive is served by the page
            shift = worker_after["origin"] - page_after["origin"]
            drive = [
                r
                for r in worker_after["resources"]
                if "/api/drive" in r["name"] and r["start"] + shift >= start
            ]
            run["drive_requests"] = len(drive)
            run["drive_seconds"] = sum(r["end"] - r["start"] for r in drive) / 1000
        run["panel_visible"] = (page_after["marks"].get("panel", float("nan")) - start) / 1000
        later = [r for r in page_after["resources"] if r["start"] >= start]
        run["widget_js_bytes"] = sum(r["size"] for r in later if r["name"].endswith(".js"))
        run["later"] = statistics.mean(visit.run(f"%%ask --con con\n{q}")[0] for q in QUESTIONS[1:])
        _, text = visit.run("print(_probe_report())")
        others.__exit__()
        run["others"] = [others.cores]
        run["probe"] = json.loads(text.strip().splitlines()[-1])
        run["breakdown"].update(kernel_boot(run["probe"].get("boot", {}), page["origin"], idle_ms))
        visit.page.close()
        warm = Visit(context, base)
        # the same pristine tutorial as the cold visit (JupyterLite keeps the edited notebook in
        # the origin's IndexedDB); the HTTP cache, the service worker and the local storage stay
        # (there JupyterLite notes its service worker's version: without it a returning reader's
        # page would unregister the worker and register it again)
        cdp = context.new_cdp_session(warm.page)
        cdp.send("Storage.clearDataForOrigin", {"origin": base, "storageTypes": "indexeddb,websql"})
        cdp.detach()
        run["load"].append(quiet.settle())
        with Others() as others:
            run["warm"] = warm.open()
        run["others"].append(others.cores)
        page, worker = warm.timelines()
        run["warm_breakdown"] = boot_breakdown(page, worker, warm.idle_ms)
        run["warm_breakdown"]["cached"] = cache_use(page, worker)
        warm.page.close()
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)
    return run


def cpython_run(files: Path, quiet: Quiet | None = None) -> dict:
    from jupyter_client.manager import start_new_kernel

    quiet = quiet or Quiet(limit=float("inf"), timeout=0.0)
    run: dict = {"load": [quiet.settle()]}
    others = Others().__enter__()
    t0 = time.perf_counter()
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(files))
    try:
        kc.wait_for_ready(timeout=120)
        run["boot"] = time.perf_counter() - t0
        out: list[str] = []

        def cell(source: str) -> float:
            t = time.perf_counter()
            reply = kc.execute_interactive(
                source,
                timeout=300,
                output_hook=lambda m: out.append(m["content"].get("text", "")),
            )
            assert reply["content"]["status"] == "ok", reply["content"]
            return time.perf_counter() - t

        cell(PROBE)
        for key, source in SETUP_CELLS:
            run[key] = cell(
                source.format(db=files / "shop.sqlite", replies=files / "browser_replies.json")
            )
        run["first"] = cell(f"%%ask --con con\n{QUESTIONS[0]}")
        run["later"] = statistics.mean(cell(f"%%ask --con con\n{q}") for q in QUESTIONS[1:])
        out.clear()
        cell("print(_probe_report())")
        run["probe"] = json.loads("".join(out).strip().splitlines()[-1])
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    others.__exit__()
    run["others"] = [others.cores]
    return run


@contextlib.contextmanager
def _served(sites: dict[str, Path]) -> Iterator[dict[str, str]]:
    from tests.lite.site import serve  # the test suite's static server on 127.0.0.1

    with contextlib.ExitStack() as stack:
        yield {name: stack.enter_context(serve(path)) for name, path in sites.items()}


# ---------------------------------------------------------------------------------------------
# report


def _med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _s(x: float) -> str:
    return f"{x:.2f} s"


def _mb(b: float) -> str:
    return f"{b / 1e6:.1f} MB"


def breakdown_table(runs: list[dict], visit: str = "cold visit") -> str:
    """The median ``visit``, milestone by milestone (ms from opening the page)."""
    b = [r["breakdown"] for r in runs]

    def med(key: str) -> float:
        vals = [x[key] for x in b if key in x and x[key] == x[key]]
        return statistics.median(vals) if vals else float("nan")

    rows = [
        ["page HTML received", f"{med('html') / 1000:.2f} s", ""],
        [
            "JupyterLab started (its JavaScript fetched, parsed, plug-ins activated)",
            f"{med('app_started') / 1000:.2f} s",
            f"{statistics.median(x['app_js_files'] for x in b):.0f} .js files, "
            + _mb(statistics.median(x["app_js_bytes"] for x in b)),
        ],
        ["kernel's web worker created", f"{med('worker_created') / 1000:.2f} s", ""],
        [
            "the notebook open, its kernel asked for (JupyterLab's session start)",
            f"{med('session_start') / 1000:.2f} s",
            "",
        ],
        [
            "Pyodide core fetched (wasm + standard library)",
            f"{med('pyodide_core') / 1000:.2f} s",
            _mb(med("pyodide_core_bytes")),
        ],
        ["first package fetch starts", f"{med('wheels_first_start') / 1000:.2f} s", ""],
        ["last package fetched", f"{med('wheels_last_end') / 1000:.2f} s", ""],
        [
            "runtime's file system set up (standard library written; kernel's file stamp)",
            f"{med('stdlib_written') / 1000:.2f} s",
            "",
        ],
        [
            "first package unpacked (kernel's file stamps)",
            f"{med('unpack_first') / 1000:.2f} s",
            "",
        ],
        [
            "last package unpacked (kernel's file stamps)",
            f"{med('unpack_last') / 1000:.2f} s",
            f"{med('unpack_files'):.0f} files",
        ],
        ["kernel idle (IPython imported, the kernel started)", f"{med('idle') / 1000:.2f} s", ""],
        [
            "background load done (last package unpacked after idle; kernel's file stamps)",
            f"{med('later_last') / 1000:.2f} s",
            f"{med('later_files'):.0f} files",
        ],
    ]
    rows = sorted((r for r in rows if not r[1].startswith("nan")), key=lambda r: float(r[1][:-2]))
    return table([f"{visit}: milestone (median)", "time from opening the page", "size"], rows)


def wheels_line(run: dict) -> str:
    wheels = run["breakdown"].get("wheels", {})
    total = sum(wheels.values())
    biggest = sorted(wheels.items(), key=lambda kv: -kv[1])
    return f"{len(wheels)} packages fetched before the kernel was idle, {_mb(total)}: " + ", ".join(
        f"{n.split('-')[0]} {v / 1e3:.0f} kB" for n, v in biggest
    )


def cache_line(runs: list[dict]) -> str:
    """How the warm visits used the HTTP cache (median over the runs)."""

    def med(key: str) -> float:
        return statistics.median(r["warm_breakdown"]["cached"][key] for r in runs)

    return (
        f"Warm visit's files: {med('cached_files'):.0f} from the HTTP cache without a request "
        f"({_mb(med('cached_bytes'))}), {med('revalidated_files'):.0f} revalidated (304, "
        f"headers only), {med('fetched_files'):.0f} fetched whole ({_mb(med('fetched_bytes'))})."
    )


def ask_table(runs: list[dict], cpy: list[dict]) -> str:
    def imports(run: dict, n: int = 6) -> str:
        imp = sorted(run["probe"]["imports"].items(), key=lambda kv: -kv[1])[:n]
        return ", ".join(f"{k} {v:.2f}" for k, v in imp)

    def call(run: dict, label: str) -> float:
        xs = run["probe"]["calls"].get(label, [])
        return xs[0] if xs else float("nan")

    rows = []
    for label in ("schema read", "safety check (sqlglot parse)", "live panel built"):
        rows.append(
            [
                f"first ask: {label} (first call)",
                _s(statistics.median(call(r, label) for r in runs)),
                _s(statistics.median(call(r, label) for r in cpy)),
            ]
        )
    rows.append(
        [
            "first ask: the live panel drawn on the page (from run)",
            _s(_med(runs, "panel_visible")),
            "",
        ]
    )
    rows.append(
        [
            "first ask: the kernel's file-system requests for /drive/shop.sqlite (count, time)",
            f"{statistics.median(r.get('drive_requests', 0) for r in runs):.0f}, "
            + _s(statistics.median(r.get("drive_seconds", 0.0) for r in runs)),
            "",
        ]
    )
    rows.append(
        [
            "first ask: widget front ends fetched (JavaScript)",
            _mb(statistics.median(r["widget_js_bytes"] for r in runs)),
            "",
        ]
    )
    mid = runs[len(runs) // 2]
    rows.append(
        [
            "imports from `%load_ext` to the last ask, by package (s, one run)",
            imports(mid),
            imports(cpy[len(cpy) // 2]),
        ]
    )
    return table(["where the first cells' time goes", "JupyterLite", "CPython kernel"], rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="cold runs per site (median)")
    parser.add_argument("--before", default=BASELINE, help="baseline commit (default %(default)s)")
    parser.add_argument("--no-before", action="store_true", help="only the current tree")
    parser.add_argument(
        "--max-load",
        type=float,
        default=MAX_LOAD,
        help="1-minute load average a visit may start at (default %(default)s)",
    )
    parser.add_argument(
        "--max-others",
        type=float,
        default=MAX_OTHERS,
        help="cores other processes may use during a visit (default %(default)s)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=SETTLE,
        help="seconds to wait before each visit for the load to settle (default %(default)s)",
    )
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--part",
        choices=["boot", "model", "all"],
        default="all",
        help="the site's boot before and after (boot), the model in the page against the "
        "CPython kernel (model: benchmarks/lite_model.py), or both (default)",
    )
    parser.add_argument(
        "--questions", type=int, default=5, help="sample-shop questions per setup (model part)"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="the model part's figures again from its last run (build/lite-bench/model-runs.json)",
    )
    args = parser.parse_args(argv)
    if args.part in ("model", "all"):
        lite_model.main(args)
    if args.part == "model":
        return
    from playwright.sync_api import sync_playwright

    WORK.mkdir(parents=True, exist_ok=True)
    built = {"after": build(SITE, ROOT)}
    sites = {"after": SITE}
    if not args.no_before:
        src = export(args.before)
        built["before"] = build(src / "build" / "lite", src)
        sites["before"] = src / "build" / "lite"
    runs: dict[str, list[dict]] = {name: [] for name in sites}
    cpy: list[dict] = []
    quiet = Quiet(args.max_load, args.settle)
    with _served(sites) as bases, sync_playwright() as pw:
        for i in range(args.runs):
            order = sorted(sites, reverse=bool(i % 2))
            for name in order:
                runs[name].append(cold_and_warm(pw, bases[name], "/drive", quiet))
                r = runs[name][-1]
                print(
                    f"round {i + 1} {name}: boot {r['boot']:.2f} s, first ask {r['first']:.2f} s, "
                    f"later {r['later']:.2f} s, warm {r['warm']:.2f} s, "
                    f"load before cold/warm {_pair(r['load'])}, others' cores {_pair(r['others'])}",
                    flush=True,
                )
            cpy.append(cpython_run(SITE / "files", quiet))
    loads = [x for rs in [*runs.values(), cpy] for r in rs for x in r["load"]]
    others = [x for rs in [*runs.values(), cpy] for r in rs for x in r["others"]]
    loaded = verdict(loads, others, args.max_load, args.max_others)
    report = render(args, built, runs, cpy, loads, others)
    if loaded or args.no_write:
        mark = f"LOADED ({loaded}): not the product's speed; no page written\n\n" if loaded else ""
        (WORK / "loaded.md").write_text(mark + report)
        (WORK / "runs.json").write_text(json.dumps({"runs": runs, "cpython": cpy}, indent=1))
        print(mark + report)
        return
    (WORK / "runs.json").write_text(json.dumps({"runs": runs, "cpython": cpy}, indent=1))
    write_page(
        "lite",
        "JupyterLite: opening the site and the first answers, before and after",
        report,
        figures(runs["after"], cpy),
        ["jupyterlite-core", "jupyterlite-pyodide-kernel", "playwright", "ipykernel"],
    )


#: The site's budgets: seconds (boot, first, warm) and the later asks' ratio to CPython's.
BUDGETS = {"boot": 6.0, "first": 1.5, "later": 5.0, "warm": 3.0}


def figures(after: list[dict], cpy: list[dict]) -> list[Row]:
    """The rows of BENCHMARKS.md: the current tree's medians against :data:`BUDGETS`.

    >>> runs = [{"boot": 3.5, "first": 0.7, "later": 0.12, "warm": 2.4}]
    >>> [(r.value, r.met) for r in figures(runs, [{"later": 0.03}])]
    [('3.50 s', True), ('0.70 s', True), ('4.0x (0.12 s against 0.03 s)', True), ('2.40 s', True)]
    """
    command = "python -m benchmarks.lite --part boot"
    boot, first, warm = (_med(after, k) for k in ("boot", "first", "warm"))
    later, cpython = _med(after, "later"), _med(cpy, "later")
    return [
        row(
            "JupyterLite: page open to idle kernel (new browser profile)",
            f"{boot:.2f} s",
            f"≤ {BUDGETS['boot']:g} s",
            boot <= BUDGETS["boot"],
            command,
        ),
        row(
            "JupyterLite: first `%%ask` (scripted model)",
            f"{first:.2f} s",
            f"≤ {BUDGETS['first']:g} s",
            first <= BUDGETS["first"],
            command,
        ),
        row(
            "JupyterLite: later `%%ask` against the CPython kernel",
            f"{later / cpython:.1f}x ({later:.2f} s against {cpython:.2f} s)",
            f"≤ {BUDGETS['later']:g}x",
            later / cpython <= BUDGETS["later"],
            command,
        ),
        row(
            "JupyterLite: warm second visit, page open to idle kernel",
            f"{warm:.2f} s",
            f"≤ {BUDGETS['warm']:g} s",
            warm <= BUDGETS["warm"],
            command,
        ),
    ]


def _pair(xs: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in xs)


def render(args, built, runs, cpy, loads, others) -> str:
    names = [n for n in ("before", "after") if n in runs]
    head = (
        [f"median of {args.runs} cold runs"]
        + [f"{n} ({args.before if n == 'before' else 'this tree'})" for n in names]
        + ["CPython kernel", "after / CPython", "target"]
    )
    targets = {
        "boot": f"<= {BUDGETS['boot']:g} s",
        "first": f"<= {BUDGETS['first']:g} s",
        "later": f"<= {BUDGETS['later']:g}x CPython",
        "warm": f"<= {BUDGETS['warm']:g} s",
    }
    for rs in [*runs.values(), cpy]:
        for r in rs:
            r["to_answer"] = sum(r[k] for k in ("boot", "load_ext", "connect", "model", "first"))
    rows = []
    for key, label in (
        ("to_answer", "page open to the first answer (boot, the three set-up cells, first ask)"),
        ("boot", "page open to idle kernel (new profile)"),
        ("load_ext", "`%load_ext cadet_magic`"),
        ("first", "first `%%ask` (scripted model)"),
        ("later", "later `%%ask` (mean of a repeat and a 2-attempt correction)"),
        ("warm", "warm second visit: page open to idle kernel (browser cache)"),
    ):
        cells = [label] + [_s(_med(runs[n], key)) for n in names]
        if key in cpy[0]:
            c = _med(cpy, key)
            cells += [_s(c), f"{_med(runs['after'], key) / c:.1f}x"]
        else:
            cells += ["", ""]
        rows.append(cells + [targets.get(key, "")])
    sizes = "; ".join(
        f"{n}: built in {s:.1f} s, {mb:.1f} MB in {files} files"
        for n, (s, mb, files) in built.items()
    )
    parts = [
        table(head, rows),
        f"Load average (1 min) sampled before each visit (after waiting up to {args.settle:.0f} s "
        f"for it to settle): {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores; "
        f"CPU used by other processes during the visits: {min(others):.2f} to "
        f"{max(others):.2f} cores (median {statistics.median(others):.2f}). Sites: {sizes}.",
    ]
    for n in names:
        parts.append(f"**{n}: boot, median cold visit**\n\n" + breakdown_table(runs[n]))
        parts.append(wheels_line(runs[n][len(runs[n]) // 2]))
        parts.append(
            f"**{n}: warm second visit (same profile), median**\n\n"
            + breakdown_table([{"breakdown": r["warm_breakdown"]} for r in runs[n]], "warm visit")
        )
        parts.append(cache_line(runs[n]))
        parts.append(ask_table(runs[n], cpy))
    parts.append(
        "Raw (s): "
        + json.dumps(
            {
                n: {
                    k: [round(r[k], 2) for r in rs]
                    for k in ("boot", "first", "later", "warm")
                    if k in rs[0]
                }
                for n, rs in [*runs.items(), ("cpython", cpy)]
            }
        )
    )
    parts.append(
        "Re-run on a quiet machine: `.venv/bin/python -m benchmarks.lite` (needs "
        "`bash scripts/setup.sh`; builds both sites, then 5 interleaved rounds)."
    )
    return "\n\n".join(parts)


if __name__ == "__main__":
    main()
