"""Generated data folders for the harness's tests: the tiny data set of ``data/tiny.json`` in
Spider's layout (SQLite files), and its scripted replies (stored in advance, not a real model)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
TINY = json.loads((DATA / "tiny.json").read_text())


def make_database(path: Path, statements: list[str]) -> None:
    """A database file from SQL statements (SQLite, or DuckDB for a ``.duckdb`` path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".duckdb":
        import duckdb

        con = duckdb.connect(str(path))
    else:
        con = sqlite3.connect(path)
    try:
        for sql in statements:
            con.execute(sql)
        con.commit()
    finally:
        con.close()


def make_spider(root: Path, questions: list[dict] | None = None) -> Path:
    """The tiny data set in Spider's layout under ``root``: ``dev.json`` and
    ``database/<db_id>/<db_id>.sqlite``."""
    root.mkdir(parents=True, exist_ok=True)
    qs = TINY["questions"] if questions is None else questions
    records = [{k: q[k] for k in ("db_id", "question", "query")} for q in qs]
    (root / "dev.json").write_text(json.dumps(records, indent=1))
    for db_id, statements in TINY["databases"].items():
        make_database(root / "database" / db_id / f"{db_id}.sqlite", statements)
    return root


def scripted_replies(path: Path, questions: list[dict] | None = None) -> Path:
    """The scripted replies of the tiny questions as a ``scripted:PATH`` file."""
    qs = TINY["questions"] if questions is None else questions
    path.write_text(json.dumps({"replies": {q["question"]: q["replies"] for q in qs}}))
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, str]:
    """(the data folder, the scripted model spec)."""
    root = make_spider(tmp_path / "spider")
    spec = f"scripted:{scripted_replies(tmp_path / 'replies.json')}"
    return root, spec
