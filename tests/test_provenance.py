"""AskResult.provenance: plain JSON, no credentials, fingerprints that follow the schema."""

from __future__ import annotations

import json
import sqlite3

import pytest

from cadet_magic import provenance
from cadet_magic.agent.run import run_agent
from cadet_magic.db.sqlite import SQLiteRunner
from cadet_magic.llm import ScriptedModel

URLS = [
    ("postgresql://ann:s3cret@db.example.com:5432/shop", "postgresql://db.example.com:5432/shop"),
    (
        "mysql+pymysql://root@localhost/shop?charset=utf8mb4&password=x",
        "mysql+pymysql://localhost/shop?charset=utf8mb4",
    ),
    ("snowflake://u:p@acct/db?token=abc&warehouse=w", "snowflake://acct/db?warehouse=w"),
    ("postgresql://ann:***@db/shop", "postgresql://db/shop"),
    ("sqlite3", "sqlite3"),
    ("mysql (PyMySQL) analyst@db.example.com/shop", "mysql (PyMySQL) db.example.com/shop"),
]


@pytest.mark.parametrize(("label", "public"), URLS)
def test_public_url_drops_credentials(label, public):
    assert provenance.public_url(label) == public


def run(con, label, question="How many rows?", sql="SELECT count(*) AS n FROM t"):
    model = ScriptedModel({question: [f"```sql\n{sql}\n```"]})
    return run_agent(question, model=model, runner=SQLiteRunner(con, label=label))


def test_the_record_holds_no_credentials_and_no_rows():
    con = sqlite3.connect(":memory:")
    con.executescript(
        "CREATE TABLE t (x INTEGER, secret_value TEXT);INSERT INTO t VALUES (1, 'row-data-xyz');"
    )
    r = run(con, "postgresql://ann:s3cret@db.example.com/shop", sql="SELECT x, secret_value FROM t")
    text = json.dumps(r.provenance)
    assert r.ok and "s3cret" not in text and "ann" not in text and "row-data-xyz" not in text
    assert json.loads(text) == r.provenance  # plain JSON values
    assert r.provenance["database"]["url"] == "postgresql://db.example.com/shop"
    assert r.provenance["rows"] == 1 and r.provenance["columns"] == ["x", "secret_value"]
    assert r.provenance["attempts"][0]["category"] is None
    assert r.provenance["version"] and r.provenance["engine"] == "sqlite"


def test_fingerprints_follow_the_schema_not_the_data():
    con = sqlite3.connect(":memory:")
    con.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
    first = run(con, "sqlite3").provenance["database"]
    con.execute("INSERT INTO t VALUES (2)")
    assert run(con, "sqlite3").provenance["database"] == first  # data changed: same
    con.execute("ALTER TABLE t ADD COLUMN y TEXT")
    changed = run(con, "sqlite3").provenance["database"]
    assert changed["schema_fingerprint"] != first["schema_fingerprint"]
    assert changed["fingerprint"] == first["fingerprint"]  # the same database (same tables)
