"""benchmarks/lite.py's reading of the browser's timelines and its in-kernel probe (no browser:
the full run needs the built sites and Chromium, and takes minutes)."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks import lite


def _entry(name, start, end, size=1000):
    return {"name": name, "start": start, "end": end, "size": size, "transfer": size}


def test_boot_breakdown_aligns_the_worker_clock():
    page = {
        "origin": 1000.0,
        "marks": {"app-started": 900.0},
        "nav": [{"responseEnd": 40.0}],
        "resources": [_entry("http://127.0.0.1/build/a.js", 50, 300, 5_000_000)],
    }
    worker = {  # created 1.2 s after the page: its clock starts there
        "origin": 2200.0,
        "marks": {},
        "nav": [],
        "resources": [
            _entry("http://127.0.0.1/static/pyodide/pyodide.asm.wasm", 10, 400, 9_000_000),
            _entry("http://127.0.0.1/static/pyodide/python_stdlib.zip", 20, 500, 3_000_000),
            _entry("http://127.0.0.1/static/pyodide/ipython-9.18.1-py3-none-any.whl", 600, 700),
            _entry("http://127.0.0.1/static/pyodide/jedi-0.20.1-py3-none-any.whl", 610, 800),
        ],
    }
    b = lite.boot_breakdown(page, worker, 3000.0)
    assert b["worker_created"] == 1200.0
    assert b["pyodide_core"] == 1700.0 and b["pyodide_core_bytes"] == 12_000_000
    assert b["wheels_first_start"] == 1800.0 and b["wheels_last_end"] == 2000.0
    assert set(b["wheels"]) == {"ipython-9.18.1-py3-none-any.whl", "jedi-0.20.1-py3-none-any.whl"}
    assert b["app_js_bytes"] == 5_000_000 and b["idle"] == 3000.0
    table = lite.breakdown_table([{"breakdown": b}])
    assert (
        "| kernel idle | 3.00 s |" in table and "| kernel's web worker created | 1.20 s |" in table
    )


def test_probe_times_imports_in_a_fresh_interpreter():
    code = lite.PROBE + "\nimport json as _j, colorsys\nprint(_probe_report())\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert "colorsys" in report["imports"] and report["modules"] > 10
