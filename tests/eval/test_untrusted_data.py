"""A data set is untrusted input: its gold SQL passes the same safety check and read-only runner
as a model's (a refused gold query is reported, never run), its ``db_id`` names only a database
inside its own folder, and the error texts written to the results file (which users publish)
are cut to their category and first line. Real SQLite and DuckDB files, a **scripted** model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.eval import evaluate
from tests.eval.conftest import make_database
from tests.helpers import sql_reply

SECRET = "BEGIN-PRIVATE-KEY-abc123"


def data_set(root: Path, engine: str, statements: list[str], questions: list[dict]) -> Path:
    """A Spider-layout folder with one database ``db`` (``engine``: sqlite or duckdb)."""
    suffix = ".duckdb" if engine == "duckdb" else ".sqlite"
    make_database(root / "database" / "db" / f"db{suffix}", statements)
    records = [
        {"db_id": q.get("db_id", "db"), "question": q["question"], "query": q["query"]}
        for q in questions
    ]
    (root / "dev.json").write_text(json.dumps(records))
    return root


def evaluated(root: Path, tmp_path: Path, questions: list[dict]) -> tuple[list[dict], str]:
    replies = {q["question"]: q.get("replies", [sql_reply("SELECT 1")]) for q in questions}
    spec = tmp_path / "replies.json"
    spec.write_text(json.dumps({"replies": replies}))
    out = tmp_path / "results.jsonl"
    evaluate(root, f"scripted:{spec}", out=out, progress=None, print_summary=False)
    text = out.read_text()
    return [json.loads(x) for x in text.splitlines()], text


@pytest.fixture
def secret(tmp_path) -> Path:
    """A private file of the machine, outside the data set."""
    path = tmp_path / "home" / ".ssh" / "id_ed25519"
    path.parent.mkdir(parents=True)
    path.write_text(f"{SECRET}\nsecond line of the key\n")
    return path


def test_a_gold_query_the_check_refuses_is_reported_never_run(tmp_path, secret):
    questions = [
        {"question": "Keys?", "query": f"SELECT * FROM read_text('{secret}')"},
        {"question": "Glob?", "query": f"SELECT count(*) FROM glob('{secret.parent}/*')"},
        {"question": "Drop?", "query": "DROP TABLE t"},
        {"question": "Rows?", "query": "SELECT count(*) FROM t"},
    ]
    root = data_set(tmp_path / "d", "duckdb", ["CREATE TABLE t (a INTEGER)"], questions)
    recs, text = evaluated(root, tmp_path, questions)
    errors = {r["question"]: r["error"] for r in recs}
    for q in ("Keys?", "Glob?", "Drop?"):
        assert errors[q].startswith("gold query refused by the safety check: "), errors[q]
        assert "\n" not in errors[q]
    assert errors["Rows?"] is None
    assert SECRET not in text and "id_ed25519" not in "".join(str(e) for e in errors.values())


def test_a_view_in_a_shipped_duckdb_file_cannot_read_a_file(tmp_path, secret):
    """The view's file read runs on neither the gold nor the model's side: the data set's
    DuckDB file is opened with external access off."""
    questions = [
        {
            "question": "Notes?",
            "query": "SELECT CAST(note AS INTEGER) FROM notes",
            "replies": [sql_reply("SELECT CAST(note AS INTEGER) AS n FROM notes")],
        },
        {
            "question": "Notes as they are?",
            "query": "SELECT 1",
            "replies": [sql_reply("SELECT note FROM notes")],
        },
    ]
    statements = [f"CREATE VIEW notes AS SELECT content AS note FROM read_text('{secret}')"]
    root = data_set(tmp_path / "d", "duckdb", statements, questions)
    recs, text = evaluated(root, tmp_path, questions)
    assert SECRET not in text
    assert recs[0]["error"].startswith("gold query failed: ")
    assert recs[1]["error"] is None and recs[1]["final_match"] is False


def test_error_texts_in_the_results_are_their_category_and_first_line(tmp_path):
    value = "first\nsecond line of a private value"
    questions = [
        {
            "question": "As numbers?",
            "query": "SELECT CAST(name AS INTEGER) FROM people",
            "replies": [sql_reply("SELECT CAST(name AS INTEGER) AS n FROM people")] * 3,
        }
    ]
    statements = ["CREATE TABLE people (name VARCHAR)", f"INSERT INTO people VALUES ('{value}')"]
    root = data_set(tmp_path / "d", "duckdb", statements, questions)
    (rec,), text = evaluated(root, tmp_path, questions)
    assert rec["error"].startswith("gold query failed: ") and "\n" not in rec["error"]
    assert "second line of a private value" not in text


#: db_ids that name something outside the data set's folder: each is one line, never opened.
#: (``{tmp}``: the test's folder; the data set is ``{tmp}/d``, another database ``{tmp}/other/db``.)
OUTSIDE = ["{tmp}/other/db", "../../other/db", "..", "db/../../../other/db", ".hidden", "a b"]


@pytest.mark.parametrize("db_id", OUTSIDE)
def test_a_db_id_names_only_a_database_inside_the_data_folder(tmp_path, db_id):
    other = tmp_path / "other" / "db.sqlite"
    make_database(other, ["CREATE TABLE private (secret TEXT)", "INSERT INTO private VALUES ('x')"])
    db_id = db_id.format(tmp=tmp_path)
    questions = [{"db_id": db_id, "question": "Secrets?", "query": "SELECT * FROM private"}]
    root = data_set(tmp_path / "d", "sqlite", ["CREATE TABLE t (a INTEGER)"], questions)
    (rec,), _ = evaluated(root, tmp_path, questions)
    assert rec["error"] and "\n" not in rec["error"] and rec["calls"] == 0
    assert rec["final_sql"] is None


def test_a_db_id_folder_linked_outside_is_not_followed(tmp_path):
    outside = tmp_path / "elsewhere" / "linked"
    make_database(outside / "linked.sqlite", ["CREATE TABLE private (secret TEXT)"])
    questions = [{"db_id": "linked", "question": "Secrets?", "query": "SELECT * FROM private"}]
    root = data_set(tmp_path / "d", "sqlite", ["CREATE TABLE t (a INTEGER)"], questions)
    (root / "database" / "linked").symlink_to(outside)
    (rec,), _ = evaluated(root, tmp_path, questions)
    assert rec["error"].startswith("no database for db_id 'linked'")
