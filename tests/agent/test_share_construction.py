"""The sharing levels hold by construction: below ``samples``, what reaches a prompt, the
provenance and the panel's "Sent to the model" is built from the schema's names and types and
the product's own words, never matched against text the model wrote. Table-driven
(``data/share_construction.json``), real DuckDB and SQLite (and, for the values picking the
engine's words, PostgreSQL, MariaDB and Spark), **scripted** hostile models.

- an answer's columns (the provenance, a follow-up's "Result columns"): a name of the schema, or
  the name the query's own tree gives the column at its position; a ``PIVOT`` (or pandas code)
  naming columns after values shows them as ``(column N)``, whatever literal the text holds;
- types: an ``ENUM``'s labels (nested ones too) are not shown below ``samples``; at ``stats``
  only numeric and date/time columns are ranged (never a ``STRUCT``, ``MAP``, ``UNION``, list or
  ``ENUM``) and only with values that are numbers or dates;
- the fallback's error feedback carries no number derived from the run (its line);
- a name an engine's error quotes (forged by the query to quote a value) reaches the model only
  when the query's tree refers to it, never because a literal of the query holds it;
- nothing of the run's values picks what the model is told: the same failing query on two
  databases that differ only in their values gives the same prompts (a keyword, a column's
  name or a number the values pick, a position they decide).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cadet_magic.api import ask
from tests.agent.test_share_levels import SSNS
from tests.helpers import CountingModel, fake_model, sql_reply

DATA = json.loads((Path(__file__).parent / "data" / "share_construction.json").read_text())
TOKENS = " ".join(f"{i:03d}" for i in range(1000))
#: The first three digits of every stored personal number: what a PIVOT names columns after.
PREFIXES = sorted({s[:3] for s in SSNS})
BELOW = ("schema", "stats")


@pytest.fixture(autouse=True)
def model_writes_the_select(monkeypatch):
    """These cases' fallbacks are the model's own SELECT and code (the product's SELECT and
    what its prompt shows at each level: test_fallback_fetch.py)."""
    from cadet_magic.agent import fallback_phase

    monkeypatch.setattr(fallback_phase, "PRODUCT_SELECT", False)


def people(engine: str):
    from tests.helpers import connect_with

    return connect_with(
        engine,
        ["CREATE TABLE people (name TEXT, ssn TEXT)"]
        + [f"INSERT INTO people VALUES ('p{i}', '{s}')" for i, s in enumerate(SSNS)],
    )


def in_process(code, df, **limits):
    """The fallback's code run in this process (the product's own JupyterLite path)."""
    from cadet_magic.fallback.in_process import run_code

    return run_code(code, df, timeout=limits.get("timeout", 10))


def _answer(case, con, share):
    """The case's answer at ``share``: its SQL, or a fallback after three failing queries."""
    if "sql" in case:
        replies = [sql_reply(case["sql"].replace("{tokens}", TOKENS))]
        fallback = False
    else:
        code = case["code"].replace("{tokens}", TOKENS)
        block = f"```sql\n{case['select']}\n```\n```python\n{code}\n```"
        replies = [sql_reply(f"SELECT nope{i} FROM people") for i in range(3)] + [block]
        fallback = True
    model = CountingModel(fake_model(*replies))
    r = ask("Who is there?", con=con, model=model, share=share, candidates=1,
            fallback=fallback, code_runner=in_process)  # fmt: skip
    assert r.ok, [a.error for a in r.all_attempts]
    assert (r.answered_by == "fallback") is fallback
    return r


def _follow_up_columns(con, first, share) -> list[str]:
    """The "Result columns" line of the prompt of a question following ``first``."""
    model = CountingModel(fake_model(sql_reply("SELECT count(*) AS n FROM people")))
    r = ask("And how many?", con=con, model=model, share=share, candidates=1, follow=first)
    line = re.search(r"Result columns: (.*)", json.loads(json.dumps(r.prompts))[0][-1]["content"])
    assert line, r.prompts
    return line.group(1).split(", ")


@pytest.mark.parametrize("share", [*BELOW, "samples"])
@pytest.mark.parametrize("case", DATA["columns"], ids=[c["id"] for c in DATA["columns"]])
def test_an_answers_columns_are_shown_by_the_products_own_names(case, share):
    con = people(case["engine"])
    r = _answer(case, con, share)
    recorded = r.provenance["columns"]
    followed = _follow_up_columns(con, r, share)
    names = [str(c) for c in r.columns]
    if share == "samples":
        assert recorded == names and followed == names
        if case.get("values"):  # the positive control: the engine named columns after data
            assert set(PREFIXES) & set(names)
        return
    assert recorded == followed
    shown = case["shown"]
    written = {shown.split(":", 1)[1]} if isinstance(shown, str) else set(shown or [])
    assert not (set(PREFIXES) & set(recorded)) - written  # only the names the text wrote
    numbered = [f"(column {i})" for i in range(1, len(names) + 1)]
    if shown is None:
        assert recorded == numbered
    elif isinstance(shown, str):  # "last:NAME": only the written last column
        assert recorded == numbered[:-1] + [shown.split(":", 1)[1]]
    else:
        assert recorded == shown


TYPES = DATA["types"]["cases"]


def _secrets(text: str) -> set[str]:
    return set(re.findall(r"SECRET-\d", text))


def _typed(case, request):
    """A connection to the case's tables (MariaDB: a fresh database of the session's server)."""
    from tests.helpers import connect_with

    if case["engine"] != "mysql":
        return connect_with(case["engine"], case["setup"])
    import sqlalchemy as sa

    engine = sa.create_engine(request.getfixturevalue("mysql_url"))
    with engine.begin() as c:
        for statement in case["setup"]:
            c.execute(sa.text(statement))
    request.addfinalizer(engine.dispose)
    con = engine.connect()
    request.addfinalizer(con.close)
    return con


def _type_params():
    for case in TYPES:
        marks = [pytest.mark.mysql] if case["engine"] == "mysql" else []
        for share in (*BELOW, "samples"):
            yield pytest.param(case, share, id=f"{case['id']}-{share}", marks=marks)


@pytest.mark.parametrize(("case", "share"), list(_type_params()))
def test_types_and_nested_values_reach_no_prompt_below_samples(case, share, request):
    con = _typed(case, request)
    table = next(s.split()[2] for s in case["setup"] if s.startswith("CREATE TABLE"))
    model = CountingModel(fake_model(sql_reply(f"SELECT count(*) AS n FROM {table}")))
    r = ask("How many?", con=con, model=model, share=share, candidates=1)
    assert r.ok
    sent = json.dumps(r.prompts) + json.dumps(r.provenance)
    if share == "samples":
        assert _secrets(sent)  # the positive control: samples and types show them
        return
    assert not _secrets(sent), sorted(_secrets(sent))
    prompt = "\n".join(m["content"] for m in r.prompts[0])
    ranged = re.findall(r"^\s*(\w+) .*-- range ", prompt, re.MULTILINE)
    assert sorted(ranged) == (sorted(case["ranged"]) if share == "stats" else []), prompt


def test_the_fallbacks_error_line_reaches_no_prompt_below_samples():
    lines = DATA["lines"]
    block = f"```sql\n{lines['select']}\n```\n```python\n{lines['code']}\n```"
    for share in [*BELOW, "samples"]:
        con = people("duckdb")
        replies = [sql_reply(f"SELECT nope{i} FROM people") for i in range(3)] + [block] * 3
        r = ask("Who is first?", con=con, model=CountingModel(fake_model(*replies)),
                share=share, candidates=1, code_runner=in_process)  # fmt: skip
        failed = [a for a in r.all_attempts if a.phase == "fallback"]
        assert failed and all(a.outcome == "error" for a in failed)
        line = int(SSNS[0][:3]) + 2  # the lambda called: fs[0] is on line 2
        assert f"line {line}" in (failed[0].error or "")  # the user sees it
        fed = [a.feedback or "" for a in failed] + [json.dumps(p) for p in r.prompts[3:]]
        if share == "samples":
            assert any(f"line {line}" in f for f in fed)
        else:
            assert not any(re.search(r"\bline \d", f) for f in fed), fed[0]


QUOTED = DATA["quoted"]["cases"]


def _engine_marks(engine: str) -> list:
    return {"postgres": [pytest.mark.postgres], "mysql": [pytest.mark.mysql]}.get(engine, [])


@pytest.mark.parametrize("feedback", ["targeted", "raw"])
@pytest.mark.parametrize("share", [*BELOW, "samples"])
@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c["id"], marks=_engine_marks(c["engine"])) for c in QUOTED]
)
def test_a_name_an_error_quotes_is_shared_only_when_the_tree_refers_to_it(
    case, share, feedback, request
):
    from tests.agent.test_share_levels import _people

    con = _people(case["engine"], request)
    sql = case["sql"].replace("{guesses}", " ".join(SSNS))
    model = CountingModel(fake_model(*[sql_reply(sql)] * 2))
    r = ask("Who?", con=con, model=model, share=share, candidates=1, max_attempts=2,
            fallback=False, feedback=feedback)  # fmt: skip
    first = min(SSNS)
    assert first in (r.attempts[0].error or ""), r.attempts[0].error  # the engine quoted it
    # what the model was told, its own SQL (holding every guess) left out
    told = [m["content"].replace(sql, "") for p in r.prompts[1:] for m in p]
    fed = [(a.feedback or "").replace(sql, "") for a in r.all_attempts] + told
    if share == "samples":
        assert any(first in f for f in fed)  # the positive control
    else:
        assert not any(first in f for f in fed), [f for f in fed if first in f][0][-600:]


DIFFERENTIAL = DATA["differential"]["cases"]
#: Other personal numbers, in the same number of rows: each digit the queries read differs.
OTHERS = [f"{n}-45-{6700 + n:04d}" for n in range(311, 331)]


def _differential_params():
    for case in DIFFERENTIAL:
        engines = (
            ("spark_classic", "spark_connect") if case["engine"] == "spark" else (case["engine"],)
        )
        for engine in engines:
            for share in (*BELOW, "samples"):
                for feedback in ("targeted",) if "spark" in engine else ("targeted", "raw"):
                    yield pytest.param(
                        {**case, "connect": engine},
                        share,
                        feedback,
                        id=f"{case['id']}-{engine}-{share}-{feedback}",
                        marks=[pytest.mark.spark] if "spark" in engine else _engine_marks(engine),
                    )


@pytest.mark.parametrize(("case", "share", "feedback"), list(_differential_params()))
def test_no_prompt_depends_on_the_stored_values_below_samples(case, share, feedback, request):
    """The same failing query on two databases that differ only in their values: below
    ``samples`` every prompt is the same (what the error said about the values, a keyword or
    a name they picked, a position or a number they decided: none of it is sent)."""
    from tests.agent.test_share_levels import _people

    told = []
    for ssns in (SSNS, OTHERS):
        model = CountingModel(fake_model(*[sql_reply(case["sql"])] * 2))
        r = ask("Who?", con=_people(case["connect"], request, ssns), model=model, share=share,
                candidates=1, max_attempts=2, fallback=False, feedback=feedback)  # fmt: skip
        assert r.attempts[0].outcome == "error", r.attempts[0]
        told.append(r.prompts)
    if share == "samples":  # the positive control: the engine's words differ
        assert told[0][1][-1] != told[1][1][-1]
    else:
        assert told[0] == told[1], [m["content"][-400:] for m in told[0][1][-1:]]
