"""Timestamps from inside a kernel, for ``benchmarks/lite.py`` (sent as a cell's source).

Run in a fresh kernel before ``%load_ext``, it times every import from then on (each module's
own execution, compile or bytecode load included, its imports subtracted) and the first call of
a few named steps of an ask (schema read, the safety check, the live panel). ``_probe_report()``
returns what it saw as JSON. The same text runs in the Pyodide and the CPython kernel. It is a
measuring device only: nothing in the package imports it.
"""

import importlib.abc
import json
import sys
import time

_PROBE = {"imports": {}, "calls": {}, "stack": [], "t0": time.perf_counter()}
#: module -> (attribute path, name in the report): the first call of each is timed.
_PROBE_STEPS = {
    "cadet_magic.db.sqlite": [("SQLiteRunner.schema", "schema read")],
    "cadet_magic.sql.validate": [("validate_sql", "safety check (sqlglot parse)")],
    "cadet_magic.display.live": [("LiveDisplay.__init__", "live panel built")],
}


def _probe_wrap(module, path, label):
    owner = module
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    inner = getattr(owner, attr)

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            _PROBE["calls"].setdefault(label, []).append(time.perf_counter() - t)

    setattr(owner, attr, timed)


class _ProbeLoader:
    def __init__(self, loader, name):
        self._loader, self._name = loader, name

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        stack = _PROBE["stack"]
        stack.append(0.0)
        t = time.perf_counter()
        try:
            self._loader.exec_module(module)
        finally:
            total = time.perf_counter() - t
            children = stack.pop()
            if stack:
                stack[-1] += total
            top = self._name.split(".")[0]
            _PROBE["imports"][top] = _PROBE["imports"].get(top, 0.0) + total - children
        for path, label in _PROBE_STEPS.get(self._name, ()):
            _probe_wrap(module, path, label)


class _ProbeFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ProbeLoader(spec.loader, name)
                return spec
        return None


def _probe_boot():
    """When the kernel's boot wrote its files, as wall-clock milliseconds (Pyodide only: its
    in-memory file system stamps each file when it is written, and unpacking a wheel keeps no
    dates): the standard library's zip (the runtime's file system set up) and, per installed
    distribution, its first and last file (its unpacking)."""
    import os

    if sys.platform != "emscripten":
        return {}
    out = {"now": time.time() * 1000, "packages": {}}
    zips = [p for p in sys.path if p.endswith(".zip") and os.path.exists(p)]
    if zips:
        out["stdlib"] = os.stat(zips[0]).st_mtime * 1000
    site = next((p for p in sys.path if p.endswith("site-packages")), None)
    for entry in os.listdir(site) if site else ():
        if not entry.endswith(".dist-info"):
            continue
        try:
            with open(os.path.join(site, entry, "RECORD")) as f:
                files = [line.split(",", 1)[0] for line in f if line.strip()]
        except OSError:
            continue
        stamps = []
        for name in files:
            try:
                stamps.append(os.stat(os.path.join(site, name)).st_mtime * 1000)
            except OSError:
                pass
        if stamps:
            out["packages"][entry.split("-")[0]] = [min(stamps), max(stamps), len(stamps)]
    return out


def _probe_report():
    return json.dumps(
        {
            "imports": {k: round(v, 4) for k, v in _PROBE["imports"].items()},
            "calls": {k: [round(x, 4) for x in v] for k, v in _PROBE["calls"].items()},
            "modules": len(sys.modules),
            "boot": _PROBE["boot"],
        }
    )


_PROBE["boot"] = _probe_boot()  # before this probe's own imports write anything
sys.meta_path.insert(0, _ProbeFinder())
