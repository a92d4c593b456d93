"""jupysql's ``%sql`` declared lazily: loaded on first use, not by ``%load_ext cadet_magic``.

Loading jupysql imports SQLAlchemy, pandas and more (about a second). IPython 9
can declare a magic without importing it (``MagicsManager.register_lazy``): the
first ``%sql``/``%%sql``, ``%sqlcmd``, ``%sqlplot`` or ``%config`` instantiates
:class:`LoadJupysql`, which loads the jupysql extension; jupysql then registers
its real magics over the placeholders and the call goes on to them. Older IPython
versions load jupysql straight away.

jupysql imports pyspark at load time when it is installed (to recognise Spark DataFrames and
errors), which costs time and, with pandas 3, prints pyspark's FutureWarning twice in a notebook
that never asked for Spark. :func:`load_jupysql` loads it with pyspark kept out: the classes
jupysql took from pyspark become stand-ins that import the real ones when a Spark object
reaches them (a Spark session the user made has imported pyspark already).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
            load_jupysql(shell)


class _Later(type):
    """The type of a stand-in for a pyspark class: ``isinstance`` asks the real class, imported
    only for an object of pyspark's (which means pyspark is loaded already)."""

    #: The pyspark module the real class is in.
    source: str

    def __instancecheck__(cls, obj: object) -> bool:
        if not type(obj).__module__.startswith("pyspark"):
            return False
        real = getattr(importlib.import_module(cls.source), cls.__name__)
        return isinstance(obj, real)

    def __repr__(cls) -> str:
        return f"<stand-in for {cls.source}.{cls.__name__}>"


def _later(module: str, name: str) -> type:
    """A stand-in for ``module.name`` (a class, so truthy, as jupysql's checks expect).

    >>> stand_in = _later("pyspark.sql", "DataFrame")
    >>> bool(stand_in), isinstance(42, stand_in)
    (True, False)
    """
    return _Later(name, (), {"source": module, "__module__": __name__})


#: What jupysql takes from pyspark when it loads: (jupysql's module, its name for the class,
#: pyspark's module, the class).
JUPYSQL_PYSPARK = (
    ("sql.util", "AnalysisException", "pyspark.sql.utils", "AnalysisException"),
    ("sql.run.sparkdataframe", "DataFrame", "pyspark.sql", "DataFrame"),
    ("sql.run.sparkdataframe", "CDataFrame", "pyspark.sql.connect.dataframe", "DataFrame"),
)


class _KeepOut(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of pyspark fail as if it were absent (``find_spec`` still finds it: it is
    installed; only loading it is refused).

    >>> finder = _KeepOut()
    >>> finder.find_spec("json") is None, finder.find_spec("pyspark.sql").name
    (True, 'pyspark.sql')
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name == "pyspark" or name.startswith("pyspark."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        raise ModuleNotFoundError(
            f"No module named {module.__name__!r} (kept out while jupysql loads)",
            name=module.__name__,
        )


@contextmanager
def pyspark_kept_out() -> Iterator[None]:
    """While jupysql loads, pyspark cannot be imported (unless it is already); afterwards, when
    pyspark is installed, the names jupysql took from it are stand-ins that import it lazily."""
    if "pyspark" in sys.modules:
        yield
        return
    installed = importlib.util.find_spec("pyspark") is not None
    finder = _KeepOut()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
    if not installed:
        return
    for module, name, source, cls in JUPYSQL_PYSPARK:
        loaded = sys.modules.get(module)
        if loaded is not None and getattr(loaded, name, True) is None:
            setattr(loaded, name, _later(source, cls))


#: What jupysql says at load when the user configured nothing for it (in any folder below a
#: pyproject.toml): not shown when cadet_magic loads jupysql on the user's behalf. Settings the
#: user did write, and problems with them, are still shown.
UNCONFIGURED_NOTES = (
    "Tip: You may define configurations in ",
    "Did not find user configurations in ",
    "Please review our ",
)


@contextmanager
def unconfigured_notes_left_out() -> Iterator[None]:
    """jupysql's messages that nothing is configured are dropped while the block runs."""
    import sql.display

    shown = {name: getattr(sql.display, name) for name in ("message", "message_html")}

    def keep(show: Any) -> Any:
        def message(text: Any, *args: Any, **kwargs: Any) -> Any:
            if not str(text).startswith(UNCONFIGURED_NOTES):
                return show(text, *args, **kwargs)
            return None

        return message

    for name, show in shown.items():
        setattr(sql.display, name, keep(show))
    try:
        yield
    finally:
        for name, show in shown.items():
            setattr(sql.display, name, show)


def load_jupysql(ipython: Any) -> None:
    """``%load_ext sql`` without importing pyspark (see :func:`pyspark_kept_out`) and without
    jupysql's notes that nothing is configured (:data:`UNCONFIGURED_NOTES`)."""
    with pyspark_kept_out():
        import sql.display  # noqa: F401 - imports jupysql with pyspark kept out

        with unconfigured_notes_left_out():
            ipython.extension_manager.load_extension("sql")


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
        load_jupysql(ipython)
    except Exception:  # noqa: BLE001 - jupysql is optional for --con users
        return "absent"
    return "loaded"
