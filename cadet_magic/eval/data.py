"""Evaluation data: questions with gold SQL and a database per ``db_id``, in Spider's or BIRD's
layout, SQLite or DuckDB files.

A data folder holds a JSON list of questions and the databases:

- **Spider**: ``dev.json`` (``db_id``, ``question``, ``query``) and
  ``database/<db_id>/<db_id>.sqlite``;
- **BIRD**: ``dev.json`` or ``mini_dev_sqlite.json`` (``db_id``, ``question``, ``evidence``,
  ``SQL``) and ``dev_databases/<db_id>/<db_id>.sqlite``; the evidence is added to the question
  the model sees (``question`` then ``Hint: evidence``);
- **DuckDB**: the same with a ``<db_id>.duckdb`` file in place of the SQLite one.

A database may also lie directly in the databases folder (``database/<db_id>.sqlite``).
``--data`` may name the JSON file itself; the databases are then looked for beside it.

A data set is untrusted input: a ``db_id`` must be a plain name (letters, digits, ``_``, ``-``
and ``.``, not first), and the file it names must lie inside the databases folder once links are
resolved, so that no question can open another database of the machine.

Example:
    >>> q = question_of({"db_id": "shop", "question": "How many?", "evidence": "many = count",
    ...                  "SQL": "SELECT 1"}, 0)
    >>> q.question, q.gold
    ('How many? Hint: many = count', 'SELECT 1')
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadet_magic.errors import ConfigurationError

#: Question files looked for in a data folder, in order.
QUESTION_FILES = ("dev.json", "mini_dev_sqlite.json")
#: Folders of databases looked for beside the question file, in order.
DATABASE_FOLDERS = ("database", "dev_databases", "databases")
#: Database file suffixes and the engine each means.
SUFFIXES = {".sqlite": "sqlite", ".db": "sqlite", ".sqlite3": "sqlite", ".duckdb": "duckdb"}
#: What a ``db_id`` may be: a plain folder name.
DB_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path``, its links resolved, lies inside ``folder`` (its links resolved)."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real.startswith(top.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class Question:
    """One evaluation question.

    Attributes:
        index: its position in the question file (stable across runs).
        db_id: the database it is asked of.
        question: the text the model is asked (BIRD: with its evidence).
        gold: the gold SQL.
    """

    index: int
    db_id: str
    question: str
    gold: str

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the question in a results file (resume skips these)."""
        return (self.db_id, self.question, self.gold)


def question_of(record: Any, index: int) -> Question:
    """A :class:`Question` from one JSON record of Spider (``query``) or BIRD (``SQL``,
    ``evidence``); raises ``ValueError`` saying which field is missing."""
    if not isinstance(record, dict):
        raise ValueError(f"question {index} is not a JSON object")
    gold = record.get("query", record.get("SQL"))
    missing = [
        name
        for name, value in (("db_id", record.get("db_id")), ("question", record.get("question")))
        if not isinstance(value, str) or not value.strip()
    ]
    if not isinstance(gold, str) or not gold.strip():
        missing.append("query (Spider) or SQL (BIRD)")
    if missing:
        raise ValueError(f"question {index} lacks {', '.join(missing)}")
    text = " ".join(record["question"].split())
    evidence = record.get("evidence")
    if isinstance(evidence, str) and evidence.strip():
        text = f"{text} Hint: {' '.join(evidence.split())}"
    return Question(index, str(record["db_id"]).strip(), text, str(gold).strip())


@dataclass(frozen=True)
class Dataset:
    """The questions of one data folder and where its databases are."""

    questions_file: Path
    questions: tuple[Question, ...]
    #: Questions that could not be read: (index, why), each reported as one line.
    bad: tuple[tuple[int, str], ...] = ()

    @property
    def root(self) -> Path:
        return self.questions_file.parent

    def database(self, db_id: str) -> tuple[Path, str]:
        """The database file of ``db_id`` and its engine (``sqlite`` or ``duckdb``); raises
        ``LookupError`` with one line when there is none."""
        if not DB_ID.fullmatch(db_id) or ".." in db_id:
            raise LookupError(
                f"db_id {db_id!r} is not a plain folder name (letters, digits, _ - .): refused, "
                "a data set names only databases inside its own folder"
            )
        tried = []
        for folder in DATABASE_FOLDERS:
            base = self.root / folder
            for place in (base / db_id, base):
                for suffix, engine in SUFFIXES.items():
                    path = place / f"{db_id}{suffix}"
                    if path.is_file() and _inside(path, base):
                        return path, engine
            tried.append(f"{folder}/{db_id}/{db_id}.sqlite")
        raise LookupError(
            f"no database for db_id {db_id!r}: expected {' or '.join(tried)} "
            f"(or .duckdb) under {self.root}"
        )

    def available(self) -> set[str]:
        """The db_ids that have a database file."""
        found = set()
        for db_id in {q.db_id for q in self.questions}:
            try:
                self.database(db_id)
            except LookupError:
                continue
            found.add(db_id)
        return found


def find_questions(data: str | Path) -> Path:
    """The question file of a data folder (or ``data`` itself when it is a file)."""
    path = Path(data).expanduser()
    if path.is_file():
        return path
    if not path.exists():
        raise ConfigurationError(f"Data folder not found: {path}.")
    for name in QUESTION_FILES:
        if (path / name).is_file():
            return path / name
    raise ConfigurationError(
        f"No question file in {path}: expected {' or '.join(QUESTION_FILES)} (a JSON list of "
        "questions with db_id, question and query, or BIRD's SQL and evidence)."
    )


def load(data: str | Path) -> Dataset:
    """The :class:`Dataset` of a data folder or question file; one clear line
    (:class:`ConfigurationError`) when the file is missing or not a JSON list."""
    file = find_questions(data)
    try:
        records = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigurationError(f"Cannot read {file}: {e}.") from e
    except json.JSONDecodeError as e:
        raise ConfigurationError(
            f"{file} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})."
        ) from e
    if not isinstance(records, list):
        raise ConfigurationError(f"{file} does not hold a JSON list of questions.")
    questions, bad = [], []
    for i, record in enumerate(records):
        try:
            questions.append(question_of(record, i))
        except ValueError as e:
            bad.append((i, str(e)))
    return Dataset(file, tuple(questions), tuple(bad))


def sample(questions: Sequence[Question], n: int | None, seed: int | None = 0) -> list[Question]:
    """``n`` questions drawn with ``seed``, every database represented (at least one question
    each while ``n`` allows, the rest in proportion to its size), then grouped by database in
    the order the databases first appear (so one database's prompts run one after another,
    which a model server's prompt cache rewards) and by file order within one.

    ``n`` None (or at least the number of questions) keeps them all.

    Example:
        >>> qs = [Question(i, "ab"[i % 2], f"q{i}", "SELECT 1") for i in range(10)]
        >>> [q.index for q in sample(qs, 4, seed=1)]
        [0, 4, 1, 9]
        >>> sorted({q.db_id for q in sample(qs, 2, seed=5)})
        ['a', 'b']
    """
    chosen = list(questions)
    if n is not None and n < len(chosen):
        rng = random.Random(seed)
        by_db: dict[str, list[Question]] = defaultdict(list)
        for q in chosen:
            by_db[q.db_id].append(q)
        dbs = sorted(by_db)
        rng.shuffle(dbs)
        quota = dict.fromkeys(dbs, 0)
        for db in dbs[:n]:  # one each first
            quota[db] = 1
        left = n - sum(quota.values())
        total = len(chosen)
        # the rest by largest remainder of the proportional share
        shares = {db: len(by_db[db]) * n / total for db in dbs}
        extra = {
            db: max(0, min(int(shares[db]) - quota[db], len(by_db[db]) - quota[db])) for db in dbs
        }
        for db in dbs:
            give = min(extra[db], left)
            quota[db] += give
            left -= give
        order = sorted(dbs, key=lambda db: shares[db] - int(shares[db]), reverse=True)
        while left > 0:
            grew = False
            for db in order:
                if left and quota[db] < len(by_db[db]):
                    quota[db] += 1
                    left -= 1
                    grew = True
            if not grew:
                break
        chosen = [q for db in dbs for q in rng.sample(by_db[db], quota[db])]
    first: dict[str, int] = {}
    for q in sorted(chosen, key=lambda q: q.index):
        first.setdefault(q.db_id, q.index)
    return sorted(chosen, key=lambda q: (first[q.db_id], q.index))
