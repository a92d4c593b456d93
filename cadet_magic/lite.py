"""JupyterLite: what the first ``%%ask`` needs is loaded while the reader reads (edge, Pyodide only).

The JupyterLite site preloads cadet_magic with IPython's core only, so its kernel is idle
sooner. The rest stays in the site's lock file until ``import cadet_magic`` asks Pyodide to
load it, in the background: cadet_magic's own dependencies (:data:`DEFERRED`: the SQL parser
and the widget stack) and the IPython extras the kernel's start does not import
(:data:`KERNEL_EXTRAS`: jedi for completion, prompt_toolkit, stack_data for tracebacks,
matplotlib-inline). The site's kernel puts :class:`DriveFinder` in charge before its first
imports and calls :func:`start` as the last step of its start, so that load begins as soon as
the kernel is idle. Before each later cell the kernel awaits it if
it is still running (an awaitable line transform of the Pyodide kernel), so a cell typed right
away waits for it and one typed later finds it done; completion uses IPython's own completer
until jedi is there. Everywhere else (CPython) nothing here does anything.

>>> DEFERRED
('sqlglot', 'sqlparse', 'ipywidgets', 'anywidget', 'ipylab')
>>> sorted(KERNEL_EXTRAS)
['jedi', 'matplotlib-inline', 'prompt-toolkit', 'stack-data']
>>> start()  # not in Pyodide: nothing to load
False
"""

from __future__ import annotations

import importlib.machinery
import logging
import sys
from typing import Any

log = logging.getLogger("cadet_magic")

#: Distributions (names in Pyodide's lock file) not preloaded by the site: loaded by
#: ``import cadet_magic``. Each one's importable name is the same.
DEFERRED = ("sqlglot", "sqlparse", "ipywidgets", "anywidget", "ipylab")
#: IPython's dependencies its kernel does not import to start (lock name: importable name),
#: left out of the site's boot load and loaded with :data:`DEFERRED`.
KERNEL_EXTRAS = {
    "jedi": "jedi",
    "prompt-toolkit": "prompt_toolkit",
    "stack-data": "stack_data",
    "matplotlib-inline": "matplotlib_inline",
}

#: Seconds between ``import cadet_magic`` and the start of the background load, unless a cell
#: asks for the packages first: the site's kernel imports cadet_magic at the end of its start,
#: and unpacking (synchronous, in the kernel's worker) would otherwise hold up its first idle.
START_DELAY = 1.0

_pending: Any = None  # the load in progress (an asyncio task)
_go: Any = None  # an asyncio.Event that ends START_DELAY early


def in_pyodide() -> bool:
    return sys.platform == "emscripten"


def missing(names: Any = None) -> list[str]:
    """The deferred distributions (``names``, default :data:`DEFERRED` and
    :data:`KERNEL_EXTRAS`) not installed yet (looked up among the installed packages only: a
    look-up in the drive is a request to the page, which is busy opening the notebook while the
    kernel starts)."""
    wanted = (*DEFERRED, *KERNEL_EXTRAS) if names is None else names
    return [n for n in wanted if not installed(KERNEL_EXTRAS.get(n, n))]


def start() -> bool:
    """Starts loading the missing deferred packages from the site's lock file (in JupyterLite's
    Pyodide kernel only); True if a load started."""
    global _pending
    if not in_pyodide() or _pending is not None:
        return False
    manager = _transform_manager()
    if manager is None:  # elsewhere in Pyodide: installed as usual (micropip)
        return False
    use_drive_finder()
    names = missing()
    if not names:
        return False
    import asyncio

    import pyodide_js
    from pyodide.ffi import to_js

    async def load() -> None:
        try:
            await asyncio.wait_for(go.wait(), START_DELAY)
        except TimeoutError:
            pass
        await pyodide_js.loadPackage(to_js(names))

    global _go
    _go = go = asyncio.Event()
    _pending = asyncio.ensure_future(load())
    manager.line_transforms.insert(0, wait_for_packages)
    completer: Any = getattr(_shell(), "Completer", None)
    if "jedi" in names and completer is not None and getattr(completer, "use_jedi", False):
        completer.use_jedi = False  # IPython's own completer until jedi is unpacked
        asyncio.ensure_future(_use_jedi_when_loaded(_pending, completer))
    return True


async def _use_jedi_when_loaded(pending: Any, completer: Any) -> None:
    try:
        await pending
    except Exception:  # noqa: BLE001 - wait_for_packages reports the failed load
        return
    if installed("jedi"):
        completer.use_jedi = True


def _shell() -> Any:
    """IPython's shell, if there is one yet (the kernel's start imports IPython while the drive's
    finder is already asked for modules: the module may be half imported)."""
    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    return get_ipython() if get_ipython is not None else None


def _transform_manager() -> Any:
    """The Pyodide kernel's awaitable cell transforms (None outside its kernel)."""
    kernel = getattr(_shell(), "kernel", None)
    manager = getattr(kernel, "lite_transform_manager", None)
    return manager if isinstance(getattr(manager, "line_transforms", None), list) else None


async def wait_for_packages(lines: list[str]) -> list[str]:
    """A line transform: awaits the background load (once), leaves the cell as it is."""
    global _pending
    pending, _pending = _pending, None
    if pending is not None:
        hurry()
        try:
            await pending
        except Exception as exc:  # noqa: BLE001 - the import that needs it names what is missing
            log.warning("cadet_magic: loading %s failed: %s", ", ".join(missing()), exc)
        manager = _transform_manager()
        if manager is not None and wait_for_packages in manager.line_transforms:
            manager.line_transforms.remove(wait_for_packages)
    return lines


class DriveFinder(importlib.machinery.FileFinder):
    """Python's path finder for a folder of JupyterLite's drive (the kernel's working
    directory, first on ``sys.path``), which lists the folder once per cell instead of looking
    at its time stamp on every import. In the drive each look-up is a synchronous request from
    the kernel's worker to the page, and Python's own finder makes one for every new top-level
    module imported, standard library included (most of the first ``%%ask``'s requests); and
    the drive stamps every folder 0, so Python's own finder, which lists a folder again only
    when its stamp changes, never sees a module uploaded after the kernel's start.

    Within a cell, a module whose name is not in the folder as last listed is not looked for
    again; a file written and imported in the same cell is found after
    ``importlib.invalidate_caches()``, as Python's documentation asks for anyway.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> finder = DriveFinder(folder, *_loaders())
    >>> finder.cell = lambda: 1
    >>> finder.find_spec("mine") is None
    True
    >>> open(os.path.join(folder, "mine.py"), "w").close()
    >>> finder.find_spec("mine") is None  # same cell: the listing is not read again
    True
    >>> finder.cell = lambda: 2
    >>> finder.find_spec("mine").name
    'mine'
    """

    def __init__(self, path: str, *loader_details: Any) -> None:
        super().__init__(path, *loader_details)
        self.cell = _cell_count
        self._seen_in: Any = None  # the cell in which the folder's stamp was last checked

    def find_spec(self, fullname: str, target: Any = None) -> Any:
        cell = self.cell()
        tail = fullname.rpartition(".")[2]
        listed = self._path_cache  # type: ignore[attr-defined]  # FileFinder's listing
        if cell is not None and cell == self._seen_in:
            if not any(e == tail or e.startswith(tail + ".") for e in listed):
                return None
        if cell != self._seen_in:
            self._path_mtime = -1  # list the folder again: its stamp says nothing here
        self._seen_in = cell
        return super().find_spec(fullname, target)

    def invalidate_caches(self) -> None:
        self._seen_in = None
        super().invalidate_caches()


def _loaders() -> list:
    from importlib._bootstrap_external import _get_supported_file_loaders  # type: ignore

    return _get_supported_file_loaders()


def _cell_count() -> Any:
    """The cell being run; the kernel's start, before IPython's shell exists, counts as one."""
    shell = _shell()
    return "start" if shell is None else getattr(shell, "execution_count", None)


def _drive_hook(path: str) -> DriveFinder:
    if path == "/drive" or path.startswith("/drive/"):
        return DriveFinder(path, *_loaders())
    raise ImportError("not a folder of the drive")


def use_drive_finder() -> bool:
    """Puts :class:`DriveFinder` in charge of the drive's folders (JupyterLite's kernel only)
    and forgets the finders made for them so far: the site's kernel starts its runtime before
    the drive is mounted, in a plain folder of the same name whose listing would otherwise be
    taken for the drive's. True if the finder was not in charge yet."""
    if not in_pyodide():
        return False
    try:
        _loaders()
    except ImportError:  # another Python: leave its finders alone
        return False
    added = _drive_hook not in sys.path_hooks
    if added:
        sys.path_hooks.insert(0, _drive_hook)
    for key in [k for k in sys.path_importer_cache if k == "/drive" or k.startswith("/drive/")]:
        del sys.path_importer_cache[key]
    return added


def installed(name: str) -> bool:
    """Whether the top-level module ``name`` is imported or can be, looked up among the
    installed packages only: not in the working directory, first on ``sys.path``, which in
    JupyterLite is the drive, where a look-up costs the page a listing of the folder (a failed
    ``import pandas`` on every question did).

    >>> installed("json"), installed("no_such_module_here")
    (True, False)
    """
    if name in sys.modules:
        return sys.modules[name] is not None
    path = [p for p in sys.path if p not in ("", ".")]
    return importlib.machinery.PathFinder.find_spec(name, path) is not None


def hurry() -> None:
    """Starts the background load now if it is still waiting out :data:`START_DELAY`."""
    if _go is not None:
        _go.set()


def require() -> None:
    """Raises a one-line ImportError while the background load is still running (JupyterLite)."""
    names = missing(DEFERRED) if in_pyodide() and _transform_manager() is not None else []
    if names:
        start()
        hurry()
        raise ImportError(
            f"cadet_magic is still loading {', '.join(names)} into this kernel: "
            "run the cell again in a moment."
        )
