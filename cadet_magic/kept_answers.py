"""Answers the user approved (``%cadet keep``), stored as plain JSON lines, and the few most
similar ones put into the prompt as examples (standard library and the SQL check only).

The file (``AskMagic.examples_path``, default ``.cadet/examples.jsonl`` beside the notebook)
holds one kept pair per line: ``{"format", "question", "sql", "database", "dialect", "url",
"kept", "signature"}`` (a reading the user chose, kept, is a confirmed example: it adds
``"confirmed"``, the day, and ``"result"``, its result's :func:`result_digest`; a later answer
reproducing that result says "as you confirmed on <day>", :func:`confirmed_by`), where ``database`` is the database fingerprint
(:func:`cadet_magic.provenance.database_fingerprint`): a question only gets the pairs kept on the
same database. Keeping appends a line and never rewrites the file, so a line this version cannot
read is skipped with one warning and stays.

The folder is often shared (a cloned repository, a network drive), so the file is data, never
trusted for where it lies:

- it is read and written through :mod:`cadet_magic.shared_files`: neither the file nor its
  folder may be a link, only a regular file, at most :data:`FILE_BYTES`, never blocking,
  created ``0600`` in a ``0700`` folder;
- each line is JSON whose strings hold no character a shell or an editor acts on (:func:`line`:
  ``$``, backquote, quotes, ``!``, ``:``, ``/``, backslash and anything beyond printable ASCII
  are ``\\u`` escapes): a shell that sources the file runs nothing of it, an editor finds no
  modeline;
- a pair enters a prompt only when the user kept it in this folder: its ``signature`` is an
  HMAC of the pair and the file's real path under a key of the user's, kept outside the
  folder (:func:`user_key`). Pairs shipped with a folder, copied from another, or written by
  someone else are listed by ``%cadet examples`` and never used.

Selection: words of the new question against words of each kept question (Jaccard overlap,
lexical only), the best :data:`MAX_EXAMPLES` with any overlap, within :data:`BUDGET` characters
of prompt; a selected pair whose SQL no longer passes the safety check on today's schema is
dropped with a note.

Example:
    >>> round(similarity("orders per status in 2025", "How many orders per status?"), 2)
    0.67
    >>> print(line({"question": "Paid?", "sql": "SELECT '$(id)' FROM t"}))
    {"question":"Paid?","sql":"SELECT '\\u0024(id)' FROM t"}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadet_magic.conversation import fence
from cadet_magic.errors import ConfigurationError
from cadet_magic.provenance import database_fingerprint, public_url
from cadet_magic.shared_files import FILE_MODE, FOLDER_MODE, append_line, read_bytes

log = logging.getLogger("cadet_magic")

#: Kept pairs put into one prompt at most.
MAX_EXAMPLES = 3
#: Characters of kept examples in one prompt at most (questions and SQL).
BUDGET = 1500
#: Bytes of the examples file read at most (a larger file is not read: one warning).
FILE_BYTES = 4 * 2**20
#: The first field of every kept line (a shell reading the line sees this as its command).
FORMAT = "cadet-kept-1"

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


#: Characters a kept line's strings hold as they are; any other is a ``\\uXXXX`` escape.
_PLAIN = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,'()=<>*+%-;|&?[]@#^~"
)


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _PLAIN:
            out.append(ch)
        elif ch == "\\":
            out.append("\\\\")
        else:
            for unit in ch.encode("utf-16-be").hex(" ", 2).split():
                out.append("\\u" + unit)
    return '"' + "".join(out) + '"'


def line(pair: dict[str, str]) -> str:
    """``pair`` (string keys and values) as one JSON line that no shell or editor acts on: the
    strings hold only letters, digits, spaces and punctuation that means nothing inside a
    quoted shell word; ``"`` ``$`` backquote ``!`` ``:`` ``/`` and anything else are escaped."""
    return "{" + ",".join(f"{_string(k)}:{_string(str(v))}" for k, v in pair.items()) + "}"


def user_key() -> bytes:
    """The user's key for kept answers, made on first use: 32 random bytes in
    ``$XDG_CONFIG_HOME/cadet_magic/kept.key`` (``~/.config/...``; ``%APPDATA%`` on Windows),
    outside any notebook folder. A key file that others can read, or that is not the user's
    (a copy shipped in a folder) is refused with one line."""
    base = os.environ.get("XDG_CONFIG_HOME") or (
        os.environ.get("APPDATA") if os.name == "nt" else None
    )
    folder = Path(base) if base else Path.home() / ".config"
    path = folder / "cadet_magic" / "kept.key"
    text = read_bytes(path, limit=256)
    if text is None:
        path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            return user_key()
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        text = read_bytes(path, limit=256) or b""
    if os.name == "posix":
        st = os.stat(path)
        if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
            raise ConfigurationError(
                f"{path} (the key that marks kept answers as yours) can be read by others or "
                "is not yours, so it is no secret: delete it (a new one is made) and keep the "
                "answers again."
            )
    try:
        return bytes.fromhex(text.decode("ascii").strip())
    except ValueError:
        raise ConfigurationError(
            f"{path} is not a key cadet_magic made: delete it (a new one is made) and keep "
            "the answers again."
        ) from None


def own_key() -> bytes | None:
    """:func:`user_key`, or None with one warning when there is none to be had (the kept
    pairs are then all left out)."""
    try:
        return user_key()
    except (ConfigurationError, OSError) as e:
        log.warning("Kept examples left out: %s", e)
        return None


def signature(key: bytes, path: str | Path, pair: dict[str, Any]) -> str:
    """The HMAC that says the user kept ``pair`` in the examples file at ``path`` (its real
    path: the same pair copied into another folder does not carry it)."""
    fields = {k: v for k, v in sorted(pair.items()) if k != "signature"}
    place = os.path.realpath(path)
    message = json.dumps([FORMAT, place, fields], ensure_ascii=True, sort_keys=True)
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


@dataclass
class ExampleFile:
    """The readable pairs of a kept-examples file, the lines it could not read, the pairs the
    user did not keep there (never used) and why the file was not read at all."""

    path: Path
    pairs: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)
    not_kept_here: list[dict[str, Any]] = field(default_factory=list)
    refused: str | None = None

    def warning(self) -> str | None:
        """One line naming what was skipped (None when every line was read and is the user's)."""
        if self.refused:
            return f"{self.refused} No kept examples this time."
        parts = []
        if self.bad_lines:
            shown = ", ".join(str(n) for n in self.bad_lines[:5])
            more = "" if len(self.bad_lines) <= 5 else f" and {len(self.bad_lines) - 5} more"
            parts.append(
                f"{self.path}: {len(self.bad_lines)} line(s) are not kept answers and were "
                f"skipped (line {shown}{more}); they stay in the file as they are. Fix or "
                "delete them to silence this."
            )
        if self.not_kept_here:
            parts.append(
                f"{self.path}: {len(self.not_kept_here)} pair(s) were not kept by you in this "
                "folder (shipped with it, copied from elsewhere or written by someone else) and "
                "are never used; keep an answer with %cadet keep to use it."
            )
        return " ".join(parts) or None


def read_examples(
    path: str | Path, *, key: bytes | Callable[[], bytes | None] | None = None
) -> ExampleFile:
    """The kept pairs of ``path`` (no file: none): those ``key`` signs (the user's key, or a
    function giving it, called only when the file holds a pair) are
    :attr:`ExampleFile.pairs`, the others :attr:`ExampleFile.not_kept_here`; bad lines are
    listed, never lost; a file that is a link, not a regular file or too large is not read
    (:attr:`ExampleFile.refused`)."""
    found = ExampleFile(Path(path))
    try:
        data = read_bytes(found.path, limit=FILE_BYTES, follow=False)
        text = (data or b"").decode("utf-8")
    except ConfigurationError as e:
        found.refused = str(e)
        return found
    except (OSError, UnicodeDecodeError) as e:
        found.refused = f"{path} could not be read ({e})."
        return found
    for number, text_line in enumerate(text.splitlines(), 1):
        if not text_line.strip():
            continue
        try:
            pair = json.loads(text_line)
        except ValueError:
            pair = None
        ok = isinstance(pair, dict) and all(
            isinstance(pair.get(k), str) and pair.get(k) for k in ("question", "sql", "database")
        )
        if ok and callable(key):
            key = key()
        if not ok:
            found.bad_lines.append(number)
        elif isinstance(key, bytes) and hmac.compare_digest(
            str(pair.get("signature", "")), signature(key, found.path, pair)
        ):
            found.pairs.append(pair)
        else:
            found.not_kept_here.append(pair)
    return found


def keep(path: str | Path, result: Any) -> dict[str, Any]:
    """Appends ``result``'s question and final SQL to ``path`` (made with its folder when
    missing), signed with the user's key; the pair stored, or one clear
    :class:`ConfigurationError` line."""
    sql = getattr(result, "final_sql", None)
    if not sql:
        raise ConfigurationError(
            "%cadet keep: the last question has no answer to keep; ask again with %%ask."
        )
    database = (result.provenance or {}).get("database", {})
    pair = {
        "format": FORMAT,
        "question": result.question,
        "sql": sql,
        "database": database.get("fingerprint") or "",
        "dialect": result.dialect or "",
        "url": database.get("url") or public_url(result.connection),
        "kept": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if getattr(result, "chosen", None) is not None:  # the user chose this reading: confirmed
        pair["confirmed"] = pair["kept"][:10]
        pair["result"] = result_digest(result.columns, result.rows)
    target = Path(path)
    try:
        pair["signature"] = signature(user_key(), target, pair)
        append_line(target, line(pair).encode("ascii"), limit=FILE_BYTES)
    except ConfigurationError as e:
        raise ConfigurationError(f"%cadet keep: {e}") from None
    except OSError as e:
        raise ConfigurationError(
            f"%cadet keep: could not write {target} ({e.strerror or e}); set "
            "%config AskMagic.examples_path to a writable file."
        ) from None
    return pair


def result_digest(columns: Any, rows: Any) -> str:
    """A digest of a result as the vote compares results (rows as a multiset, values
    normalised, column names left out): two answers with one digest give the same answer.

    Example:
        >>> result_digest(["n"], [(1,), (2.0,)]) == result_digest(["m"], [(2,), (1,)])
        True
    """
    from cadet_magic.vote.execution_match import normalise_rows

    rows = sorted(normalise_rows(rows), key=repr)
    text = json.dumps([len(list(columns)), [repr(r) for r in rows]])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def confirmed_by(result: Any, pairs: list[dict[str, Any]]) -> Any:
    """The example among ``pairs`` (kept on the answer's database) that the user confirmed
    and whose result ``result`` reproduces, as a :class:`~cadet_magic.result.Confirmed`
    (None: none does)."""
    from cadet_magic.result import Confirmed

    if not getattr(result, "ok", False):
        return None
    digest = None
    for pair in pairs:
        if not pair.get("confirmed") or not pair.get("result"):
            continue
        digest = digest or result_digest(result.columns, result.rows)
        if hmac.compare_digest(str(pair["result"]), digest):
            return Confirmed(str(pair["confirmed"]), str(pair["question"]))
    return None


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
    """The kept pairs most similar to ``question`` on the database behind ``runner`` (each
    pair's SQL passing the check against that database's target, as a query of the run)."""
    from cadet_magic.runner import target_of
    from cadet_magic.sql.validate import validate_sql

    found = read_examples(path, key=own_key)
    chosen = Examples(warning=found.warning())
    if chosen.warning:
        log.warning("%s", chosen.warning)
    if found.refused:
        chosen.dropped.append(f"kept answers not read: {found.refused}")
    if found.not_kept_here:
        chosen.dropped.append(
            f"{len(found.not_kept_here)} pair(s) in {found.path} not kept by you in this "
            "folder: never used"
        )
    dialect = getattr(runner, "dialect", None)
    here = database_fingerprint(dialect, public_url(getattr(runner, "label", "")), schema)
    ranked = sorted(
        ((similarity(question, p["question"]), i, p) for i, p in enumerate(found.pairs)),
        key=lambda t: (-t[0], -t[1]),
    )
    target = target_of(runner).with_schema(schema)
    room = BUDGET
    for score, _, pair in ranked:
        if score <= 0 or len(chosen.used) >= MAX_EXAMPLES:
            break
        if pair["database"] != here or any(p["question"] == pair["question"] for p in chosen.used):
            continue
        size = len(pair["question"]) + len(pair["sql"])
        if size > room:
            continue
        verdict = validate_sql(pair["sql"], target)
        if not verdict.ok:
            chosen.dropped.append(
                f"kept answer {pair['question']!r} dropped: its SQL no longer passes the check "
                f"({verdict.issues[0].message if verdict.issues else 'refused'})"
            )
            continue
        chosen.used.append(pair)
        room -= size
    return chosen
