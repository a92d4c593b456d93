"""JupyterLite: what the first ``%%ask`` needs is loaded while the reader reads (edge, Pyodide only).

The JupyterLite site preloads cadet_magic with IPython only, so its kernel is idle sooner. The
rest of cadet_magic's dependencies (:data:`DEFERRED`: the SQL parser and the widget stack) stay
in the site's lock file until ``import cadet_magic`` (``%load_ext cadet_magic``) asks Pyodide
to load them, in the background: the kernel is free at once. Before each later cell the kernel
awaits that load if it is still running (an awaitable line transform of the Pyodide kernel),
so a ``%%ask`` typed right away waits for it and one typed later finds it done. Everywhere else
(CPython) nothing here does anything.

>>> DEFERRED
('sqlglot', 'sqlparse', 'ipywidgets', 'anywidget', 'ipylab')
>>> start()  # not in Pyodide: nothing to load
False
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from typing import Any

log = logging.getLogger("cadet_magic")

#: Distributions (names in Pyodide's lock file) not preloaded by the site: loaded by
#: ``import cadet_magic``. Each one's importable name is the same.
DEFERRED = ("sqlglot", "sqlparse", "ipywidgets", "anywidget", "ipylab")

_pending: Any = None  # the JavaScript promise of the load in progress


def in_pyodide() -> bool:
    return sys.platform == "emscripten"


def missing() -> list[str]:
    """The deferred distributions not importable yet."""
    return [name for name in DEFERRED if importlib.util.find_spec(name) is None]


def start() -> bool:
    """Starts loading the missing deferred packages from the site's lock file (in JupyterLite's
    Pyodide kernel only); True if a load started."""
    global _pending
    if not in_pyodide() or _pending is not None:
        return False
    names = missing()
    manager = _transform_manager()
    if not names or manager is None:  # elsewhere in Pyodide: installed as usual (micropip)
        return False
    import pyodide_js
    from pyodide.ffi import to_js

    _pending = pyodide_js.loadPackage(to_js(names))
    manager.line_transforms.insert(0, wait_for_packages)
    return True


def _transform_manager() -> Any:
    """The Pyodide kernel's awaitable cell transforms (None outside its kernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    kernel = getattr(shell, "kernel", None)
    manager = getattr(kernel, "lite_transform_manager", None)
    return manager if isinstance(getattr(manager, "line_transforms", None), list) else None


async def wait_for_packages(lines: list[str]) -> list[str]:
    """A line transform: awaits the background load (once), leaves the cell as it is."""
    global _pending
    pending, _pending = _pending, None
    if pending is not None:
        try:
            await pending
        except Exception as exc:  # noqa: BLE001 - the import that needs it names what is missing
            log.warning("cadet_magic: loading %s failed: %s", ", ".join(DEFERRED), exc)
        manager = _transform_manager()
        if manager is not None and wait_for_packages in manager.line_transforms:
            manager.line_transforms.remove(wait_for_packages)
    return lines


def require() -> None:
    """Raises a one-line ImportError while the background load is still running (JupyterLite)."""
    names = missing() if in_pyodide() and _transform_manager() is not None else []
    if names:
        start()
        raise ImportError(
            f"cadet_magic is still loading {', '.join(names)} into this kernel: "
            "run the cell again in a moment."
        )
