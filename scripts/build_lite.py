"""Builds the JupyterLite sites (run through scripts/build_lite.sh; downloads nothing).

Two variants, each a static folder to serve:

* ``offline`` (``build/lite/``): Pyodide's core from the pinned npm package is copied into the
  site (``static/pyodide/``); its lock file is trimmed to the files present and the pure wheels
  of IPython, the widget libraries, cadet_magic and its portable dependencies are added to it,
  so the kernel preloads cadet_magic (no ``%pip`` cell) and never leaves the site's origin.
* ``online`` (``build/lite-online/``): Pyodide's core and its full distribution (pandas, numpy,
  duckdb, ...) load from Pyodide's CDN; the lock file served by the site is the npm package's
  full lock with every CDN file named by its absolute CDN address, plus the same local wheels.

Both ship the browser tutorial notebook (``lite/content/``), which the site opens on, and the
sample shop as SQLite; the front ends are the venv's JupyterLab extensions but jupysql's.

What makes the site open quickly (each measured by ``python -m benchmarks.lite``):

* every wheel the kernel loads carries its modules compiled by the site's own Pyodide
  (``scripts/lite_compile.mjs``: unchecked-hash ``__pycache__`` bytecode beside the sources),
  and so does the offline site's ``python_stdlib.zip`` (Pyodide ships it as sources, and
  zipimport caches nothing: every standard-library module the kernel imports was compiled in
  the browser on every visit), so nothing is compiled in the browser;
* the first kernel's runtime (Pyodide, the preloaded packages, the package manager, IPython's
  shell) starts as the lab page loads, while JupyterLab is still starting and opening the
  notebook, instead of when the notebook's kernel is created (:func:`start_worker_with_page`,
  :data:`PREWARM`);
* JupyterLab's router no longer waits for a debounced save of the workspace before opening
  the notebook, nor the notebook's kernel for the notebook's first checkpoint (JupyterLite
  copies the file into the browser's storage for it), and JupyterLite's service worker is not
  registered anew on the second visit
  (:data:`APP_PATCHES`, :data:`SW_REGISTERED`); the kernel waits for the service worker before
  it mounts the drive;
* the drive's path finder is in charge before the kernel's first imports (:data:`KERNEL_START`);
* one parallel load at boot: the kernel's own packages (micropip, piplite, the ipykernel
  stand-in, pyodide-kernel) come from the lock file with the rest (``PRELOAD``) instead of
  being installed one by one through piplite's index;
* cadet_magic is preloaded with IPython's core only; its other dependencies
  (``cadet_magic.lite.DEFERRED``) and the IPython extras the kernel's start does not import
  (``KERNEL_EXTRAS``: jedi, prompt_toolkit, stack_data, matplotlib-inline: 1,400 of the 2,600
  files the boot unpacked) stay in the lock and load in the background once the kernel is
  idle (the site's kernel starts that load as its last start step: :data:`KERNEL_START`);
  SQLAlchemy is in the lock for ``import sqlalchemy`` but never preloaded;
* jedi (IPython's completion) ships without typeshed's third-party stubs and django-stubs
  (4,800 of its 5,600 files: completion of installed packages reads their sources);
* ``_headers`` (the format Netlify and Cloudflare Pages read; ``tests/lite/site.py`` serves it)
  lets browsers keep only the files whose names change with their content for a year
  (JupyterLab's and the front ends' content-hashed bundles, the app's runtime under its content's
  address) and revalidate the rest; the bundles the site changes are renamed after their new
  content first (:func:`name_by_content`, :func:`name_front_ends_by_content`).

Inputs, prepared by scripts/setup_pyodide.sh and scripts/setup_lite.sh: ``.cache/pyodide/``
(the npm package and a copy with micropip's wheel beside it) and ``.cache/lite/wheels/``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # lite_model beside this script
from lite_model import ModelSource, add_model, default_gguf

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
NPM_PYODIDE = CACHE / "pyodide" / "npm" / "node_modules" / "pyodide"
PYODIDE_DIST = CACHE / "pyodide" / "dist"
WHEELS = CACHE / "lite" / "wheels"
CONTENT = ROOT / "lite" / "content"
#: The kernel extension's own wheels (a widgetsnbextension stand-in that ipywidgets requires).
KERNEL_WHEELS = (
    Path(sys.prefix)
    / "share/jupyter/labextensions/@jupyterlite/pyodide-kernel-extension/static/pypi"
)
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
#: The kernel extension's wheels that boot the kernel (piplite: ``%pip``; ipykernel: a stand-in).
KERNEL_BOOT = ("piplite-", "pyodide_kernel-", "ipykernel-", "widgetsnbextension-4.")
#: Preloaded at kernel start with their dependencies, in one parallel load from the site's lock
#: file. The kernel installs each of micropip, piplite, ipykernel, comm, pyodide-kernel, jedi and
#: ipython through piplite (one by one, after reading piplite's index) unless it is named here.
PRELOAD = [
    "micropip",
    "piplite",
    "ipykernel",
    "pyodide-kernel",
    "comm",
    "ipython",
    "cadet-magic",
]
#: The kernel's start, as its web worker runs it (the pyodide-kernel extension's bundles): the
#: packages it installs through piplite unless preloaded, the package manager's Python step
#: and its last Python step. The site's copy leaves jedi out (``cadet_magic.lite.KERNEL_EXTRAS``:
#: loaded in the background, with IPython's own completer meanwhile), puts the drive's path
#: finder in charge before the first imports (the working directory is already the drive, first
#: on ``sys.path``: Python's own finder asked the page about it once per top-level module
#: imported, 60 synchronous requests before the kernel was idle), and starts that background
#: load last.
KERNEL_START = (
    '["ipykernel","comm","pyodide-kernel","jedi","ipython"]',
    '["ipykernel","comm","pyodide-kernel","ipython"]',
)
PACKAGE_MANAGER_STEP = (
    "runPythonAsync(`\n      import piplite.piplite\n",
    "runPythonAsync(`\n      __import__('cadet_magic').lite.use_drive_finder()\n"
    "      import piplite.piplite\n",
)
KERNEL_LAST_STEP = (
    'push("import pyodide_kernel")',
    'push("import pyodide_kernel","__import__(\'cadet_magic\').lite.start()")',
)
#: The kernel's runtime started while JupyterLab is still starting (the pyodide-kernel extension's
#: bundles). JupyterLab creates the kernel, and with it the kernel's web worker, only once the
#: notebook is open (1.7 s after the app is ready, measured in Chromium), and that worker then
#: spends about 2 s fetching Pyodide, starting Python and unpacking the preloaded packages. The
#: site's copy starts that part earlier: the lab page creates the worker as it loads and sends
#: it a plain ``cadetPrewarm`` message (:func:`start_worker_with_page`); without that worker
#: the kernel plug-in's activation has the kernel's class create one (``prewarm``, the same
#: Pyodide address, index and preload list the kernel would pass). The first Pyodide kernel
#: then takes that worker, whose ``initialize`` awaits the runtime already on its way instead of
#: starting another. The prewarm also imports the package manager (micropip and piplite) and the
#: kernel's module (IPython's shell), as the kernel's start would, in the same order, with the
#: drive's folder as working directory as it would be then (the shell notes it); no setting of
#: the kernel's is read on import. It imports cadet_magic first, before IPython's shell exists
#: (so its background load does not start yet) and before the drive is mounted: imported by
#: the kernel's start, with the drive mounted, it made synchronous requests to the page, each
#: waiting for the page's thread while that opens the notebook. The drive itself, the package
#: manager's settings and the rest of the start still wait for the kernel.
#:
#: The site's kernel runs in that worker (Comlink's) in a cross-origin isolated
#: page too, where JupyterLite would take its other worker (coincident's, which reaches the
#: page's drive and stdin through ``SharedArrayBuffer`` and ``Atomics.wait``). The site is
#: isolated for the model in the page (its ``_headers``), and there that other worker's kernel
#: stayed busy for good after a cell that imported cadet_magic's magic (3 runs of 4 in headless
#: Chromium, JupyterLite 0.8.6); Comlink's worker reaches the drive and stdin through the
#: service worker, as in any page, and starts early as above.
PREWARM_IMPORTS = (
    "__import__('cadet_magic').lite.use_drive_finder()\n"
    "import piplite.piplite\n"
    "_cwd = __import__('os').getcwd()\n"
    "__import__('os').makedirs('/drive', exist_ok=True)\n"
    "__import__('os').chdir('/drive')\n"
    "import pyodide_kernel\n"
    "__import__('os').chdir(_cwd)\n"
    "del _cwd\n"
)
PREWARM = (
    (  # the worker: the runtime can start before the kernel's options arrive
        "async initRuntime(e){",
        "prewarm(e){if(this._prewarmed)return;"
        "this._prewarmed=this.initRuntime(e).then(()=>this._pyodide.runPythonAsync("
        f"{PREWARM_IMPORTS!r})),this._prewarmed.catch(()=>{{}})}}"
        "async initRuntime(e){",
    ),
    (  # ... also when the page asks before the kernel's module is loaded (a plain message,
        # which Comlink's own listener ignores)
        "ku=new rr;Nt(ku);export{rr as PyodideComlinkKernel}",
        'ku=new rr;Nt(ku);addEventListener("message",e=>{e.data&&e.data.cadetPrewarm&&'
        "ku.prewarm(e.data.cadetPrewarm)});export{rr as PyodideComlinkKernel}",
    ),
    (
        "await this.initRuntime(e),await this.initFilesystem(e)",
        "await (this._prewarmed||this.initRuntime(e)),await this.initFilesystem(e)",
    ),
    (  # the page: the kernel class creates that worker once, and its first kernel takes it
        'initWorker(e){let t=e=>new Worker(e,{type:"module"});return crossOriginIsolated?'
        "t(new URL(s(831),s.b)):t(new URL(s(932),s.b))}",
        "static prewarm(e){if(w._warmed)return;w._warmed=!0;"
        "let t=self.cadetKernelWorker,i=e.pyodideUrl;if(t){self.cadetKernelWorker=null,"
        "w._warm=t,w._warmRemote=(0,y.LV)(t);return}"
        't=new Worker(new URL(s(932),s.b),{type:"module"}),w._warm=t,'
        "w._warmRemote=(0,y.LV)(t),w._warmRemote.prewarm({pyodideUrl:i,"
        'indexUrl:i.slice(0,i.lastIndexOf("/")+1),loadPyodideOptions:e.loadPyodideOptions||{}})}'
        'initWorker(e){let t=e=>new Worker(e,{type:"module"});if(w._warm)'
        "{let e=w._warm;return this._warmRemote=w._warmRemote,w._warm=w._warmRemote=null,e}"
        "return t(new URL(s(932),s.b))}",
    ),
    (  # ... and talks to it through Comlink, cross-origin isolated page or not (see above)
        "initRemote(e){let t;crossOriginIsolated?",
        "initRemote(e){let t;false?",
    ),
    (  # ... with its remote end: a second one on the worker would release the first's (Comlink
        # releases a proxy's worker side when the proxy is garbage collected)
        ":(t=(0,y.LV)(this._worker),this._worker.addEventListener(",
        ":(t=this._warmRemote||(0,y.LV)(this._worker),this._worker.addEventListener(",
    ),
    (  # the kernel reads the drive only once the page's service worker is known: a kernel
        # created before its registration is settled (a warm visit opens the notebook sooner)
        # went without the drive ("Pyodide contents will NOT be synced"); a browser without
        # service workers is not waited for, nor one slower than 5 s
        "create:async e=>{let{PyodideKernel:t}=await n.e(635).then(n.t.bind(n,918,23)),l=",
        "create:async e=>{i&&navigator.serviceWorker&&await Promise.race([i.ready.catch(()=>{}),"
        "new Promise(e=>setTimeout(e,5e3))]);"
        "let{PyodideKernel:t}=await n.e(635).then(n.t.bind(n,918,23)),l=",
    ),
    (  # the plug-in's activation starts it
        't.register({spec:{name:"python"',
        "n.e(635).then(n.t.bind(n,918,23)).then(({PyodideKernel:e})=>e.prewarm("
        "{pyodideUrl:g,loadPyodideOptions:u})).catch(e=>console.warn(e)),"
        't.register({spec:{name:"python"',
    ),
)
#: JupyterLab's own start, in the site's copy of its core bundle: the router's first route
#: (loading the workspace's state) awaited the debounced save of that state (500 ms, pushed
#: back by every change the restore makes: about 1 s measured) before the next route could
#: open the notebook from the address. The save still happens; the route no longer waits
#: for it. A document's context, once its content is loaded, made its first checkpoint (in
#: JupyterLite: the file fetched again and copied into the browser's database) before it asked
#: for the notebook's kernel: about 0.3-0.4 s of a warm visit. It asks first now; the checkpoint
#: follows, and the context's load still ends with it.
APP_PATCHES = (
    ("await A.invoke()}}),d.addCommand(v.reset,", "void A.invoke()}}),d.addCommand(v.reset,"),
    (
        "this._populatedPromise.resolve(void 0),await this._maybeCheckpoint(!1),this.isDisposed)"
        "return;let n=this._model.defaultKernelName||this.sessionContext.kernelPreference.name;"
        "this.sessionContext.kernelPreference={...this.sessionContext.kernelPreference,name:n,"
        "language:this._model.defaultKernelLanguage},this.sessionContext.initialize().then(n=>"
        "{n&&this._dialogs.selectKernel(this.sessionContext)})}",
        "this._populatedPromise.resolve(void 0),this.isDisposed)"
        "return;let n=this._model.defaultKernelName||this.sessionContext.kernelPreference.name;"
        "this.sessionContext.kernelPreference={...this.sessionContext.kernelPreference,name:n,"
        "language:this._model.defaultKernelLanguage},this.sessionContext.initialize().then(n=>"
        "{n&&this._dialogs.selectKernel(this.sessionContext)}),await this._maybeCheckpoint(!1)}",
    ),
)
#: JupyterLite's service worker manager notes the worker's version in the local storage only
#: on a visit the worker already controls, and a visit that finds no note unregisters every
#: worker and registers it again: so the second visit (the first one controlled) always did,
#: which held up its kernel's start by about 2.5 s (the kernel waits for the worker: the drive
#: goes through it). The site's copies note the version as soon as they register the worker;
#: a new site version still replaces it on the next visit.
SW_REGISTERED = ',console.info("JupyterLite ServiceWorker was successfully registered")'
#: The service worker passed every other request of the page on to the network itself, even
#: with its cache off (the site's setting): each file of a warm visit went through the worker's
#: thread. With the cache off it now leaves them to the browser (and its HTTP cache).
SW_PASS = (
    "shouldDrop(t,a)||(n=maybeFromCache(e))",
    "shouldDrop(t,a)||!enableCache||(n=maybeFromCache(e))",
)
#: Paths left out of a wheel: jedi's stubs of third-party packages (completion of an installed
#: package reads its source; typeshed's standard-library stubs stay).
DROP = {
    "jedi": ["jedi/third_party/typeshed/stubs/", "jedi/third_party/django-stubs/"],
}
#: Modules left as source (compiled on import if ever imported): pygments' ~600 lexers and styles
#: and wcwidth's override tables, which would triple those wheels; the ones a session imports
#: (IPython's and the panel's lexers, the default style) are compiled.
SOURCE_ONLY = {
    "pygments": ["pygments/lexers/", "pygments/styles/"],
    "wcwidth": ["wcwidth/table_grapheme_overrides/"],
}
COMPILE_ANYWAY = [
    f"pygments/lexers/{m}.py" for m in ("__init__", "_mapping", "python", "sql", "special")
] + [f"pygments/styles/{m}.py" for m in ("__init__", "_mapping", "default")]
#: Standard-library packages left as source in the compiled python_stdlib.zip: the terminal REPL,
#: and packages that cannot work in the browser's single-threaded, process-less Python.
STDLIB_SOURCE_ONLY = ["_pyrepl/", "multiprocessing/", "concurrent/futures/process.py", "venv/"]
COMPILER = ROOT / "scripts" / "lite_compile.mjs"
SHOP_FILE = "shop.sqlite"
#: Cache rules for static hosts that read ``_headers`` (Netlify, Cloudflare Pages). Only a file
#: whose name changes with its content is kept a year (:func:`headers` lists each by name): the
#: app's content-hashed chunks (the ones the site changes renamed after their new content:
#: :func:`name_by_content`), the app's runtime (the lab page loads it under an address naming
#: its content) and the front ends' content-named files. Everything else gets those hosts'
#: default, revalidation on each visit (a 304 when unchanged): pages, configuration, the
#: settings schemas (``schemas/all.json``), themes, fonts, the service worker, wheels (cadet_magic
#: keeps its version between builds) and Pyodide's core files (the site recompiles its standard
#: library under the same name). The rules do not overlap: both hosts join the values of every
#: matching rule.
HEADERS = """\
# Kept a year: files whose names change with their content; the rest is revalidated.
"""
#: The header of a file kept a year.
KEEP = "  Cache-Control: public, max-age=31536000, immutable\n"
#: An app chunk named by its content (``[id].[contenthash].js``; JupyterLab's hashes are 7 long).
APP_CHUNK = re.compile(r"^[^.]+\.[0-9a-f]{7,}\.js$")
#: The notebook the site opens on (its root page goes straight to it).
TUTORIAL = "cadet_in_the_browser.ipynb"
LABEXTENSIONS = Path(sys.prefix) / "share" / "jupyter" / "labextensions"
#: Front ends installed in the venv that the site leaves out: jupysql's (the %%sql cell toolbar
#: and formatter) serves a kernel with jupysql, which the browser kernel does not have, and in
#: the site it threw "Cannot read properties of undefined (reading 'toolbar')" on load.
LEFT_OUT_FRONT_ENDS = {"jupysql-plugin"}
#: The root page's redirect to the app (JupyterLite's own), replaced by one to the tutorial.
ROOT_REDIRECT = "await import('./config-utils.js');"


def pyodide_version() -> str:
    return json.loads((NPM_PYODIDE / "package.json").read_text())["version"]


def cdn_url(version: str) -> str:
    """Pyodide's full distribution on its CDN, for the npm package's version."""
    return f"https://cdn.jsdelivr.net/pyodide/v{version}/full/"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_cadet_wheel(out: Path) -> Path:
    """cadet_magic's wheel from this checkout (hatchling from the venv, no build isolation)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("cadet_magic-*.whl"):
        old.unlink()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["--disable-pip-version-check", "-w", str(out), str(ROOT)],
        check=True,
    )
    (wheel,) = out.glob("cadet_magic-*.whl")
    return wheel


def make_shop(path: Path) -> None:
    """The sample shop as a SQLite file (same rows as the DuckDB one)."""
    from cadet_magic.examples.shop import shop_sql

    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    try:
        con.executescript(shop_sql(comments=False))
        con.commit()
    finally:
        con.close()


def front_ends() -> list[Path]:
    """The venv's prebuilt JupyterLab extensions the site ships (all but the left-out ones)."""
    found = [*LABEXTENSIONS.glob("*/package.json"), *LABEXTENSIONS.glob("@*/*/package.json")]
    keep = [p.parent for p in found if json.loads(p.read_text())["name"] not in LEFT_OUT_FRONT_ENDS]
    return sorted(keep)


#: Where the lab page starts the kernel's worker: first thing in its head, before JupyterLab's
#: own scripts (see :func:`start_worker_with_page`).
PAGE_HEAD = '<meta charset="utf-8">'


def start_worker_with_page(out: Path, settings: dict) -> None:
    """The lab page creates the kernel's web worker and starts its runtime as it loads, about
    1 s before JupyterLab's kernel plug-in could (:data:`PREWARM`: the plug-in's kernel class
    then takes this worker over as ``self.cadetKernelWorker``). The worker's file, Pyodide's
    address and the preload list are the ones the plug-in passes, resolved from the site's root
    as it resolves them; in a cross-origin isolated page too (the site's kernel always takes
    that worker: :data:`PREWARM`)."""
    static = out / "extensions" / "@jupyterlite" / "pyodide-kernel-extension" / "static"
    (worker,) = static.glob("comlink.worker.*.js")
    options = dict(settings.get("loadPyodideOptions", {}))
    script = (
        "<script>/* cadet_magic: the Python kernel starts while the page loads */"
        "(function(){if(!self.Worker)return;try{"
        "var root=new URL('..',location.href),"
        f"u=new URL({json.dumps(settings['pyodideUrl'])},root).href,"
        f"o={json.dumps(options)};"
        "for(var k in o)if(/URL$/.test(k)&&typeof o[k]=='string')o[k]=new URL(o[k],root).href;"
        f"var w=new Worker(new URL({json.dumps(worker.relative_to(out).as_posix())},root),"
        "{type:'module'});"
        "w.postMessage({cadetPrewarm:{pyodideUrl:u,indexUrl:u.slice(0,u.lastIndexOf('/')+1),"
        "loadPyodideOptions:o}});self.cadetKernelWorker=w}catch(e){console.warn(e)}})();"
        "</script>"
    )
    page = out / "lab" / "index.html"
    html = page.read_text()
    if html.count(PAGE_HEAD) != 1:
        raise SystemExit(f"build_lite: {page} has no single {PAGE_HEAD!r}")
    _rewrite(page, html.replace(PAGE_HEAD, PAGE_HEAD + script))


def open_on_tutorial(out: Path) -> None:
    """The site's root page opens the tutorial in the lab (JupyterLite's opens an empty file
    browser). The page keeps its configuration block, which the app's pages read. The app's icon
    is copied to the root too: the browser asks for /favicon.ico before the app names its own,
    and a 404 there is an error in the console."""
    shutil.copy(out / "lab" / "favicon.ico", out / "favicon.ico")
    index = out / "index.html"
    html = index.read_text()
    if ROOT_REDIRECT not in html:
        raise SystemExit(f"build_lite: {index} has no {ROOT_REDIRECT!r} to replace")
    target = f"./lab/index.html?path={TUTORIAL}"
    index.write_text(html.replace(ROOT_REDIRECT, f"window.location.replace({target!r});"))


def stage(stage_dir: Path, settings: dict) -> None:
    """The lite dir: build configuration, the page configuration and the contents."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    files = stage_dir / "files"
    shutil.copytree(CONTENT, files)
    make_shop(files / SHOP_FILE)
    config = {
        "LiteBuildConfig": {
            "apps": ["lab"],
            "contents": ["files"],
            "no_sourcemaps": True,
            "no_unused_shared_packages": True,
            # the front ends named one by one, instead of every one in the venv
            "ignore_sys_prefix": ["federated_extensions"],
            "federated_extensions": [str(p) for p in front_ends()],
        },
    }
    (stage_dir / "jupyter_lite_config.json").write_text(json.dumps(config, indent=2))
    page = {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "disabledExtensions": ["@jupyterlab/apputils-extension:announcements"],
            # window.jupyterapp, for scripted browser sessions (the tests)
            "exposeAppInBrowser": True,
            "litePluginSettings": {KERNEL_PLUGIN: settings},
        },
    }
    (stage_dir / "jupyter-lite.json").write_text(json.dumps(page, indent=2))


#: Changes when the compile rules or the compiler change (part of the compiled wheels' cache key).
RULES = hashlib.sha256(
    json.dumps([DROP, SOURCE_ONLY, COMPILE_ANYWAY, STDLIB_SOURCE_ONLY]).encode()
    + COMPILER.read_bytes()
).hexdigest()[:8]


def compile_wheels(wheels: list[Path]) -> list[Path]:
    """``wheels`` with their modules compiled by the site's Pyodide (cached by content); a
    ``python_stdlib.zip`` among them gets its modules' bytecode beside their sources."""
    cache = CACHE / "lite" / "compiled" / pyodide_version()
    jobs, out = [], []
    for wheel in wheels:
        target = cache / f"{sha256(wheel)[:12]}-{RULES}" / wheel.name
        out.append(target)
        if target.exists():
            continue
        if wheel.name == "python_stdlib.zip":
            job = {"stdlib": True, "source_only": STDLIB_SOURCE_ONLY}
        else:
            project = wheel.name.split("-")[0].lower()
            job = {
                "drop": DROP.get(project, []),
                "source_only": SOURCE_ONLY.get(project, []),
                "compile": COMPILE_ANYWAY,
            }
        jobs.append({"src": str(wheel), "out": str(target), **job})
    if jobs:
        cache.mkdir(parents=True, exist_ok=True)
        job_file = cache / "jobs.json"
        job_file.write_text(json.dumps(jobs))
        subprocess.run(
            ["node", str(COMPILER), "--dist", str(PYODIDE_DIST), "--jobs", str(job_file)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        job_file.unlink()
    return out


def prune_compiled(keep: list[Path]) -> None:
    """Drops the compiled cadet_magic wheels of earlier builds (one per change of the code)."""
    folders = {p.parent for p in keep}
    for old in (CACHE / "lite" / "compiled").glob("*/*/cadet_magic-*.whl"):
        if old.parent not in folders:
            shutil.rmtree(old.parent)


def jupyter_lite_build(stage_dir: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "lite", "build", "--output-dir", str(out)],
        cwd=stage_dir,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def add_wheels(lock_path: Path, wheels: list[Path], dest: Path) -> None:
    """Copies ``wheels`` into ``dest`` (the lock file's folder) and adds them to the lock.

    pyodide-lock computes each entry (imports, sha256, dependencies resolved for Pyodide's
    platform, so ``sys_platform != 'emscripten'`` requirements drop out, and a missing one
    stops the build). Its schema predates two keys of Pyodide 314's lock (``tool``,
    ``info.version`` absent): they are set aside while it works and kept in the file.
    """
    from pyodide_lock import PyodideLockSpec
    from pyodide_lock.spec import PackageSpec
    from pyodide_lock.utils import add_wheels_to_spec

    local = []
    for w in wheels:
        shutil.copy(w, dest / w.name)
        local.append(dest / w.name)
    raw = json.loads(lock_path.read_text())
    info = {**raw["info"], "version": raw["info"].get("version", pyodide_version())}
    fields = set(PackageSpec.model_fields)
    packages = {
        name: {k: v for k, v in entry.items() if k in fields}
        for name, entry in raw["packages"].items()
    }
    spec = PyodideLockSpec(info=info, packages=packages)
    spec = add_wheels_to_spec(spec, local, base_path=dest)
    for w in local:
        name = next(n for n, e in spec.packages.items() if e.file_name == w.name)
        raw["packages"][name] = spec.packages[name].model_dump()
    defer(raw["packages"])
    lock_path.write_text(json.dumps(raw))


def defer(packages: dict) -> None:
    """cadet-magic's and IPython's lock entries keep only what the kernel's start and
    ``%load_ext`` import: the deferred dependencies (loaded by ``import cadet_magic`` in the
    background) must be in the lock themselves."""
    from cadet_magic.lite import DEFERRED, KERNEL_EXTRAS

    for owner, names in (("cadet-magic", DEFERRED), ("ipython", tuple(KERNEL_EXTRAS))):
        for name in names:
            if name not in packages:
                raise SystemExit(f"build_lite: {name} (loaded by cadet_magic) is not in the lock")
        entry = packages[owner]
        entry["depends"] = [d for d in entry["depends"] if d not in names]


def patch_kernel_start(out: Path) -> None:
    """The site's copy of the kernel's start (see :data:`KERNEL_START`); stops the build when
    the pyodide-kernel extension no longer holds the steps it replaces."""
    static = out / "extensions" / "@jupyterlite" / "pyodide-kernel-extension" / "static"
    patched = 0
    for bundle in static.glob("*.js"):
        text = bundle.read_text()
        if KERNEL_START[0] not in text:
            continue
        for old, new in (PACKAGE_MANAGER_STEP, KERNEL_LAST_STEP):
            if text.count(old) != 1:
                raise SystemExit(f"build_lite: {bundle} has no single {old!r}")
            text = text.replace(old, new)
        _rewrite(bundle, text.replace(*KERNEL_START))
        patched += 1
    if not patched:
        raise SystemExit(f"build_lite: no bundle in {static} holds {KERNEL_START[0]!r}")


def patch_prewarm(out: Path) -> None:
    """The site's copy of the kernel's start begins its runtime early (see :data:`PREWARM`);
    stops the build when a bundle no longer holds what a change replaces."""
    static = out / "extensions" / "@jupyterlite" / "pyodide-kernel-extension" / "static"
    bundles = {b: b.read_text() for b in static.glob("*.js")}
    for old, new in PREWARM:
        hits = [b for b, text in bundles.items() if text.count(old) == 1]
        if not hits or any(text.count(old) > 1 for text in bundles.values()):
            raise SystemExit(f"build_lite: the bundles in {static} do not hold {old!r} once")
        for b in hits:
            bundles[b] = bundles[b].replace(old, new)
    for bundle, text in bundles.items():
        if text != bundle.read_text():
            _rewrite(bundle, text)


def _rewrite(path: Path, text: str) -> None:
    """Writes the site's copy of a file: unlinked first (a copy of the package's file, or a
    link to it: never written through)."""
    path.unlink()
    path.write_text(text)


def patch_app(out: Path) -> None:
    """The site's copies of JupyterLab's and JupyterLite's page code (see :data:`APP_PATCHES`,
    :data:`SW_REGISTERED` and :data:`SW_PASS`), each changed bundle of the app renamed after its
    new content (:func:`name_by_content`); stops the build when a bundle no longer holds what a
    change replaces."""
    changed: set[Path] = set()
    for old, new in APP_PATCHES:
        hits = [b for b in (out / "build").glob("*.js") if old in b.read_text()]
        if len(hits) != 1 or hits[0].read_text().count(old) != 1:
            raise SystemExit(f"build_lite: the bundles in {out / 'build'} do not hold {old!r} once")
        _rewrite(hits[0], hits[0].read_text().replace(old, new))
        changed.add(hits[0])
    managers = [*(out / "build").glob("*.js"), *(out / "extensions").glob("**/static/*.js")]
    patched = 0
    for bundle in managers:
        text = bundle.read_text()
        if SW_REGISTERED not in text:
            continue
        version = re.findall(
            r'([A-Za-z_$][\w$]*)=[A-Za-z_$][\w$]*\.PageConfig\.getOption\("appVersion"\)', text
        )
        if text.count(SW_REGISTERED) != 1 or len(version) != 1:
            raise SystemExit(f"build_lite: {bundle} has no single service worker manager")
        kept = f",localStorage.setItem(`${{e}}-version`,{version[0]}){SW_REGISTERED}"
        _rewrite(bundle, text.replace(SW_REGISTERED, kept))
        patched += 1
        if bundle.parent == out / "build":
            changed.add(bundle)
    worker = out / "service-worker.js"
    if not patched or worker.read_text().count(SW_PASS[0]) != 1:
        raise SystemExit(f"build_lite: {out} has no service worker manager or worker to change")
    _rewrite(worker, worker.read_text().replace(*SW_PASS))
    name_by_content(out, changed)


#: The lab page's address of the app's runtime (webpack's), whose query string names its version.
RUNTIME_ADDRESS = re.compile(r'"\.\./build/lab/bundle\.js\?_=([0-9A-Za-z.]+)"')


def name_by_content(out: Path, bundles: set[Path]) -> None:
    """Renames the app's bundles the site changed after their new content, and the runtime that
    loads them after its own: ``_headers`` keeps the app's content-named bundles for a year under
    their addresses (:func:`content_named_app`), so a changed bundle under its old name would
    reach a returning browser only when its copy expires. The runtime's address
    (its query string) is in the lab page, which browsers revalidate on each visit."""
    runtime = out / "build" / "lab" / "bundle.js"
    text = runtime.read_text()
    for bundle in sorted(bundles):
        stem, old, ext = bundle.name.rsplit(".", 2)
        new = hashlib.sha256(bundle.read_bytes()).hexdigest()[: len(old)]
        if text.count(f':"{old}"') != 1 or (bundle.parent / f"{stem}.{new}.{ext}").exists():
            raise SystemExit(f"build_lite: {runtime} does not name {bundle.name} once")
        text = text.replace(f':"{old}"', f':"{new}"')
        bundle.rename(bundle.with_name(f"{stem}.{new}.{ext}"))
    _rewrite(runtime, text)
    page = out / "lab" / "index.html"
    html = page.read_text()
    found = RUNTIME_ADDRESS.findall(html)
    if len(found) != 1:
        raise SystemExit(f"build_lite: {page} does not load {runtime.name} once")
    version = f"{found[0]}.{hashlib.sha256(text.encode()).hexdigest()[:7]}"
    _rewrite(page, html.replace(f"bundle.js?_={found[0]}", f"bundle.js?_={version}"))


#: A front end's file named by its content (webpack's ``[name].[contenthash].js``).
CONTENT_NAMED = re.compile(r"^(?P<stem>.+)\.(?P<hash>[0-9a-f]{8,})\.js$")


def name_front_ends_by_content(out: Path) -> list[str]:
    """Renames each front-end file the site changed (the kernel extension's, see
    :data:`PREWARM`) after its new content, and the files that name it after theirs in turn
    (its ``remoteEntry``, then the site's configuration, which is revalidated): so every file
    named by its content can be kept a year (:func:`headers`). A file's mention of its own name
    (the comment naming its source map, which keeps the upstream name) is left as it is.
    Returns the site's addresses of all the front ends' content-named files."""
    kept: list[str] = []
    for static in sorted((out / "extensions").glob("**/static")):
        package = static.parent.relative_to(out / "extensions")
        source = LABEXTENSIONS / package / "static"
        queue = [
            b
            for b in _content_named(static)
            if not (source / b.name).exists() or (source / b.name).read_bytes() != b.read_bytes()
        ]
        referrers = [
            *static.glob("*.js"),
            static.parent / "package.json",
            out / "jupyter-lite.json",
        ]
        for renames in itertools.count():
            if not queue:
                break
            if renames > 100:
                raise SystemExit(f"build_lite: {static}'s files name each other in a loop")
            bundle = queue.pop(0)
            match = CONTENT_NAMED.match(bundle.name)
            assert match is not None
            new = hashlib.sha256(bundle.read_bytes()).hexdigest()[: len(match["hash"])]
            renamed = bundle.with_name(f"{match['stem']}.{new}.js")
            if renamed == bundle:
                continue
            if renamed.exists():
                raise SystemExit(f"build_lite: {renamed} exists already")
            bundle.rename(renamed)
            referrers = [renamed if r == bundle else r for r in referrers]
            for other in referrers:
                text = other.read_text() if other != renamed else ""
                if match["hash"] in text:
                    _rewrite(other, text.replace(match["hash"], new))
                    if CONTENT_NAMED.match(other.name) and other not in queue:
                        queue.append(other)
        kept += [
            f"/extensions/{package.as_posix()}/static/{b.name}" for b in _content_named(static)
        ]
    return kept


def _content_named(static: Path) -> list[Path]:
    return sorted(b for b in static.glob("*.js") if CONTENT_NAMED.match(b.name))


def content_named_app(out: Path) -> list[str]:
    """The site's addresses of the app's files named by their content: its chunks under
    ``build/`` and its runtime, ``build/lab/bundle.js``, which the lab page loads under an
    address naming its content (:func:`name_by_content`)."""
    chunks = [b for b in (out / "build").rglob("*.js") if APP_CHUNK.match(b.name)]
    return [
        "/" + b.relative_to(out).as_posix() for b in [*chunks, out / "build" / "lab" / "bundle.js"]
    ]


def headers(kept: list[str], out: Path | None = None) -> str:
    """The site's ``_headers``: :data:`HEADERS`, then a year for each file of ``kept`` (the
    front ends' content-named files) and of the app's (:func:`content_named_app`, with ``out``),
    each listed by name (Netlify's and Cloudflare's patterns do not read a wildcard inside a path
    segment alike), the largest first (Cloudflare Pages reads the first 100 rules; the files
    past them are revalidated, never kept stale)."""
    paths = [*kept, *(content_named_app(out) if out is not None else ())]
    if out is not None:
        paths.sort(key=lambda a: (-(out / a.lstrip("/")).stat().st_size, a))
    return HEADERS + "".join(f"{path}\n{KEEP}" for path in dict.fromkeys(paths))


def pyodide_settings(pyodide_url: str) -> dict:
    return {
        "pyodideUrl": pyodide_url,
        "disablePyPIFallback": True,
        "loadPyodideOptions": {"packages": PRELOAD},
    }


def build_offline(out: Path, wheels: list[Path], model: ModelSource) -> None:
    stage_dir = ROOT / "build" / "lite-stage" / "offline"
    stage(stage_dir, pyodide_settings("./static/pyodide/pyodide.mjs"))
    jupyter_lite_build(stage_dir, out)
    open_on_tutorial(out)
    patch_kernel_start(out)
    patch_prewarm(out)
    patch_app(out)
    model_rules = add_model(out, model)  # first: hosts read a limited number of rules
    (out / "_headers").write_text(model_rules + headers(name_front_ends_by_content(out), out))
    start_worker_with_page(out, pyodide_settings("./static/pyodide/pyodide.mjs"))
    target = out / "static" / "pyodide"
    shutil.copytree(PYODIDE_DIST, target)
    # Pyodide's own package manager and its standard library, compiled too
    for wheel in [*target.glob("micropip-*.whl"), target / "python_stdlib.zip"]:
        (compiled,) = compile_wheels([wheel])
        shutil.copy(compiled, wheel)
    for junk in ("README.md", "console.html", "console-v2.html"):
        (target / junk).unlink(missing_ok=True)
    for mapfile in target.glob("*.map"):
        mapfile.unlink()
    lock_path = target / "pyodide-lock.json"
    lock = json.loads(lock_path.read_text())
    # the npm package holds the core only: keep the entries whose files are here
    lock["packages"] = {
        name: entry
        for name, entry in lock["packages"].items()
        if (target / entry["file_name"]).exists()
    }
    for entry in lock["packages"].values():
        entry["sha256"] = sha256(target / entry["file_name"])
    lock_path.write_text(json.dumps(lock))
    add_wheels(lock_path, wheels, target)


def build_online(out: Path, wheels: list[Path], model: ModelSource) -> None:
    version = pyodide_version()
    cdn = cdn_url(version)
    stage_dir = ROOT / "build" / "lite-stage" / "online"
    settings = pyodide_settings(cdn + "pyodide.mjs")
    settings["loadPyodideOptions"]["lockFileURL"] = "./static/pyodide-lock/pyodide-lock.json"
    stage(stage_dir, settings)
    jupyter_lite_build(stage_dir, out)
    open_on_tutorial(out)
    patch_kernel_start(out)
    patch_prewarm(out)
    patch_app(out)
    model_rules = add_model(out, model)  # first: hosts read a limited number of rules
    (out / "_headers").write_text(model_rules + headers(name_front_ends_by_content(out), out))
    start_worker_with_page(out, settings)
    target = out / "static" / "pyodide-lock"
    target.mkdir(parents=True)
    lock = json.loads((NPM_PYODIDE / "pyodide-lock.json").read_text())
    for entry in lock["packages"].values():
        entry["file_name"] = cdn + entry["file_name"]
    lock_path = target / "pyodide-lock.json"
    lock_path.write_text(json.dumps(lock))
    add_wheels(lock_path, wheels, target)


def check_site(out: Path, pyodide_url: str) -> None:
    """The built page configuration must name our Pyodide (an incremental build has been seen
    to drop it and fall back silently to the CDN)."""
    page = json.loads((out / "jupyter-lite.json").read_text())
    settings = page["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]
    if settings.get("pyodideUrl") != pyodide_url:
        raise SystemExit(f"build_lite: {out} names Pyodide at {settings.get('pyodideUrl')!r}")


def shown(path: Path) -> str:
    """``path`` relative to the checkout when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--variant", choices=["offline", "online", "both"], default="both")
    parser.add_argument(
        "--no-model",
        action="store_true",
        help="a site without the model in the page (for hosts that cannot serve its 1.1 GB)",
    )
    parser.add_argument(
        "--model-url",
        help="the page fetches the model's parts from this folder URL instead of the site "
        "(upload static/cadet-model/parts/ of a site built with them; the host must allow "
        "the site's origin with CORS)",
    )
    parser.add_argument(
        "--gguf",
        type=Path,
        default=default_gguf(),
        help="the pinned model file, split into the site (default: %(default)s, from "
        "scripts/setup_llm.sh)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="the site's folder (one variant only; default build/lite or build/lite-online)",
    )
    args = parser.parse_args()
    if args.no_model and args.model_url:
        parser.error("--no-model and --model-url exclude each other")
    if args.out is not None and args.variant == "both":
        parser.error("--out builds one variant: name it with --variant")
    model = ModelSource(None if args.no_model else args.gguf, args.model_url)
    for need, hint in (
        (PYODIDE_DIST / "pyodide.mjs", "setup_pyodide.sh"),
        (WHEELS, "setup_lite.sh"),
    ):
        if not need.exists():
            raise SystemExit(f"build_lite: {need} missing; run bash scripts/{hint}")
    t0 = time.perf_counter()
    wheels = sorted(WHEELS.glob("*.whl"))
    wheels += sorted(w for w in KERNEL_WHEELS.glob("*.whl") if w.name.startswith(KERNEL_BOOT))
    wheels.append(build_cadet_wheel(ROOT / "build" / "lite-stage" / "wheels"))
    wheels = compile_wheels(wheels)
    prune_compiled(wheels)
    built = {}
    if args.variant in ("offline", "both"):
        t = time.perf_counter()
        out = args.out or ROOT / "build" / "lite"
        build_offline(out, wheels, model)
        check_site(out, "./static/pyodide/pyodide.mjs")
        built["offline"] = (out, time.perf_counter() - t)
    if args.variant in ("online", "both"):
        t = time.perf_counter()
        out = args.out or ROOT / "build" / "lite-online"
        build_online(out, wheels, model)
        check_site(out, cdn_url(pyodide_version()) + "pyodide.mjs")
        built["online"] = (out, time.perf_counter() - t)
    for name, (out, seconds) in built.items():
        files = sum(1 for f in out.rglob("*") if f.is_file())
        print(
            f"build_lite: {name} site in {shown(out)}: {size_mb(out):.1f} MB, "
            f"{files} files, built in {seconds:.1f} s"
        )
    print(f"build_lite: done in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
