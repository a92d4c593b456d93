"""benchmarks/lite.py's reading of the browser's timelines and its in-kernel probe (no browser:
the full run needs the built sites and Chromium, and takes minutes)."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks import lite, lite_site


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
        "| kernel idle (IPython imported, the kernel started) | 3.00 s |" in table
        and "| kernel's web worker created | 1.20 s |" in table
    )


def test_kernel_file_stamps_join_the_breakdown():
    b = lite.boot_breakdown({"origin": 1000.0, "marks": {}, "nav": [], "resources": []}, None, 2500)
    b.update(
        lite.kernel_boot(
            {"stdlib": 2100.0, "packages": {"jedi": [2200, 2900, 900], "ipython": [2950, 3100, 1]}},
            1000.0,
            2500.0,
        )
    )
    table = lite.breakdown_table([{"breakdown": b}])
    assert "| first package unpacked (kernel's file stamps) | 1.20 s |" in table
    assert "| last package unpacked (kernel's file stamps) | 2.10 s | 901 files |" in table
    assert lite.kernel_boot({}, 1000.0, 2500.0) == {}  # the CPython kernel: no stamps, no rows


def test_warm_visit_cache_use():
    page = {"resources": [_entry("a.js", 0, 1, 5000) | {"transfer": 0}]}
    worker = {
        "resources": [
            _entry("x.whl", 0, 1, 9000) | {"transfer": 300},  # a 304: headers only
            _entry("y.whl", 0, 1, 2000) | {"transfer": 2300},
        ]
    }
    assert lite.cache_use(page, worker) == {
        "cached_files": 1,
        "cached_bytes": 5000,
        "revalidated_files": 1,
        "fetched_files": 1,
        "fetched_bytes": 2000,
    }


def test_others_cpu_leaves_out_this_process_tree():
    with lite_site.Others() as others:
        end = __import__("time").monotonic() + 0.3
        while __import__("time").monotonic() < end:  # this process busy: not "others"
            pass
    assert 0.0 <= others.cores < 2.5  # whatever the rest of the machine did meanwhile
    assert lite_site._tree_seconds() > 0.3


def test_quiet_waits_for_the_load_then_samples_it(monkeypatch):
    loads = iter([3.0, 2.0, 1.2, 1.0])
    monkeypatch.setattr(lite_site, "_load", lambda: next(loads))
    monkeypatch.setattr(lite_site.time, "sleep", lambda s: None)
    assert lite_site.Quiet(limit=1.5, timeout=60).settle() == 1.2
    assert lite_site.verdict([1.2], [0.1], 1.5, 0.5) == ""


def test_probe_times_imports_in_a_fresh_interpreter():
    code = lite.PROBE + "\nimport json as _j, colorsys\nprint(_probe_report())\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert "colorsys" in report["imports"] and report["modules"] > 10
