"""The built sites' configuration (both variants; no browser needed).

The online variant cannot run here (no CDN): what it will load is checked from its files. The
offline variant runs in tests/lite/test_lite_browser.py; here its lock file is checked whole.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import zipfile

import pytest

from cadet_magic.lite import DEFERRED, KERNEL_EXTRAS
from tests.lite.site import OFFLINE, ONLINE, ROOT

pytestmark = pytest.mark.lite

PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
NPM = ROOT / ".cache" / "pyodide" / "npm" / "node_modules" / "pyodide"
NOT_IN_BROWSER = {"pandas", "duckdb", "duckdb-engine", "jupysql", "langchain", "langchain-core"}


def _settings(site):
    page = json.loads((site / "jupyter-lite.json").read_text())
    return page["jupyter-config-data"]["litePluginSettings"][PLUGIN]


def _closure(packages: dict, name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        assert n in packages, f"{n} (needed by {name}) missing from the lock file"
        seen.add(n)
        todo.extend(packages[n]["depends"])
    return seen


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_offline_site(lite_build):
    settings = _settings(OFFLINE)
    assert settings["pyodideUrl"] == "./static/pyodide/pyodide.mjs"
    assert settings["disablePyPIFallback"] is True
    assert "cadet-magic" in settings["loadPyodideOptions"]["packages"]
    assert "lockFileURL" not in settings["loadPyodideOptions"]
    folder = OFFLINE / "static" / "pyodide"
    lock = json.loads((folder / "pyodide-lock.json").read_text())
    for name, entry in lock["packages"].items():
        assert "://" not in entry["file_name"], name
        assert _sha(folder / entry["file_name"]) == entry["sha256"], name
    at_boot = set().union(
        *(_closure(lock["packages"], n) for n in settings["loadPyodideOptions"]["packages"])
    )
    later = set().union(*(_closure(lock["packages"], n) for n in (*DEFERRED, *KERNEL_EXTRAS)))
    needed = _closure(lock["packages"], "cadet-magic") | later
    assert {"sqlglot", "sqlparse", "ipywidgets", "anywidget", "ipylab", "ipython"} <= needed
    assert not needed & NOT_IN_BROWSER
    # the kernel boots from one load of the lock (no piplite install at boot), and neither the
    # deferred packages, IPython's extras (jedi, prompt_toolkit, ...) nor SQLAlchemy are among it
    assert {"micropip", "piplite", "ipykernel", "pyodide-kernel", "comm", "ipython"} <= at_boot
    assert not at_boot & (set(DEFERRED) | set(KERNEL_EXTRAS) | {"sqlalchemy"})
    assert {"parso", "wcwidth", "executing"} <= later - at_boot
    # the site's kernel start: jedi not installed through piplite, the drive's path finder in
    # charge before the kernel's imports, cadet_magic's background load started last, in every
    # bundle that holds the kernel's start
    bundles = [
        p.read_text()
        for p in (OFFLINE / "extensions/@jupyterlite/pyodide-kernel-extension/static").glob("*.js")
    ]
    starts = [b for b in bundles if '"pyodide-kernel","ipython"]' in b]
    assert starts and not [b for b in bundles if '"jedi","ipython"]' in b]
    first = "__import__('cadet_magic').lite.use_drive_finder()\n      import piplite.piplite"
    last = '"import pyodide_kernel","__import__(\'cadet_magic\').lite.start()"'
    assert all(first in b and last in b for b in starts)
    # the standard library carries bytecode beside its sources (zipimport looks there first)
    with zipfile.ZipFile(folder / "python_stdlib.zip") as stdlib:
        names = set(stdlib.namelist())
    assert {"os.pyc", "os.py", "sqlite3/__init__.pyc", "json/decoder.pyc"} <= names
    assert "sqlalchemy" in lock["packages"]  # `import sqlalchemy` in a cell loads it
    # every wheel carries bytecode for the site's Python, beside its sources
    for name in ("cadet-magic", "sqlglot", "ipython", "jedi"):
        with zipfile.ZipFile(folder / lock["packages"][name]["file_name"]) as whl:
            files = whl.namelist()
        pycs = [f for f in files if f.endswith(".cpython-314.pyc")]
        assert pycs and all(
            f.replace(".cpython-314.pyc", ".py").replace("__pycache__/", "") in files for f in pycs
        ), name
    assert not [f for f in files if f.startswith("jedi/third_party/typeshed/stubs/")]
    # caching rules a static host reads: content-named files for a year, nothing else
    assert "/build/*" not in (OFFLINE / "_headers").read_text()
    con = sqlite3.connect(OFFLINE / "files" / "shop.sqlite")
    assert con.execute("SELECT count(*) FROM orders").fetchone() == (600,)
    assert (OFFLINE / "files" / "cadet_in_the_browser.ipynb").exists()
    # nothing in the page configuration points outside the site
    assert "https://" not in (OFFLINE / "jupyter-lite.json").read_text()


def test_online_site(lite_build):
    npm_lock = json.loads((NPM / "pyodide-lock.json").read_text())
    version = json.loads((NPM / "package.json").read_text())["version"]
    cdn = f"https://cdn.jsdelivr.net/pyodide/v{version}/full/"
    settings = _settings(ONLINE)
    assert settings["pyodideUrl"] == cdn + "pyodide.mjs"
    options = settings["loadPyodideOptions"]
    assert "cadet-magic" in options["packages"]
    lock_path = ONLINE / options["lockFileURL"]
    assert not options["lockFileURL"].startswith(("/", "http")) and lock_path.exists()
    assert not (ONLINE / "static" / "pyodide").exists()  # the core comes from the CDN
    lock = json.loads(lock_path.read_text())
    assert lock["info"] == npm_lock["info"]  # the same Pyodide build as the CDN's core
    local = {
        n for n, e in lock["packages"].items() if "://" not in e["file_name"]
    }  # our wheels, next to the lock file
    for name in local:
        entry = lock["packages"][name]
        assert _sha(lock_path.parent / entry["file_name"]) == entry["sha256"], name
    for name, entry in npm_lock["packages"].items():
        if name in local:
            continue
        assert lock["packages"][name]["file_name"] == cdn + entry["file_name"], name
        assert lock["packages"][name]["sha256"] == entry["sha256"], name
    # the full distribution is reachable there: pandas, numpy, duckdb from the CDN
    for name in ("pandas", "numpy", "duckdb"):
        assert lock["packages"][name]["file_name"].startswith(cdn), name
    needed = _closure(lock["packages"], "cadet-magic")
    assert not needed & NOT_IN_BROWSER
    assert "cadet-magic" in local


def _build_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_lite", ROOT / "scripts" / "build_lite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: (a file of a site, whether a static host reading its ``_headers`` keeps it a year): only the
#: files whose names (or, for the app's runtime, its address) change with their content.
CACHED = [
    ("build/1234.0a1b2c3.js", True),  # an app chunk named by its content
    ("build/jlab_core.dc3d0f6.js", True),
    ("build/lab/bundle.js", True),  # loaded under an address naming its content
    ("extensions/x/static/remoteEntry.0a1b2c3d4e.js", True),  # a front end's, by content
    ("build/schemas/all.json", False),  # the same name whatever JupyterLab's settings hold
    ("build/schemas/all_federated.json", False),
    ("build/themes/@jupyterlab/theme-light-extension/index.css", False),
    ("build/themes/@jupyterlab/theme-light-extension/index.js", False),
    ("build/fa-solid-900.woff2", False),
    ("build/service-worker.js", False),
    ("build/third-party-licenses.json", False),
    ("static/pyodide/pyodide.asm.wasm", False),  # Pyodide's name, not its content's
    ("static/pyodide/python_stdlib.zip", False),  # recompiled by the site under this name
    ("static/pyodide/cadet_magic-0.1.0-py3-none-any.whl", False),  # same name, new code
    ("static/pyodide/pyodide-lock.json", False),
    ("lab/index.html", False),
    ("jupyter-lite.json", False),
    ("files/shop.sqlite", False),
]


def test_cache_headers(tmp_path):
    """What a static host reading the site's ``_headers`` sends (the tests' server does the same):
    one Cache-Control per file, a year only for files whose names change with their content."""
    from tests.lite.site import cache_headers

    build = _build_script()
    for path, _ in CACHED:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x" * len(path))
    kept = ["/extensions/x/static/remoteEntry.0a1b2c3d4e.js"]
    (tmp_path / "_headers").write_text(build.headers(kept, tmp_path))
    for path, expected in CACHED:
        headers = cache_headers(str(tmp_path), "/" + path)
        assert [n for n, _ in headers] == ["Cache-Control"], path
        assert ("immutable" in headers[0][1]) is expected, path


@pytest.mark.parametrize("site", [OFFLINE, ONLINE], ids=["offline", "online"])
def test_a_built_site_keeps_a_year_only_what_is_named_by_its_content(lite_build, site):
    """Every file of a built site: kept a year exactly when its name carries its content's hash
    (the front ends', the app's chunks) or it is the app's runtime; the schemas, themes, fonts,
    service worker, pages, wheels and Pyodide's files are revalidated."""
    from tests.lite.site import cache_headers

    build = _build_script()
    kept = 0
    for file in sorted(f for f in site.rglob("*") if f.is_file()):
        address = "/" + file.relative_to(site).as_posix()
        immutable = "immutable" in dict(cache_headers(str(site), address))["Cache-Control"]
        named = (address.startswith("/build/") and bool(build.APP_CHUNK.match(file.name))) or (
            address.startswith("/extensions/") and bool(build.CONTENT_NAMED.match(file.name))
        )
        assert immutable is (named or address == "/build/lab/bundle.js"), address
        kept += immutable
    assert kept > 100 and "/build/*" not in (site / "_headers").read_text()


def test_changed_front_end_files_are_renamed_after_their_content(tmp_path, monkeypatch):
    """A chunk the site changed gets its content's hash in its name; the remoteEntry naming it,
    changed by that, too; the site's configuration names the new remoteEntry; an unchanged chunk
    and a file's own source-map comment keep their names; every content-named file is kept."""
    build = _build_script()
    upstream, out = tmp_path / "venv", tmp_path / "site"
    files = {
        "remoteEntry.aaaaaaaaaaaaaaaa.js": 'u({1:"bbbbbbbbbbbbbbbb",2:"cccccccccccccccc"})',
        "1.bbbbbbbbbbbbbbbb.js": "one()\n//# sourceMappingURL=1.bbbbbbbbbbbbbbbb.js.map",
        "2.cccccccccccccccc.js": "two()",
        "style.js": "style()",
    }
    for root in (upstream / "pkg" / "static", out / "extensions" / "pkg" / "static"):
        root.mkdir(parents=True)
        for name, text in files.items():
            (root / name).write_text(text)
    (out / "extensions" / "pkg" / "package.json").write_text("{}")
    (out / "jupyter-lite.json").write_text('{"load": "static/remoteEntry.aaaaaaaaaaaaaaaa.js"}')
    static = out / "extensions" / "pkg" / "static"
    (static / "1.bbbbbbbbbbbbbbbb.js").write_text(
        "one(patched)\n//# sourceMappingURL=1.bbbbbbbbbbbbbbbb.js.map"
    )
    monkeypatch.setattr(build, "LABEXTENSIONS", upstream)

    kept = build.name_front_ends_by_content(out)

    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()[:16]  # noqa: E731
    (one,) = static.glob("1.*.js")
    (entry,) = static.glob("remoteEntry.*.js")
    assert one.name == f"1.{digest(one)}.js" and entry.name == f"remoteEntry.{digest(entry)}.js"
    assert one.read_text().endswith("sourceMappingURL=1.bbbbbbbbbbbbbbbb.js.map")
    assert f'1:"{digest(one)}"' in entry.read_text()
    assert (static / "2.cccccccccccccccc.js").read_text() == "two()"
    assert f"static/{entry.name}" in (out / "jupyter-lite.json").read_text()
    assert kept == [
        f"/extensions/pkg/static/{n}"
        for n in sorted([one.name, "2.cccccccccccccccc.js", entry.name])
    ]


@pytest.mark.parametrize("site", [OFFLINE, ONLINE], ids=["offline", "online"])
def test_front_ends_and_the_page_the_site_opens_on(lite_build, site):
    """The site ships the widget and kernel front ends, not jupysql's (the browser kernel has
    no jupysql; its front end threw on load), and its root page opens the tutorial."""
    shipped = {json.loads(p.read_text())["name"] for p in site.glob("extensions/**/package.json")}
    expected = {
        "@jupyter-widgets/jupyterlab-manager",
        "@jupyterlite/pyodide-kernel-extension",
        "anywidget",
        "ipylab",
    }
    assert expected <= shipped and "jupysql-plugin" not in shipped, shipped
    page = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    listed = {e["name"] for e in page["federated_extensions"]}
    assert expected <= listed and "jupysql-plugin" not in listed, listed
    root = (site / "index.html").read_text()
    assert "window.location.replace('./lab/index.html?path=cadet_in_the_browser.ipynb')" in root
    assert 'id="jupyter-config-data"' in root  # the app's pages read it
    assert (site / "files" / "cadet_in_the_browser.ipynb").exists()
    assert (site / "favicon.ico").read_bytes() == (site / "lab" / "favicon.ico").read_bytes()


@pytest.mark.parametrize("site", [OFFLINE, ONLINE], ids=["offline", "online"])
def test_the_apps_changed_bundles_are_named_by_their_content(lite_build, site):
    """Everything under /build/ is kept a year under its address: the bundles the site changes
    get new names (their content's hash), the runtime that names them a new address (in the lab
    page, which is revalidated), so a returning browser never runs an older change."""
    digest = lambda b: hashlib.sha256(b).hexdigest()  # noqa: E731
    changed = [
        b
        for b in (site / "build").glob("*.js")
        if "void A.invoke()" in (t := b.read_text()) or "localStorage.setItem(`${e}-version`" in t
    ]
    assert len(changed) == 2, changed
    runtime = (site / "build" / "lab" / "bundle.js").read_bytes()
    for bundle in changed:
        name_hash = bundle.name.rsplit(".", 2)[1]
        assert digest(bundle.read_bytes()).startswith(name_hash), bundle.name
        assert f':"{name_hash}"'.encode() in runtime
    page = (site / "lab" / "index.html").read_text()
    assert re.search(rf'"\.\./build/lab/bundle\.js\?_=[0-9a-z]+\.{digest(runtime)[:7]}"', page)


@pytest.mark.parametrize("site", [OFFLINE, ONLINE], ids=["offline", "online"])
def test_the_front_ends_files_kept_a_year_are_named_by_their_content(lite_build, site):
    """``_headers`` keeps each content-named front-end file a year, listed by name; the ones the
    site changed (the kernel extension's) and the ones naming them carry their new content's
    hash, and the site's configuration loads the renamed entry points."""
    from tests.lite.site import cache_headers

    build = _build_script()
    rules = (site / "_headers").read_text()
    # the model's rules first (isolation for every file: hosts read a limited number of rules)
    assert rules.startswith("# Cross-origin isolated") and build.HEADERS in rules
    config = (site / "jupyter-lite.json").read_text()
    changed = 0
    for file in sorted((site / "extensions").glob("**/static/*.js")):
        match = build.CONTENT_NAMED.match(file.name)
        address = "/" + file.relative_to(site).as_posix()
        assert (match is not None) is (f"{address}\n" in rules), address
        if match is None:
            continue
        assert "immutable" in dict(cache_headers(str(site), address))["Cache-Control"]
        package = file.parent.parent.relative_to(site / "extensions")
        upstream = build.LABEXTENSIONS / package / "static" / file.name
        if not upstream.exists() or upstream.read_bytes() != file.read_bytes():
            changed += 1
            assert hashlib.sha256(file.read_bytes()).hexdigest().startswith(match["hash"]), file
        if file.name.startswith("remoteEntry."):
            assert f"static/{file.name}" in config
    assert changed >= 5  # the kernel extension's changed chunks, workers and remoteEntry


@pytest.mark.parametrize("site", [OFFLINE, ONLINE], ids=["offline", "online"])
def test_the_kernel_starts_with_the_page(lite_build, site):
    """The lab page creates the kernel's worker and starts its runtime as it loads; the kernel
    plug-in's class takes that worker over (or, without it, starts one on activation), and the
    worker's ``initialize`` awaits the runtime already on its way (browser runs: tests/lite)."""
    static = site / "extensions/@jupyterlite/pyodide-kernel-extension/static"
    bundles = {p.name: p.read_text() for p in static.glob("*.js")}
    joined = "\n".join(bundles.values())
    assert "e.prewarm({pyodideUrl:g,loadPyodideOptions:u})" in joined  # the plug-in
    assert "let t=self.cadetKernelWorker" in joined and "this._warmRemote||" in joined
    assert "await Promise.race([i.ready.catch(" in joined  # the drive waits for the worker
    worker = next(text for name, text in bundles.items() if name.startswith("comlink.worker"))
    assert "prewarm(e){if(this._prewarmed)return;this._prewarmed=this.initRuntime(e)" in worker
    assert "await (this._prewarmed||this.initRuntime(e))" in worker
    assert "e.data.cadetPrewarm&&ku.prewarm(e.data.cadetPrewarm)" in worker
    page = (site / "lab" / "index.html").read_text()
    head = page.index("<head>")
    script = page.index("cadet_magic: the Python kernel starts while the page loads")
    assert head < script < page.index("jupyter-config-data")
    name = next(n for n in bundles if n.startswith("comlink.worker"))
    assert f"extensions/@jupyterlite/pyodide-kernel-extension/static/{name}" in page
    # the app: the router does not wait for the workspace's debounced save, nor the notebook's
    # kernel for its first checkpoint; the service worker manager notes its version when it
    # registers; the worker leaves other files to the browser
    core = "\n".join(b.read_text() for b in (site / "build").glob("*.js"))
    assert "void A.invoke()}}),d.addCommand(v.reset," in core
    assert "this.sessionContext)}),await this._maybeCheckpoint(!1)}" in core
    noted = ",localStorage.setItem(`${e}-version`,"
    assert noted in core and noted in joined  # the app's copy and the kernel extension's
    assert "shouldDrop(t,a)||!enableCache||" in (site / "service-worker.js").read_text()
