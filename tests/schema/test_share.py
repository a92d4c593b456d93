"""AskMagic.share: what of the database the model sees, at each level, on real DuckDB with a
scripted model that records every prompt."""

from __future__ import annotations

import duckdb
import pytest

import cadet_magic
from tests.helpers import CountingModel, fake_model, sql_reply

SETUP = (
    "CREATE TABLE shops (id INTEGER PRIMARY KEY, city VARCHAR, opened DATE, staff INTEGER);"
    "COMMENT ON TABLE shops IS 'written by someone: the secret plan';"
    "INSERT INTO shops VALUES (1, 'Lyon', DATE '2020-01-02', 4), (2, 'Nantes', "
    "DATE '2023-05-06', 9), (3, 'Lyon', DATE '2021-03-04', 2);"
)


def con():
    c = duckdb.connect()
    c.execute(SETUP)
    return c


def prompts(share, *replies, **options):
    model = CountingModel(fake_model(*(sql_reply(r) for r in replies)))
    r = cadet_magic.ask("Staff per city?", con=con(), model=model, share=share, **options)
    return r, ["\n".join(text for _, text in m) for m in model.prompts]


@pytest.mark.parametrize(
    ("share", "seen", "unseen"),
    [
        (
            "schema",
            ["CREATE TABLE shops (", "city VARCHAR", "staff INTEGER", "id INTEGER PRIMARY KEY"],
            ["Lyon", "Nantes", "secret plan", "rows", "range"],
        ),
        (
            "stats",
            ["3 rows", "range 1 .. 3", "range 2 .. 9", "range 2020-01-02 .. 2023-05-06"],
            ["Lyon", "Nantes", "secret plan"],
        ),
        # the engine's own statement and three rows; the catalog's comments are left out
        # (schema.render.REPRESENTATION: the form chosen by measurement shows none)
        (
            "samples",
            ["CREATE TABLE shops(id INTEGER PRIMARY KEY", "1\tLyon\t"],
            ["secret plan", "range"],
        ),
    ],
)
def test_the_schema_the_model_sees(share, seen, unseen):
    r, sent = prompts(share, "SELECT city, sum(staff) AS n FROM shops GROUP BY city")
    assert r.ok and r.provenance["share"] == share and len(sent) == 1
    for text in seen:
        assert text in sent[0], (share, text)
    for text in unseen:
        assert text not in sent[0], (share, text)
    assert r.prompts[0][0]["role"] == "system" and r.prompts[0][1]["role"] == "human"
    assert "<schema>" in r.prompts[0][0]["content"]  # the database's text is fenced as data


@pytest.mark.parametrize("feedback", ["targeted", "raw"])
@pytest.mark.parametrize("share", ["schema", "stats"])
def test_an_engine_error_quoting_a_value_is_cut_to_its_category(share, feedback):
    bad = "SELECT CAST(city AS INTEGER) AS n FROM shops"
    r, sent = prompts(share, bad, "SELECT count(*) AS n FROM shops", feedback=feedback)
    assert len(sent) == 2 and "Lyon" in (r.attempts[0].error or "")  # the user sees it
    retry = sent[1]
    assert "Lyon" not in retry and "Nantes" not in retry
    assert f"not shared at share={share}" in retry


def test_at_samples_the_error_text_goes_to_the_model():
    bad = "SELECT CAST(city AS INTEGER) AS n FROM shops"
    r, sent = prompts("samples", bad, "SELECT count(*) AS n FROM shops")
    model = r.prompts[1]  # the retry: the feedback turn comes last
    assert model[-1]["role"] == "human" and "Lyon" in model[-1]["content"]


def test_a_bad_level_is_one_line():
    with pytest.raises(cadet_magic.errors.ConfigurationError, match="share must be one of"):
        cadet_magic.ask("x?", con=con(), model=fake_model(), share="everything")
