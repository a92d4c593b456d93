"""The first-prompt experiment's program (not its figures): a variant's first attempt is the
product's own request, the tuning set never holds a question of the fixed sample, and the shop's
questions run; the model is the scripted OpenAI-compatible fake."""

from __future__ import annotations

import sqlite3

import pytest
from fake_openai import FakeOpenAI

from benchmarks import peer_runs, prompt_tuning
from cadet_magic.eval.data import Question


@pytest.fixture
def spider(tmp_path):
    folder = tmp_path / "concert"
    folder.mkdir()
    con = sqlite3.connect(folder / "concert.sqlite")
    con.executescript(
        "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);"
        "INSERT INTO singer VALUES (1, 'Joe', 'France'), (2, 'Ann', 'Peru'), (3, 'Bo', NULL);"
    )
    con.commit()
    con.close()
    q = Question(0, "concert", "How many singers are there?", "SELECT count(*) FROM singer")
    return {"concert": (folder / "concert.sqlite", "sqlite")}, q


def run_variant(variant, spider, tmp_path, reply="SELECT count(*) FROM singer"):
    where, q = spider
    with FakeOpenAI([reply]) as srv:
        prompt_tuning.run_questions(
            "t", [q], where, [variant], srv.base_url, tmp_path / "replies.jsonl", out_dir=tmp_path
        )
        request = srv.requests[0]
    return peer_runs.read_lines(prompt_tuning.results_path("t", variant, tmp_path))[q.key], request


def test_the_chosen_variant_sends_the_products_first_request(spider, tmp_path):
    from cadet_magic import ask
    from cadet_magic.agent.prompts import PLACE
    from cadet_magic.llm import load_model
    from cadet_magic.options import AskOptions
    from cadet_magic.schema.render import REPRESENTATION

    chosen = prompt_tuning.VARIANTS[prompt_tuning.CHOSEN]
    assert (chosen.representation, chosen.place) == (REPRESENTATION, PLACE)
    line, request = run_variant(prompt_tuning.CHOSEN, spider, tmp_path)
    assert (line.match, line.calls) == (True, 1)
    where, q = spider
    with FakeOpenAI(["SELECT count(*) FROM singer"]) as srv:
        model = load_model("openai:qwen", base_url=srv.base_url, api_key="local", temperature=0.0)
        con = sqlite3.connect(where["concert"][0])
        ask(q.question, con=con, options=AskOptions(model=model, max_attempts=1, fallback=False))
        con.close()
        product = srv.requests[0]
    assert request == product


def test_on_duckdb_the_chosen_variant_sends_the_products_request_without_comments(tmp_path):
    import duckdb

    from cadet_magic import ask
    from cadet_magic.llm import load_model
    from cadet_magic.options import AskOptions

    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE shops (id INTEGER PRIMARY KEY, city VARCHAR);"
        "COMMENT ON TABLE shops IS 'the secret plan'; COMMENT ON COLUMN shops.city IS 'where';"
        "INSERT INTO shops VALUES (1, 'Lyon'), (2, 'Nantes');"
    )
    con.close()
    q = Question(0, "shop", "How many shops?", "SELECT count(*) FROM shops")
    line, request = run_variant(
        prompt_tuning.CHOSEN,
        ({"shop": (path, "duckdb")}, q),
        tmp_path,
        "SELECT count(*) FROM shops",
    )
    system = request["messages"][0]["content"]
    assert line.match and "CREATE TABLE shops(id INTEGER PRIMARY KEY" in system
    assert "1\tLyon" in system and "secret plan" not in system and "where" not in system
    with FakeOpenAI(["SELECT count(*) FROM shops"]) as srv:
        model = load_model("openai:qwen", base_url=srv.base_url, api_key="local", temperature=0.0)
        con = duckdb.connect(str(path), read_only=True)
        ask(q.question, con=con, options=AskOptions(model=model, max_attempts=1, fallback=False))
        con.close()
        assert srv.requests[0] == request


@pytest.mark.parametrize(
    ("variant", "seen", "unseen"),
    [
        (
            "create-rows",
            ["CREATE TABLE singer (", "/* 3 rows of singer:", "2\tAnn\tPeru"],
            ["e.g."],
        ),
        ("engine-rows", ["CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT"], []),
        ("create-none", ["CREATE TABLE singer ("], ["rows of", "e.g."]),
    ],
)
def test_variants_write_the_schema_their_way(spider, tmp_path, variant, seen, unseen):
    line, request = run_variant(variant, spider, tmp_path)
    system = request["messages"][0]["content"]
    assert all(s in system for s in seen) and not any(s in system for s in unseen)
    assert "<schema>" in system and line.match


def test_the_user_place_sends_one_user_message(spider, tmp_path):
    _, request = run_variant("create-rows-user", spider, tmp_path)
    [message] = request["messages"]
    assert message["role"] == "user" and message["content"].index("<schema>") < message[
        "content"
    ].index("Question: How many singers")


def test_the_tuning_set_is_outside_the_fixed_sample(shared_data, monkeypatch):
    from benchmarks.eval import N_QUESTIONS, SEED, questions

    monkeypatch.setenv("CADET_DATA", str(shared_data))
    fixed = {q.key for q in questions(N_QUESTIONS, SEED)[1]}
    tuning = prompt_tuning.tuning_questions()
    assert len(tuning) == prompt_tuning.TUNING_N and not fixed & {q.key for q in tuning}
    assert {q.db_id for q in tuning} <= {db for db, _, _ in fixed}


def test_the_shop_questions_run_on_the_shop(tmp_path, monkeypatch):
    monkeypatch.setattr(prompt_tuning, "SHOP_DB", tmp_path / "shop.duckdb")
    dbs = peer_runs.Databases({"shop": (prompt_tuning.shop_database(), "duckdb")})
    try:
        for q in prompt_tuning.shop_questions():
            rows, why = dbs.gold(q)
            assert why is None and rows, q.question
    finally:
        dbs.close()


def test_the_variants_are_paired_against_the_baseline_on_the_same_questions():
    from benchmarks.prompt_report import variant_table

    keys = [("db", f"q{i}", "SELECT 1") for i in range(4)]

    def lines(right, tokens):
        return {
            k: peer_runs.Line(*k, match=r, ran=True, input_tokens=tokens, seconds=1.0)
            for k, r in zip(keys, right, strict=True)
        }

    text = variant_table(
        {"compact": lines([1, 0, 0, 1], 300), "create-rows": lines([1, 1, 1, 0], 500)},
        keys,
        "compact",
    )
    assert "| `compact` | 2/4 (50.0%" in text and "(baseline)" in text
    assert "| `create-rows` | 3/4 (75.0%" in text and "+25.0 [" in text and "+2/-1" in text
    assert "| 500 |" in text  # its prompt tokens
