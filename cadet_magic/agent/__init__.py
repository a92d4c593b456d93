"""The portable self-correcting agent: stdlib, sqlglot and sqlparse only.

Nothing here imports IPython, pandas, SQLAlchemy, LangChain or database drivers, so the
same code runs in JupyterLite's Pyodide kernel. Only the fallback's code runner imports
pandas, and only when it runs code (in a worker thread on CPython, in the same thread on
Pyodide).

The loop is :func:`cadet_magic.agent.run.run_agent` (imported from there: this package's
``__init__`` imports none of its modules). Each phase is a declaration (:mod:`.phases`) of the
one attempt pipeline (:mod:`.pipeline`, :mod:`.routes`).
"""
