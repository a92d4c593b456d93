"""A notebook that never asks for Spark never imports pyspark: jupysql, loaded by the first
``%sql``, would import it (and with pandas 3 print pyspark's FutureWarning twice), so
cadet_magic loads jupysql with pyspark kept out (cadet_magic/db/jupysql.py). In a fresh
interpreter, as a kernel would be."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        from IPython.testing.globalipapp import start_ipython
        from tests.helpers import fake_model, sql_reply

        ip = start_ipython()
        ip.run_line_magic("load_ext", "cadet_magic")
        ip.run_line_magic("sql", "duckdb:// --alias quiet")
        ip.run_cell_magic("sql", "", "CREATE TABLE t AS SELECT 1 AS x")
        ip.user_ns["model"] = fake_model(sql_reply("SELECT x FROM t"))
        result = ip.run_cell_magic("ask", "--model model", "What is x?")
        import sql.util, sql.run.sparkdataframe as frames
    print(json.dumps({
        "pyspark": sorted(m for m in sys.modules if m.split(".")[0] == "pyspark"),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught
                     if issubclass(w.category, (FutureWarning, UserWarning))],
        "ok": bool(result.ok),
        "stand_ins": [repr(sql.util.AnalysisException), repr(frames.DataFrame)],
    }))
    """
)


def test_sql_and_ask_leave_pyspark_unimported():
    import importlib.util
    import json

    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("{")]
    seen = json.loads(line)
    assert seen["ok"] and seen["pyspark"] == [] and seen["warnings"] == []
    if importlib.util.find_spec("pyspark") is not None:  # installed: jupysql holds stand-ins
        assert all(r.startswith("<stand-in for pyspark.") for r in seen["stand_ins"]), seen
    assert "Warning" not in done.stderr, done.stderr
