"""cadet_magic: ask your notebook's database questions in plain language.

``%load_ext cadet_magic`` registers ``%%ask``/``%ask`` and ``%cadet``. Without
IPython, use :func:`ask`. The agent, the SQL check and the diagnosis are
portable (stdlib, sqlglot, sqlparse) and run in JupyterLite's Pyodide kernel.
"""

from __future__ import annotations

from typing import Any

from cadet_magic import lite

__version__ = "0.1.0"
__all__ = [
    "ask",
    "rerun",
    "as_tool",
    "validate_sql",
    "diagnose_error",
    "load_ipython_extension",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # Lazy so that `import cadet_magic` stays cheap and portable.
    if name in ("ask", "rerun", "as_tool", "validate_sql", "diagnose_error"):
        lite.require()
    if name == "ask":
        from cadet_magic.api import ask

        return ask
    if name == "rerun":  # a result's answer run again, without a model
        from cadet_magic.api import rerun

        return rerun
    if name == "as_tool":  # the agent as a LangChain tool
        from cadet_magic.tool import as_tool

        return as_tool
    if name == "validate_sql":
        from cadet_magic.sql.validate import validate_sql

        return validate_sql
    if name == "diagnose_error":  # an engine's error read by its engine's reader, diagnosed
        from cadet_magic.db.driver_errors import diagnose_error

        return diagnose_error
    if name in (
        "llm",
        "api",
        "agent",
        "sql",
        "diagnose",
        "result_check",
        "schema",
        "db",
        "display",
        "result",
        "langgraph",
    ):
        import importlib

        return importlib.import_module(f"cadet_magic.{name}")
    raise AttributeError(f"module 'cadet_magic' has no attribute {name!r}")


# In JupyterLite: load the SQL parser and the widget stack while the reader reads (see lite.py).
lite.start()


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext cadet_magic``: registers the magics, and jupysql's ``%sql`` if absent.

    jupysql is declared lazily (loaded by the first ``%sql`` or ``%config``), so
    that loading this extension costs no more than loading jupysql itself.
    """
    from cadet_magic.db.jupysql import declare_jupysql
    from cadet_magic.display import register_formatters
    from cadet_magic.magic.magics import AskMagic

    declare_jupysql(ipython)
    ipython.register_magics(AskMagic(shell=ipython))
    # A result's display carries its provenance as output metadata ("cadet"), saved with the
    # notebook.
    register_formatters(ipython)
