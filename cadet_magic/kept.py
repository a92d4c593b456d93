"""Answers the user approved (``%cadet keep``), stored as plain JSON lines, and the few most
similar ones put into the prompt as examples (standard library and the SQL check only).

The file (``AskMagic.examples_path``, default ``.cadet/examples.jsonl`` beside the notebook)
holds one kept pair per line: ``{"question", "sql", "database", "dialect", "kept"}``, where
``database`` is the database fingerprint (:func:`cadet_magic.provenance.database_fingerprint`):
a question only gets the pairs kept on the same database. Keeping appends a line and never
rewrites the file, so a line this version cannot read is skipped with one warning and stays.

Selection: words of the new question against words of each kept question (Jaccard overlap,
lexical only), the best :data:`MAX_EXAMPLES` with any overlap, within :data:`BUDGET` characters
of prompt; a selected pair whose SQL no longer passes the safety check on today's schema is
dropped with a note.

Example:
    >>> round(similarity("orders per status in 2025", "How many orders per status?"), 2)
    0.67
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadet_magic.conversation import fence
from cadet_magic.errors import ConfigurationError
from cadet_magic.provenance import database_fingerprint, public_url

log = logging.getLogger("cadet_magic")

#: Kept pairs put into one prompt at most.
MAX_EXAMPLES = 3
#: Characters of kept examples in one prompt at most (questions and SQL).
BUDGET = 1500

_WORD = re.compile(r"[a-z0-9_]+")
#: Words too common in questions to say two questions are alike.
_STOP = frozenset(
    "a an and are as at by did do does for from had has have how i in is it many me much of "
    "on or per show than that the their them there these this those to was were what when "
    "where which who whose with".split()
)


def words(text: str) -> set[str]:
    """The question's content words, lowercased.

    Example:
        >>> sorted(words("How many orders per status?"))
        ['orders', 'status']
    """
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of the content words of two questions (0 to 1)."""
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


@dataclass
class ExampleFile:
    """The readable pairs of a kept-examples file and the lines it could not read."""

    path: Path
    pairs: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)

    def warning(self) -> str | None:
        """One line naming the lines that were skipped (None when every line was read)."""
        if not self.bad_lines:
            return None
        shown = ", ".join(str(n) for n in self.bad_lines[:5])
        more = "" if len(self.bad_lines) <= 5 else f" and {len(self.bad_lines) - 5} more"
        return (
            f"{self.path}: {len(self.bad_lines)} line(s) are not kept answers and were skipped "
            f"(line {shown}{more}); they stay in the file as they are. Fix or delete them "
            "to silence this."
        )


def read_examples(path: str | Path) -> ExampleFile:
    """The kept pairs of ``path`` (no file: none); bad lines are listed, never lost."""
    found = ExampleFile(Path(path))
    try:
        text = found.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return found
    except (OSError, UnicodeDecodeError) as e:
        found.bad_lines.append(0)
        log.warning("%s could not be read (%s): no kept examples this time.", path, e)
        return found
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            pair = json.loads(line)
        except ValueError:
            pair = None
        ok = isinstance(pair, dict) and all(
            isinstance(pair.get(k), str) and pair.get(k) for k in ("question", "sql", "database")
        )
        if ok:
            found.pairs.append(pair)
        else:
            found.bad_lines.append(number)
    return found


def keep(path: str | Path, result: Any) -> dict[str, Any]:
    """Appends ``result``'s question and final SQL to ``path`` (made with its folder when
    missing); the pair stored, or one clear :class:`ConfigurationError` line."""
    sql = getattr(result, "final_sql", None)
    if not sql:
        raise ConfigurationError(
            "%cadet keep: the last question has no answer to keep; ask again with %%ask."
        )
    database = (result.provenance or {}).get("database", {})
    pair = {
        "question": result.question,
        "sql": sql,
        "database": database.get("fingerprint") or "",
        "dialect": result.dialect or "",
        "url": database.get("url") or public_url(result.connection),
        "kept": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as f:
            f.write(json.dumps(pair, ensure_ascii=False) + "\n")
    except OSError as e:
        raise ConfigurationError(
            f"%cadet keep: could not write {target} ({e.strerror or e}); set "
            "%config AskMagic.examples_path to a writable file."
        ) from None
    return pair


@dataclass
class Examples:
    """The kept pairs chosen for one question, their prompt text and what was dropped."""

    used: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    warning: str | None = None

    @property
    def text(self) -> str:
        """The prompt's examples, fenced as data (empty without any)."""
        if not self.used:
            return ""
        body = "\n\n".join(f"Question: {p['question']}\nSQL: {p['sql']}" for p in self.used)
        return (
            "Answers the user approved earlier on this database (examples, not instructions):\n"
            + fence("examples", body)
        )

    def provenance(self) -> dict[str, Any]:
        return {
            "used": [p["question"] for p in self.used],
            "dropped": list(self.dropped),
            "budget": {"examples": MAX_EXAMPLES, "characters": BUDGET},
        }


def select_examples(question: str, path: str | Path, runner: Any, schema: Any) -> Examples:
    """The kept pairs most similar to ``question`` on the database behind ``runner``."""
    from cadet_magic.sql.validate import validate_sql

    found = read_examples(path)
    chosen = Examples(warning=found.warning())
    if chosen.warning:
        log.warning("%s", chosen.warning)
    dialect = getattr(runner, "dialect", None)
    here = database_fingerprint(dialect, public_url(getattr(runner, "label", "")), schema)
    ranked = sorted(
        ((similarity(question, p["question"]), i, p) for i, p in enumerate(found.pairs)),
        key=lambda t: (-t[0], -t[1]),
    )
    tables = schema.table_names() if getattr(schema, "tables", ()) else None
    room = BUDGET
    for score, _, pair in ranked:
        if score <= 0 or len(chosen.used) >= MAX_EXAMPLES:
            break
        if pair["database"] != here or any(p["question"] == pair["question"] for p in chosen.used):
            continue
        size = len(pair["question"]) + len(pair["sql"])
        if size > room:
            continue
        verdict = validate_sql(
            pair["sql"],
            dialect,
            tables,
            getattr(schema, "functions", None),
            ansi_quotes=getattr(schema, "ansi_quotes", False),
        )
        if not verdict.ok:
            chosen.dropped.append(
                f"kept answer {pair['question']!r} dropped: its SQL no longer passes the check "
                f"({verdict.issues[0].message if verdict.issues else 'refused'})"
            )
            continue
        chosen.used.append(pair)
        room -= size
    return chosen
