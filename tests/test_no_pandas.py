"""Without pandas (a JupyterLite kernel offline), ``-o VAR`` stores a list of dicts and says so."""

from __future__ import annotations

import sqlite3
import sys

from cadet_magic.llm import ScriptedModel


def test_out_without_pandas(ipython_shell, monkeypatch, capsys):
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (city TEXT, n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [("Oslo", 2), ("Lima", 1)])
    model = ScriptedModel({"Cities?": ["SELECT city, n FROM t ORDER BY n DESC"]})
    ipython_shell.user_ns.update(nopd_con=con, nopd_model=model)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails, as in Pyodide
    ipython_shell.run_line_magic("config", "AskMagic.live = False")
    try:
        result = ipython_shell.run_cell_magic(
            "ask", "--con nopd_con --model nopd_model -o rows", "Cities?"
        )
    finally:
        ipython_shell.run_line_magic("config", "AskMagic.live = True")
    assert result.ok and result.df is None
    assert ipython_shell.user_ns["rows"] == [{"city": "Oslo", "n": 2}, {"city": "Lima", "n": 1}]
    out = capsys.readouterr().out
    assert "pandas is not available in this kernel" in out and "list of dicts" in out
