"""What the model sees is what the user chose: below ``samples``, no stored value reaches a prompt
(``AskResult.prompts``), the provenance or the panel's "Sent to the model", whatever the engine
echoes in its errors. Table-driven (``share_echo_cases.json``) on every engine (real SQLite,
DuckDB, a throwaway PostgreSQL cluster, MariaDB, Spark classic and Connect), with a **scripted**
hostile model (the attacker's choice of replies) whose queries make the engine quote the values
in the words the diagnosis reads, then a fallback whose pandas error quotes them too; with
targeted feedback and with the raw mode (the error text as feedback). At
``samples`` the same queries do reach the model with the values (the positive control: each
case really echoes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.api import ask
from cadet_magic.display.answer_context import prompts_html, prompts_text
from tests.helpers import CountingModel, fake_model, sql_reply

DATA = json.loads((Path(__file__).parent / "share_echo_cases.json").read_text())
CASES = DATA["cases"]
#: The stored values (a column of personal numbers).
SSNS = [f"{n}-45-{6700 + n:04d}" for n in range(201, 221)]
#: The fallback's pandas code: its error quotes the first value.
FALLBACK = "```sql\nSELECT ssn FROM people\n```\n```python\nresult = df['ssn'].astype(int)\n```"


def _people(engine: str, request, ssns: list[str] | None = None) -> object:
    """A connection to a database whose ``people`` table holds :data:`SSNS` (or ``ssns``; a
    server's table made again)."""
    rows = [(f"p{i}", s) for i, s in enumerate(SSNS if ssns is None else ssns)]
    if engine == "sqlite":
        import sqlite3

        con = sqlite3.connect(":memory:")
        con.execute("CREATE TABLE people (name TEXT, ssn TEXT)")
        con.executemany("INSERT INTO people VALUES (?, ?)", rows)
        con.commit()
        return con
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("CREATE TABLE people (name VARCHAR, ssn VARCHAR)")
        con.executemany("INSERT INTO people VALUES (?, ?)", rows)
        return con
    if engine in ("postgres", "mysql"):
        import sqlalchemy as sa

        url = request.getfixturevalue("pg_url" if engine == "postgres" else "mysql_url")
        eng = sa.create_engine(url)
        with eng.begin() as c:
            c.execute(sa.text("DROP TABLE IF EXISTS people"))
            c.execute(sa.text("CREATE TABLE people (name varchar(20), ssn varchar(20))"))
            c.execute(
                sa.text("INSERT INTO people VALUES (:n, :s)"), [{"n": n, "s": s} for n, s in rows]
            )
        request.addfinalizer(eng.dispose)
        con = eng.connect()
        request.addfinalizer(con.close)
        return con
    spark = request.getfixturevalue(engine)
    spark.sql("DROP TABLE IF EXISTS people")
    spark.createDataFrame(rows, "name string, ssn string").write.saveAsTable("people")
    return spark


def everything_sent(r) -> str:
    """Every prompt, the provenance and the panel's "Sent to the model" (text and HTML)."""
    return "\n".join(
        [json.dumps(r.prompts), json.dumps(r.provenance), prompts_text(r.prompts), prompts_html(r)]
    )


def _params():
    for case in CASES:
        marks = [pytest.mark.spark] if case["engine"] == "spark" else []
        where = ("classic", "connect") if case["engine"] == "spark" else ("",)
        for mode in where:
            engine = f"spark_{mode}" if mode else case["engine"]
            modes = ("targeted",) if mode else ("targeted", "raw")  # (Spark: the slowest)
            for feedback in modes:
                for share in ("schema", "stats", "samples"):
                    yield pytest.param(
                        {**case, "connect": engine, "feedback": feedback},
                        share,
                        id=f"{engine}-{case['kind']}-{feedback}-{share}",
                        marks=marks,
                    )


@pytest.mark.parametrize(("case", "share"), list(_params()))
def test_a_value_echoing_error_reaches_no_prompt_below_samples(case, share, request):
    engine = case["engine"]
    con = _people(case["connect"], request)
    sql = case["sql"].replace("{vals}", DATA["aggregate"][engine])
    sql = sql.replace("{first}", DATA["first"].get(engine, ""))
    model = CountingModel(fake_model(*[sql_reply(sql)] * 3, FALLBACK, FALLBACK, FALLBACK))
    r = ask(
        "Who are they?",
        con=con,
        model=model,
        share=share,
        max_attempts=3,
        feedback=case["feedback"],
    )
    echoed = " ".join(a.error or "" for a in r.attempts)
    assert any(s in echoed for s in SSNS), f"the engine did not echo: {echoed[:300]}"
    sent = everything_sent(r)
    leaked = [s for s in SSNS if s in sent]
    if share == "samples":
        assert leaked  # the positive control: at samples the engine's words are shared
    else:
        assert not leaked, (share, [(a.category, a.feedback) for a in r.all_attempts])
