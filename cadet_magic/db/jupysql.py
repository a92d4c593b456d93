"""jupysql's ``%sql`` declared lazily: loaded on first use, not by ``%load_ext cadet_magic``.

Loading jupysql imports SQLAlchemy, pandas and more (about a second). IPython 9
can declare a magic without importing it (``MagicsManager.register_lazy``): the
first ``%sql``/``%%sql``, ``%sqlcmd``, ``%sqlplot`` or ``%config`` instantiates
:class:`LoadJupysql`, which loads the jupysql extension; jupysql then registers
its real magics over the placeholders and the call goes on to them. Older IPython
versions load jupysql straight away.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, magics_class

#: jupysql's magics, with their kinds.
JUPYSQL_MAGICS = {"sql": "line_cell", "sqlcmd": "line", "sqlplot": "line"}
SPEC = f"{__name__}:LoadJupysql"


@magics_class
class LoadJupysql(Magics):
    """Provides no magic itself: creating it loads jupysql, whose magics replace the placeholders."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        if shell is not None:
            shell.extension_manager.load_extension("sql")


def jupysql_available() -> bool:
    """Whether the ``sql`` package (jupysql) can be imported, without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec("sql") is not None
    except (ImportError, ValueError):
        return False


def declare_jupysql(ipython: Any) -> str:
    """Makes ``%sql`` available in ``ipython``; returns "present", "lazy", "loaded" or "absent".

    Nothing happens when ``%sql`` is already registered (jupysql loaded, or declared).

    Example:
        >>> from IPython.core.interactiveshell import InteractiveShell
        >>> declare_jupysql(InteractiveShell.instance()) in ("lazy", "loaded", "absent")
        True
    """
    manager = ipython.magics_manager
    if "sql" in manager.magics["line"]:
        return "present"
    if not jupysql_available():
        return "absent"
    if hasattr(manager, "load_all_lazy_magics"):  # IPython 9: "module:Class" specs, %config aware
        try:
            for name, kind in JUPYSQL_MAGICS.items():
                if name not in manager.magics["line"]:
                    manager.register_lazy(name, SPEC, kind)
            return "lazy"
        except TypeError:  # an IPython without magic kinds: load now
            pass
    try:
        ipython.extension_manager.load_extension("sql")
    except Exception:  # noqa: BLE001 - jupysql is optional for --con users
        return "absent"
    return "loaded"
