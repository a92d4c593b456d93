"""The model in the JupyterLite page against the same model in a CPython kernel (part of
``python -m benchmarks.lite``; ``--part model`` runs only this).

The offline site is built with the pinned model (``build/lite``) and served on 127.0.0.1 by the
test suite's static server, twice: with the site's ``_headers`` (cross-origin isolated: wllama
runs several threads) and without its isolation headers (one thread), each in a new Chromium
profile on disk. In each:

* **cold load**: the tutorial opens, ``%load_ext`` and the shop's connection run, then a cell
  loads the model (``load_page_model()``): the parts fetched into the browser's storage, then
  wllama's load (the page's own timings: seconds fetching, seconds loading);
* **questions**: the sample shop's questions (``benchmarks.local_model.QUESTIONS``) as
  ``%%ask --model browser`` cells (one candidate, no vote), each timed in the page from the run
  command to the kernel's idle signal, with the answer's model seconds, calls and tokens;
* **memory**: the proportional set size of Chromium's processes (the page, its workers, the
  service worker) before the model was loaded, with it loaded, and after the questions;
* **warm load**: the page opened again in the same profile, the model loaded from the
  browser's copy (no part fetched: checked);
* **the channel**: round trips of a status request (kernel -> service worker -> page -> back)
  against a synchronous request for a small static file of the site.

A CPython kernel then runs the same cells with ``llamacpp:`` on the same GGUF file (the same
context size, greedy, llama.cpp's threads for this machine): the file's load, the questions,
the kernel's resident memory. The load average is sampled before each part and the CPU other
processes used is measured during it (as the JupyterLite boot benchmark does): figures taken on
a busy machine are written marked as taken under load (a run of these takes an hour on two
cores: its figures are kept with their mark rather than thrown away).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.lite_site import (
    ARGS,
    CHROMIUM,
    IDLE,
    NOTEBOOK,
    RUN_CELL,
    SITE,
    WORK,
    Others,
    Quiet,
    build,
    verdict,
)
from benchmarks.local_model import QUESTIONS
from benchmarks.report import Row, row, table, write_page

ROOT = Path(__file__).resolve().parents[1]
GGUF = ROOT / ".cache" / "llm" / "qwen.gguf"
#: Seconds a model call may take in either kernel (a busy 2-core machine is slow).
MODEL_TIMEOUT = 1800
#: Both kernels answer with one candidate: the page does not vote by default and the CPython
#: kernel would (up to five generations a question), so the figures compare one model's speed.
ONE_CANDIDATE = "%config AskMagic.candidates = 1"
#: The median question in the page within this many times the CPython kernel's.
GOAL = 3.0
CONNECT = "import sqlite3\ncon = sqlite3.connect('file:{db}?mode=ro', uri=True)"
#: The last answer's figures, printed as one JSON line.
ANSWER = (
    "import json as _j\n"
    "_t = _ask.tokens\n"
    "print(_j.dumps({'ok': _ask.ok, 'seconds': _ask.elapsed, 'model_seconds': _ask.model_seconds,"
    " 'calls': _ask.model_calls, 'input': (_t.input or 0) if _t else 0,"
    " 'output': (_t.output or 0) if _t else 0, 'attempts': len(_ask.attempts),"
    " 'model': _ask.model}))"
)
LOAD = (
    "import json as _j, time as _time\n"
    "from cadet_magic.llm.page import load_page_model\n"
    "_t0 = _time.perf_counter()\n"
    "_m = load_page_model()\n"
    "_s = _m.state\n"
    "print(_j.dumps({'seconds': _time.perf_counter() - _t0, 'fetch': _s.fetch_seconds,"
    " 'load': _s.load_seconds, 'fetched': _s.fetched, 'stored': _s.stored,"
    " 'threads': _s.threads, 'isolated': _s.isolated, 'label': _m.cadet_label}))"
)
CHANNEL = (
    "import json as _j, time as _time\n"
    "from cadet_magic.llm.page import PageChatModel, site_root\n"
    "from cadet_magic.llm.transport import xhr_transport\n"
    "_p = PageChatModel(on_progress=print)\n"
    "def _rt(f, n=30):\n"
    "    _x = []\n"
    "    for _ in range(n):\n"
    "        _t0 = _time.perf_counter(); f(); _x.append(_time.perf_counter() - _t0)\n"
    "    return sorted(_x)[n // 2] * 1000\n"
    "_f = site_root() + 'static/cadet-model/model.json'\n"
    "print(_j.dumps({'relay_ms': _rt(_p.status),"
    " 'static_ms': _rt(lambda: xhr_transport('GET', _f, {}, '', 30))}))"
)


#: A cell's outputs as text, an error's included (its name and message).
OUTPUT = """i => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const outs = cells.get(i).toJSON().outputs || [];
  return outs.map(o => o.text || (o.data && o.data['text/plain'])
    || (o.ename ? `${o.ename}: ${o.evalue}` : '')).join('\\n'); }"""


def _last_json(text: str) -> dict:
    """The JSON line a cell printed last; the cell's output in the error when there is none."""
    lines = text.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"benchmarks.lite: a cell gave no figures: {text[-2000:]!r}") from None


def chromium_pss(profile: str) -> float:
    """Bytes of proportional set size of the Chromium run on ``profile`` (all its processes)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "chromium" in cmd and profile in cmd:
                pids.append(entry)
    roots = {p.name for p in pids}
    # the renderers and workers are children of the browser process and name no profile
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name not in roots:
            try:
                ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            except OSError:
                continue
            if ppid in roots:
                pids.append(entry)
    total = 0
    for entry in pids:
        with contextlib.suppress(OSError):
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
    return float(total)


class PageVisit:
    """One page of the site in a persistent profile: runs cells, timed in the page."""

    def __init__(self, context, base: str) -> None:
        self.page = context.new_page()
        self.page.set_default_timeout(MODEL_TIMEOUT * 1000)
        t0 = time.perf_counter()
        self.page.goto(f"{base}/lab/index.html?path={NOTEBOOK}")
        self.page.wait_for_function(IDLE, polling=100)
        self.boot = time.perf_counter() - t0
        self.cells = self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.content.model.cells.length"
        )

    def run(self, source: str) -> tuple[float, str]:
        self.page.evaluate(
            """src => { const nb = window.jupyterapp.shell.currentWidget;
            const n = nb.content.model.cells.length;
            nb.content.model.sharedModel.insertCell(n, {cell_type: 'code', source: src});
            nb.content.activeCellIndex = n; }""",
            source,
        )
        index, self.cells = self.cells, self.cells + 1
        seconds = self.page.evaluate(RUN_CELL) / 1000
        self.page.wait_for_function(IDLE, polling=100)
        return seconds, self.page.evaluate(OUTPUT, index)


def page_setup(pw, base: str, quiet: Quiet, questions: list[str], isolated: bool) -> dict:
    """Cold load, questions, memory and warm load in a new profile (see the module's doc)."""
    profile = tempfile.mkdtemp(prefix="cadet-lite-model-")
    context = pw.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, args=ARGS, headless=True
    )
    parts: list[str] = []
    context.on("request", lambda r: parts.append(r.url) if "/cadet-model/parts/" in r.url else None)
    run: dict = {"load_avg": [quiet.settle()], "questions": []}
    try:
        with Others() as others:
            visit = PageVisit(context, base)
            assert visit.page.evaluate("crossOriginIsolated") is isolated
            visit.run("%load_ext cadet_magic")
            visit.run(CONNECT.format(db="/drive/shop.sqlite"))
            visit.run(f"%config AskMagic.model_timeout = {MODEL_TIMEOUT}")
            visit.run(ONE_CANDIDATE)
            run["channel"] = _last_json(visit.run(CHANNEL)[1])
            run["pss_before"] = chromium_pss(profile)
            run["cold"] = _last_json(visit.run(LOAD)[1])
            run["parts_fetched"] = len(parts)
            run["pss_loaded"] = chromium_pss(profile)
            for question in questions:
                seconds, _ = visit.run(f"%%ask --con con --model browser\n{question}")
                answer = _last_json(visit.run(ANSWER)[1])
                run["questions"].append({"question": question, "cell": seconds, **answer})
                print(
                    f"  page ({'threads' if isolated else 'one thread'}): {seconds:6.1f} s "
                    f"{answer['calls']} call(s) ok={answer['ok']} {question}",
                    flush=True,
                )
            run["pss_after"] = chromium_pss(profile)
            visit.page.close()
        run["others"] = [others.cores]
        run["load_avg"].append(quiet.settle())
        before = len(parts)
        with Others() as others:
            warm = PageVisit(context, base)
            warm.run("%load_ext cadet_magic")
            run["warm"] = _last_json(warm.run(LOAD)[1])
            run["warm_parts_fetched"] = len(parts) - before
            warm.page.close()
        run["others"].append(others.cores)
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)
    return run


def cpython_setup(files: Path, quiet: Quiet, questions: list[str]) -> dict:
    """The same model in a CPython kernel (``llamacpp:``), the same cells."""
    from jupyter_client.manager import start_new_kernel

    run: dict = {"load_avg": [quiet.settle()], "questions": []}
    spec = f"llamacpp:{GGUF}"
    with Others() as others:
        km, kc = start_new_kernel(kernel_name="python3", cwd=str(files))
        try:
            kc.wait_for_ready(timeout=120)

            def cell(source: str) -> tuple[float, str]:
                out: list[str] = []
                t = time.perf_counter()
                reply = kc.execute_interactive(
                    source,
                    timeout=MODEL_TIMEOUT,
                    output_hook=lambda m: out.append(m["content"].get("text", "")),
                )
                assert reply["content"]["status"] == "ok", reply["content"]
                return time.perf_counter() - t, "".join(out)

            cell("%load_ext cadet_magic")
            cell(CONNECT.format(db=files / "shop.sqlite"))
            cell(f"%config AskMagic.model_timeout = {MODEL_TIMEOUT}")
            cell(ONE_CANDIDATE)
            seconds, _ = cell(
                f"from cadet_magic.llm.llamacpp import load_llamacpp\n_m = load_llamacpp({spec!r})"
            )
            run["cold"] = {"seconds": seconds}
            pid = km.provisioner.process.pid  # type: ignore[union-attr]
            for question in questions:
                seconds, _ = cell(f"%%ask --con con --model {spec}\n{question}")
                answer = _last_json(cell(ANSWER)[1])
                run["questions"].append({"question": question, "cell": seconds, **answer})
                print(
                    f"  CPython: {seconds:6.1f} s {answer['calls']} call(s) "
                    f"ok={answer['ok']} {question}",
                    flush=True,
                )
            status = Path(f"/proc/{pid}/status").read_text()
            run["rss"] = (
                float(next(ln for ln in status.splitlines() if ln.startswith("VmRSS")).split()[1])
                * 1024
            )
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    run["others"] = [others.cores]
    return run


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _gb(b: float) -> str:
    return f"{b / 1e9:.2f} GB"


def ratios_of(setups: dict[str, dict], cpy: dict) -> dict[str, tuple[float, int]]:
    """Each setup's median question against the CPython kernel's on the questions it ran (a
    prefix of the list), and how many it ran."""
    return {
        n: (
            _med(s["questions"], "cell") / _med(cpy["questions"][: len(s["questions"])], "cell"),
            len(s["questions"]),
        )
        for n, s in setups.items()
    }


def figures(ratios: dict[str, tuple[float, int]]) -> list[Row]:
    """The row of BENCHMARKS.md: the page's best setup against :data:`GOAL`.

    >>> figures({"several threads": (10.6, 5), "one thread": (14.0, 5)})[0].value
    '10.6x (several threads, 5 questions)'
    """
    name, (ratio, n) = min(ratios.items(), key=lambda kv: kv[1][0])
    return [
        row(
            "JupyterLite: the model in the page, median sample-shop question against the "
            "same model in the CPython kernel",
            f"{ratio:.1f}x ({name}, {n} questions)",
            f"≤ {GOAL:g}x",
            ratio <= GOAL,
            "python -m benchmarks.lite --part model",
        )
    ]


def goal_line(ratios: dict[str, tuple[float, int]], loaded: str) -> str:
    """Whether the median question in the page is within :data:`GOAL` times the CPython
    kernel's on the same questions, per setup (its ratio and its number of questions), and
    what the figures are worth.

    >>> print(goal_line({"several threads": (2.5, 5), "one thread": (4.0, 2)}, ""))
    **Goal** (the median question in the page within 3x the CPython kernel's on the same questions): met with several threads (2.5x, n = 5 questions); not met with one thread (4.0x, n = 2 questions).
    >>> goal_line({"several threads": (2.5, 5)}, "load 4.2").endswith("is still owed.")
    True
    """
    said = "; ".join(
        f"{'met' if r <= GOAL else 'not met'} with {name} ({r:.1f}x, n = {n} questions)"
        for name, (r, n) in ratios.items()
    )
    line = (
        f"**Goal** (the median question in the page within {GOAL:g}x the CPython kernel's "
        f"on the same questions): {said}."
    )
    if loaded:
        line += (
            " On figures taken under load (both kernels on the same busy machine, side by "
            "side in one run): a figure on a quiet machine is still owed."
        )
    return line


def runtimes() -> str:
    """Chromium's and wllama's versions (the page's side of the comparison)."""
    try:
        chromium = subprocess.run(
            [CHROMIUM, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except OSError:
        chromium = "Chromium (version unknown)"
    pins = json.loads((ROOT / "lite" / "model" / "package.json").read_text())["dependencies"]
    return f"{chromium}, @wllama/wllama {pins['@wllama/wllama']}"


def render(
    setups: dict[str, dict],
    cpy: dict,
    loads: list[float],
    others: list[float],
    loaded: str = "",
) -> str:
    names = list(setups)
    c_med = _med(cpy["questions"], "cell")
    ratios = ratios_of(setups, cpy)
    head = ["", *[f"in the page, {n}" for n in names], "CPython kernel (`llamacpp:`)"]
    rows = [
        [
            "model load, cold: fetched into the browser + loaded (s)",
            *[
                f"{s['cold']['fetch']:.1f} + {s['cold']['load']:.1f} "
                f"({s['parts_fetched']} parts fetched)"
                for s in setups.values()
            ],
            f"{cpy['cold']['seconds']:.1f} (the file's load)",
        ],
        [
            "model load, warm: read from the browser's copy + loaded (s)",
            *[
                f"{s['warm']['fetch']:.1f} + {s['warm']['load']:.1f} "
                f"({s['warm_parts_fetched']} parts fetched)"
                for s in setups.values()
            ],
            "",
        ],
        [
            "seconds per question, median",
            *[
                f"{_med(s['questions'], 'cell'):.1f} (n = {len(s['questions'])})"
                for s in setups.values()
            ],
            f"{c_med:.1f} (n = {len(cpy['questions'])})",
        ],
        [
            "median question, page / CPython (on the questions the page ran)",
            *[f"{r:.1f}x" for r, _ in ratios.values()],
            "1x (goal: the page within 3x)",
        ],
        [
            "slowest question (s)",
            *[f"{max(q['cell'] for q in s['questions']):.1f}" for s in setups.values()],
            f"{max(q['cell'] for q in cpy['questions']):.1f}",
        ],
        [
            "model seconds / calls / tokens in, out (medians)",
            *[
                f"{_med(s['questions'], 'model_seconds'):.1f} s / "
                f"{_med(s['questions'], 'calls'):g} / {_med(s['questions'], 'input'):,.0f}, "
                f"{_med(s['questions'], 'output'):,.0f}"
                for s in [*setups.values(), cpy]
            ],
        ],
        [
            "answered (of the questions)",
            *[
                f"{sum(q['ok'] for q in s['questions'])}/{len(s['questions'])}"
                for s in [*setups.values(), cpy]
            ],
        ],
        [
            "memory: Chromium's PSS before the model / loaded / after the questions",
            *[
                f"{_gb(s['pss_before'])} / {_gb(s['pss_loaded'])} / {_gb(s['pss_after'])}"
                for s in setups.values()
            ],
            f"kernel RSS {_gb(cpy['rss'])}",
        ],
        [
            "a status request through the service worker and the page / a static file (ms)",
            *[
                f"{s['channel']['relay_ms']:.0f} / {s['channel']['static_ms']:.0f}"
                for s in setups.values()
            ],
            "",
        ],
    ]
    labels = "; ".join(f"{n}: {s['cold']['label']}" for n, s in setups.items())
    per_question = [
        [
            q["question"],
            *[
                f"{s['questions'][i]['cell']:.1f} ({s['questions'][i]['calls']})"
                if i < len(s["questions"])
                else "not run"
                for s in setups.values()
            ],
            f"{cpy['questions'][i]['cell']:.1f} ({cpy['questions'][i]['calls']})",
        ]
        for i, q in enumerate(cpy["questions"])
    ]
    return "\n\n".join(
        [
            goal_line(ratios, loaded),
            table(head, rows),
            f"Load average (1 min) sampled before each part: {min(loads):.1f} to "
            f"{max(loads):.1f} on {os.cpu_count()} cores; CPU used by other processes during "
            f"the parts: {min(others):.2f} to {max(others):.2f} cores. The model as the panel "
            f"names it: {labels}. {runtimes()}.",
            "**Per question** (seconds, model calls in brackets):\n\n"
            + table(["question", *names, "CPython"], per_question),
            "Re-run on a quiet machine: `.venv/bin/python -m benchmarks.lite --part model` "
            "(needs `bash scripts/setup.sh`: the site's build inputs and the model).",
        ]
    )


def main(args) -> None:
    runs = WORK / "model-runs.json"
    if args.report_only:
        if not runs.exists():
            raise SystemExit(f"benchmarks.lite: no runs in {runs}: run --part model first")
        saved = json.loads(runs.read_text())
        return report(saved["page"], saved["cpython"], args)

    from playwright.sync_api import sync_playwright

    from tests.lite.site import serve

    if not GGUF.exists():
        raise SystemExit(f"benchmarks.lite: the model {GGUF} is missing: bash scripts/setup.sh")
    WORK.mkdir(parents=True, exist_ok=True)
    build(SITE, ROOT)
    questions = list(QUESTIONS[: args.questions])
    quiet = Quiet(args.max_load, args.settle)
    setups: dict[str, dict] = {}
    with sync_playwright() as pw:
        for name, isolated in (("several threads", True), ("one thread", False)):
            with serve(SITE, isolated=isolated) as base:
                print(f"page, {name}:", flush=True)
                setups[name] = page_setup(pw, base, quiet, questions, isolated)
                # kept if a later part fails
                runs.write_text(json.dumps({"page": setups}, indent=1))
    print("CPython kernel:", flush=True)
    cpy = cpython_setup(SITE / "files", quiet, questions)
    runs.write_text(json.dumps({"page": setups, "cpython": cpy}, indent=1))
    report(setups, cpy, args)


def report(setups: dict[str, dict], cpy: dict, args) -> None:
    """The figures of one run (printed; its page and row written unless ``--no-write``)."""
    loads = [x for s in [*setups.values(), cpy] for x in s["load_avg"]]
    others = [x for s in [*setups.values(), cpy] for x in s["others"]]
    loaded = verdict(loads, others, args.max_load, args.max_others)
    text = render(setups, cpy, loads, others, loaded)
    if loaded:  # written all the same, marked: both kernels ran on the same busy machine
        text = (
            f"**Taken under load** ({loaded}): the page and the CPython kernel shared the "
            "machine with other work, so these are not the product's speeds; the ratios "
            "compare two runs under similar load.\n\n" + text
        )
    if args.no_write:
        print(text)
        return
    write_page(
        "lite_model",
        "JupyterLite: the model in the page against the CPython kernel",
        text,
        figures(ratios_of(setups, cpy)),
        ["playwright", "llama_cpp_python"],
    )
