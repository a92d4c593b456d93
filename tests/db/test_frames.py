"""DataFrames asked as tables (cadet_magic.db.frames): pandas, polars and Arrow frames on a
private in-memory DuckDB connection, or copied into SQLite where DuckDB is missing; never
written, read afresh for every question, asked like any connection (sharing levels, limits,
the vote, the fallback). Scripted models throughout (stored replies, not a real LLM)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import cadet_magic
from cadet_magic.db.connect import resolve_runner
from cadet_magic.db.frames import frames_runner
from cadet_magic.errors import EngineError, NoConnectionError
from cadet_magic.llm import ScriptedModel
from tests.conftest import need
from tests.helpers import sql_reply, usage_error

HOSTILE = json.loads((Path(__file__).parent / "data" / "frames_hostile.json").read_text())
STATEMENTS = HOSTILE["statements"]

try:
    import polars
except ImportError:  # the dev extra installs it
    polars = None


@pytest.fixture(autouse=True)
def _polars() -> None:
    need(polars is not None, "polars is not installed (pip install -e '.[dev]')")


def sales() -> pd.DataFrame:
    return pd.DataFrame({"g": ["a", "b", "a", "c"], "v": [1, 2, 3, 4]})


def customers() -> pd.DataFrame:
    return pd.DataFrame({"id": [1, 2], "city": ["Zanzibar", "Oslo"]})


def ask(question: str, con, *replies: str, **options):
    """``ask()`` with a scripted model replying ``replies`` in order (no vote unless asked)."""
    model = ScriptedModel({question: [sql_reply(r) if "```" not in r else r for r in replies]})
    return cadet_magic.ask(question, con=con, model=model, **{"candidates": 1, **options})


# -- kinds of frames ---------------------------------------------------------------------------

KINDS = {
    "pandas": sales,
    "polars": lambda: polars.from_pandas(sales()),
    "arrow table": lambda: pa.Table.from_pandas(sales(), preserve_index=False),
    "arrow record batch": lambda: pa.RecordBatch.from_pandas(sales(), preserve_index=False),
}


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_frame_is_a_table(kind, engine, monkeypatch):
    monkeypatch.setattr("cadet_magic.db.frames.IN_BROWSER", engine == "sqlite")
    q = "Total v per g?"
    r = ask(
        q, {"sales": KINDS[kind]()}, "SELECT g, sum(v) AS total FROM sales GROUP BY g ORDER BY g"
    )
    assert r.ok, r.message
    assert r.rows == [("a", 4), ("b", 2), ("c", 4)]
    assert r.connection.startswith("DataFrame sales (in-memory")
    assert ("SQLite copy" in r.connection) == (engine == "sqlite")
    assert r.dialect == engine and r.scripted


def test_one_frame_is_the_table_df():
    r = ask("How many rows?", sales(), "SELECT count(*) AS n FROM df")
    assert r.ok and r.rows == [(4,)]
    assert "df" in r.prompts[0][0]["content"]


def test_two_frames_join():
    r = ask(
        "Customers and their first sale?",
        {"sales": sales(), "customers": customers()},
        "SELECT c.city, min(s.v) AS v FROM customers c JOIN sales s ON s.v = c.id "
        "GROUP BY c.city ORDER BY c.city",
    )
    assert r.rows == [("Oslo", 2), ("Zanzibar", 1)]


def test_the_frames_are_scanned_in_place():
    """The private database holds no table: each frame is a view DuckDB scans out of the
    Python object itself (a pandas or Arrow scan), so nothing of a frame is copied into it."""
    runner = frames_runner({"sales": sales(), "arr": pa.table({"x": [1]})})
    cur = runner.connection.cursor()
    assert cur.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == [(0,)]
    views = dict(
        cur.execute("SELECT view_name, sql FROM duckdb_views() WHERE temporary").fetchall()
    )
    assert "pandas_scan" in views["sales"] and "arrow_scan" in views["arr"]
    settings = cur.execute(
        "SELECT current_setting('enable_external_access'), "
        "current_setting('python_enable_replacements')"
    ).fetchall()
    assert settings == [(False, False)]


# -- never written -----------------------------------------------------------------------------


def _frames() -> dict:
    return {
        "sales": sales(),
        "customers": polars.from_pandas(customers()),
        "arrow": pa.table({"x": [1, 2, 3]}),
    }


def _unchanged(frames: dict, before: dict) -> None:
    assert frames["sales"].equals(before["sales"])
    assert frames["customers"].equals(before["customers"])
    assert frames["arrow"].equals(before["arrow"])


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("hostile", STATEMENTS, ids=[s["kind"] for s in STATEMENTS])
def test_the_engine_refuses_to_write_with_the_check_bypassed(tmp_path, monkeypatch, hostile):
    """Called on the runner directly (no safety check): DuckDB itself refuses, and no frame
    and no file changes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "planted.csv").write_text("secret\n42\n")
    secret_frame = pd.DataFrame({"secret": [42]})  # a variable a replacement scan would find
    frames, before = _frames(), _frames()
    listed = _files(tmp_path)
    runner = frames_runner(frames)
    with pytest.raises(EngineError):
        runner.run(hostile["sql"].format(dir=tmp_path), limit=5, timeout=10)
    _unchanged(frames, before)
    assert _files(tmp_path) == listed
    assert secret_frame.shape == (1, 1)


def test_a_hostile_model_changes_no_frame(tmp_path, monkeypatch):
    """A model writing every statement of the table, then pandas code that rewrites ``df`` in
    the fallback: every attempt is refused or runs on a copy; the frames are as they were."""
    monkeypatch.chdir(tmp_path)
    frames, before = _frames(), _frames()
    replies = [s["sql"].format(dir=tmp_path) for s in STATEMENTS]
    q = "Wipe the sales"
    model = ScriptedModel(
        {q: [*map(sql_reply, replies[:3]), FALLBACK_MUTATES, FALLBACK_MUTATES, FALLBACK_MUTATES]}
    )
    r = cadet_magic.ask(q, con=frames, model=model, candidates=1)
    assert [a.outcome for a in r.attempts] == ["refused"] * 3
    assert r.answered_by == "fallback", r.message  # the code ran, on its own copy of the rows
    assert r.columns == ["v"] and r.rows == [(0,)] * 4
    _unchanged(frames, before)
    assert _files(tmp_path) == []
    for sql in replies:  # each statement as the model's only reply
        q1 = f"Change it: {sql[:30]}"
        r = cadet_magic.ask(
            q1, con=frames, model=ScriptedModel({q1: [sql_reply(sql)]}), candidates=1,
            max_attempts=1, fallback=False,
        )  # fmt: skip
        assert not r.ok or r.rows == [(1,)]  # the stacked SELECT 1 alone may be answered
        _unchanged(frames, before)
    assert _files(tmp_path) == []


#: A fallback attempt whose pandas code rewrites the frame it is given, in place.
FALLBACK_MUTATES = (
    "```sql\nSELECT g, v FROM sales\n```\n"
    "```python\ndf['v'] = 0\ndf.drop(columns=['g'], inplace=True)\nresult = df\n```"
)


def test_the_fallback_code_sees_the_frames_rows(tmp_path):
    """Failing SQL hands over to the fallback: its SELECT runs on the frames, its pandas code
    gets the rows (and may change its own copy of them, never the frame)."""
    frames, before = _frames(), _frames()
    r = ask(
        "Total per g, pandas style",
        frames,
        "SELECT nope FROM sales",
        "SELECT nope2 FROM sales",
        "SELECT nope3 FROM sales",
        "```sql\nSELECT g, v FROM sales\n```\n```python\ndf['v'] = df['v'] * 10\n"
        "result = df.groupby('g', as_index=False)['v'].sum()\n```",
    )
    assert r.answered_by == "fallback", r.message
    assert r.rows == [("a", 40), ("b", 20), ("c", 40)]
    _unchanged(frames, before)


# -- read afresh -------------------------------------------------------------------------------


def test_a_frame_changed_between_questions_is_read_afresh():
    """The same frame object, changed in place (a new column, other values), then replaced:
    each question sees the frame as it is then, its columns in the schema of its prompt."""
    frame = sales()
    first = ask("Sum?", {"sales": frame}, "SELECT sum(v) AS s FROM sales")
    assert first.rows == [(10,)]
    frame["w"] = [100, 200, 300, 400]
    frame.loc[0, "v"] = 11
    second = ask("Sum of w?", {"sales": frame}, "SELECT sum(v) AS s, sum(w) AS t FROM sales")
    assert second.ok, second.message
    assert second.rows == [(20, 1000)]
    schema_text = second.prompts[0][0]["content"]
    assert " w " in schema_text or "w BIGINT" in schema_text
    assert "w BIGINT" not in first.prompts[0][0]["content"]
    third = ask(
        "Sum of w?",
        {"sales": pd.DataFrame({"v": [5]})},
        "SELECT sum(w) AS t FROM sales",
        max_attempts=1,
        fallback=False,
    )
    assert not third.ok and third.attempts[0].category == "column_not_found"


# -- as any connection -------------------------------------------------------------------------


def test_sharing_levels_hold():
    frames = {"customers": customers()}
    shown = ask("Cities?", frames, "SELECT city FROM customers", share="samples")
    hidden = ask("Cities?", frames, "SELECT city FROM customers", share="schema")
    assert "Zanzibar" in json.dumps(shown.prompts)
    assert "Zanzibar" not in json.dumps(hidden.prompts)
    assert hidden.rows == [("Zanzibar",), ("Oslo",)]  # the user still gets the answer


def test_limits_hold():
    big = pd.DataFrame({"x": range(1000)})
    r = ask("All x?", {"big": big}, "SELECT x FROM big", row_limit=7)
    assert r.ok and len(r.rows) == 7 and r.truncated
    slow = ask(
        "Slow?",
        {"big": big},
        "SELECT count(*) FROM range(100000000000) a, big",
        timeout=0.5,
        max_attempts=1,
        fallback=False,
    )
    assert not slow.ok and slow.attempts[0].outcome == "timeout"  # the runner's time limit


def test_the_vote_holds():
    q = "How many a?"
    replies = [
        "SELECT count(*) FROM sales WHERE g = 'a'",
        "SELECT count(*) FROM sales WHERE g = 'a'",
        "SELECT count(*) FROM sales",
        "SELECT count(*) AS n FROM sales WHERE g = 'a'",
    ]
    r = ask(q, {"sales": sales()}, *replies, candidates=4)
    assert r.rows == [(2,)] and r.agreement is not None and r.agreement.votes >= 2


def test_rerun_on_frames():
    frame = sales()
    r = ask("Sum?", {"sales": frame}, "SELECT sum(v) AS s FROM sales")
    frame.loc[0, "v"] = 101
    again = cadet_magic.rerun(r, {"sales": frame})
    assert again.ok and again.rows == [(110,)] and again.model_calls == 0


# -- where DuckDB is missing: a bounded SQLite copy --------------------------------------------


def test_the_sqlite_copy_is_bounded(monkeypatch):
    monkeypatch.setattr("cadet_magic.db.frames.IN_BROWSER", True)
    monkeypatch.setattr("cadet_magic.db.frames.SQLITE_COPY_BYTES", 100)
    with pytest.raises(NoConnectionError) as caught:
        resolve_runner({"big": pd.DataFrame({"x": range(1000)})})
    text = str(caught.value)
    assert "\n" not in text and "MiB" in text and "df.head(n)" in text
    small = resolve_runner({"s": pd.DataFrame({"x": [1]})})
    assert small.dialect == "sqlite"


def test_the_sqlite_copy_leaves_the_frames_alone(monkeypatch):
    monkeypatch.setattr("cadet_magic.db.frames.IN_BROWSER", True)
    frames, before = _frames(), _frames()
    for s in STATEMENTS[:7]:
        q = f"Change: {s['kind']}"
        r = cadet_magic.ask(
            q, con=frames, model=ScriptedModel({q: [sql_reply(s["sql"])]}), candidates=1,
            max_attempts=1, fallback=False,
        )  # fmt: skip
        assert not r.ok or r.rows == [(1,)]
    _unchanged(frames, before)


# -- bad input: one line -----------------------------------------------------------------------

BAD = [
    (lambda: {}, "name at least one DataFrame"),
    (lambda: {"two words": sales()}, "not an identifier"),
    (lambda: {"t": 42}, "con['t'] is an int, not a DataFrame"),
    (lambda: {"t": pd.Series([1])}, "series.to_frame()"),
    (lambda: {"t": polars.DataFrame({"x": [1]}).lazy()}, "frame.collect()"),
]


@pytest.mark.parametrize(("con", "says"), BAD, ids=[b[1] for b in BAD])
def test_bad_frames_say_what_to_do_in_one_line(con, says):
    with pytest.raises(NoConnectionError) as caught:
        resolve_runner(con())
    assert says in str(caught.value) and "\n" not in str(caught.value)


# -- the magic ---------------------------------------------------------------------------------


def test_magic_df_names_notebook_frames(ipython_shell):
    ip = ipython_shell
    ip.user_ns.update(sales=sales(), customers=customers())
    q = "Cities with sales?"
    ip.user_ns["model"] = ScriptedModel(
        {q: [sql_reply("SELECT DISTINCT c.city FROM customers c JOIN sales s ON s.v = c.id")]}
    )
    ip.run_cell_magic("ask", "--model model --candidates 1 --df sales,customers -o out", q)
    r = ip.user_ns["_ask"]
    assert r.ok and sorted(r.rows) == [("Oslo",), ("Zanzibar",)]
    assert list(ip.user_ns["out"].columns) == ["city"]
    assert r.connection == "DataFrames sales, customers (in-memory DuckDB)"


def test_magic_con_holding_a_frame_is_the_table_of_its_name(ipython_shell):
    ip = ipython_shell
    ip.user_ns["orders_df"] = sales()
    q = "How many orders?"
    ip.user_ns["model"] = ScriptedModel({q: [sql_reply("SELECT count(*) AS n FROM orders_df")]})
    ip.run_cell_magic("ask", "--model model --candidates 1 --con orders_df", q)
    assert ip.user_ns["_ask"].rows == [(4,)]


MAGIC_BAD = [
    ("--df nowhere", "--df nowhere: no such variable in the notebook."),
    ("--df number", "--df number: it holds an int, not a DataFrame"),
    ("--df sales --con sales", "--df and --con name two sources"),
    ("--df ,", "--df needs the names of notebook DataFrames"),
]


@pytest.mark.parametrize(("line", "says"), MAGIC_BAD, ids=[m[0] for m in MAGIC_BAD])
def test_magic_bad_df_is_one_line(ipython_shell, line, says):
    ipython_shell.user_ns.update(sales=sales(), number=42)
    text = usage_error(ipython_shell, "ask", line, "How many?")
    assert says in text


def test_magic_frames_too_large_to_copy_is_one_line(ipython_shell, monkeypatch):
    monkeypatch.setattr("cadet_magic.db.frames.IN_BROWSER", True)
    monkeypatch.setattr("cadet_magic.db.frames.SQLITE_COPY_BYTES", 10)
    ipython_shell.user_ns.update(sales=sales(), model=ScriptedModel({"How many?": ["x"]}))
    text = usage_error(ipython_shell, "ask", "--model model --df sales", "How many?")
    assert "copies into SQLite" in text
