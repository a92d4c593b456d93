"""The portable self-correcting agent: stdlib, sqlglot and sqlparse only.

Nothing here imports IPython, pandas, SQLAlchemy, LangChain, database drivers or
threads, so the same code runs in JupyterLite's Pyodide kernel.
"""

from cadet_magic.agent.run import Event, run_agent

__all__ = ["Event", "run_agent"]
