"""Cutting text for one-line displays, prompts and logs: the one home of "first line, cut".

Standard library only (the portable core uses it).

Example:
    >>> first_line("  no such column: amout\\n  LINE 1: SELECT amout ...")
    'no such column: amout'
    >>> first_line("a long error message", 10)
    'a long er…'
    >>> without_sql_suffix("(sqlite3.OperationalError) no such table: x\\n[SQL: SELECT * FROM x]")
    '(sqlite3.OperationalError) no such table: x'
    >>> printable("\x1b]52;c;aGk=\x07 title")
    '\\\\x1b]52;c;aGk=\\\\x07 title'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

#: Characters a terminal acts on instead of showing: C0 and C1 controls and DEL (escape
#: sequences, carriage return, backspace, bell) and the bidirectional marks, overrides and
#: isolates (which reorder what is shown). Tab and line break are kept unless told otherwise.
_CONTROLS = "\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"

#: What SQLAlchemy appends to its errors: the statement and a link to its documentation.
SQL_SUFFIX = "[SQL:"

#: The mark put where a line was cut.
ELLIPSIS = "\u2026"


def cut(text: str, width: int, *, mark: str = ELLIPSIS, at_word: bool = False) -> str:
    """``text`` cut to ``width`` characters, ending with ``mark`` when it was cut.

    With ``at_word`` the cut falls on the last space before ``width`` (trailing punctuation
    dropped) and the mark follows a space; with ``mark=""`` the text is simply truncated.

    Example:
        >>> cut("abcdef", 4), cut("abcdef", 4, mark=""), cut("abcdef", 10)
        ('abc…', 'abcd', 'abcdef')
        >>> cut("one two, three four", 12, at_word=True)
        'one two …'
    """
    if len(text) <= width:
        return text
    if at_word:
        head = text[:width]
        head = head.rsplit(" ", 1)[0] if " " in head else head
        return head.rstrip(" ,;:") + (" " + mark if mark else "")
    if not mark:
        return text[:width]
    return text[: width - len(mark)] + mark


def first_line(
    text: str | None, width: int | None = 300, *, mark: str = ELLIPSIS, at_word: bool = False
) -> str:
    """The first non-empty line of ``text`` (stripped), cut at ``width`` (None: not cut).

    Example:
        >>> first_line(None), first_line("\\n\\n  x  \\ny")
        ('', 'x')
        >>> first_line("abcdef", 3, mark="")
        'abc'
    """
    for line in (text or "").splitlines():
        if line.strip():
            line = line.strip()
            return line if width is None else cut(line, width, mark=mark, at_word=at_word)
    return ""


def without_sql_suffix(text: str) -> str:
    """``text`` without SQLAlchemy's ``[SQL: ...]`` suffix (and what follows it), stripped.

    Example:
        >>> without_sql_suffix("boom [SQL: SELECT 1]")
        'boom'
    """
    return text.split(SQL_SUFFIX, 1)[0].strip()


def error_text(error: Any) -> str | None:
    """An error as the text an attempt records: the driver's own exception when SQLAlchemy
    wrapped one (``.orig``), without SQLAlchemy's ``[SQL: ...]`` suffix; the class name when
    the message is empty; a string as it is; None for None.

    Example:
        >>> error_text(ValueError("bad value [SQL: SELECT 1]")), error_text(KeyError())
        ('bad value', 'KeyError')
        >>> error_text("as written") , error_text(None)
        ('as written', None)
    """
    if error is None:
        return None
    if isinstance(error, BaseException):
        orig = getattr(error, "orig", None)
        err = orig if orig is not None else error
        return without_sql_suffix(str(err).strip()) or type(err).__name__
    return str(error)


def printable(text: Any, keep: str = "\t\n") -> str:
    """``text`` with every character a terminal would act on shown escaped (``\\x1b``,
    ``\\r``, ``\\u202e``), except those in ``keep`` (tab and line break by default; a
    table cell keeps none). Values stored in the data reach the text display through this, so
    an escape sequence in a value cannot set the clipboard, the window title or hide text.

    Example:
        >>> printable("a\\tb\\rc\\u202ed"), printable("x\\ny", keep="")
        ('a\\tb\\\\rc\\\\u202ed', 'x\\\\ny')
    """
    text = str(text)
    pattern = _control_pattern(keep)
    if not pattern.search(text):
        return text
    return pattern.sub(_escaped, text)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _control_pattern(keep: str) -> re.Pattern[str]:
    if keep not in _PATTERNS:
        kept = "".join(re.escape(ch) for ch in keep)
        _PATTERNS[keep] = re.compile(f"(?![{kept}])[{_CONTROLS}]" if kept else f"[{_CONTROLS}]")
    return _PATTERNS[keep]


def _escaped(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


#: Shown in place of a key found in text that is displayed or logged.
REDACTED = "***"
#: Keys shorter than this are not searched for (they would match ordinary words).
MIN_SECRET = 8


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (an API key, a password in a URL) replaced by ``***``.

    Example:
        >>> redact("bad key sk-live-123456789 (sk-live-123456789)", ["sk-live-123456789"])
        'bad key *** (***)'
    """
    for secret in sorted({x for x in secrets if x and len(x) >= MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def secrets_of(*sources: Any, env: Mapping[str, str] | None = None) -> list[str]:
    """The secrets that must never be shown: keys held by model objects or endpoint options
    (attributes named like ``api_key``, plain or as a secret string), passwords in their
    URLs, and the provider keys and tokens in the environment.

    Example:
        >>> class M: openai_api_key = "sk-0123456789"; base_url = "http://u:pass1234word@h/v1"
        >>> secrets_of(M(), env={"OPENAI_API_KEY": "sk-9876543210", "HOME": "/root"})
        ['pass1234word', 'sk-0123456789', 'sk-9876543210']
    """
    found: list[str] = []
    for source in sources:
        for name in dir(source) if source is not None else ():
            if not (name.endswith(("api_key", "_key", "_token")) or name in ("key", "token")):
                if name not in ("base_url", "openai_api_base", "url"):
                    continue
            try:
                value = getattr(source, name)
            except Exception:  # noqa: BLE001 - a property that fails has nothing to give
                continue
            if hasattr(value, "get_secret_value"):
                value = value.get_secret_value()
            if isinstance(value, str) and name in ("base_url", "openai_api_base", "url"):
                value = urlsplit(value).password
            if isinstance(value, str) and len(value) >= MIN_SECRET:
                found.append(value)
    env = os.environ if env is None else env
    for name, value in env.items():
        if name.endswith(("_API_KEY", "_TOKEN")) and len(value) >= MIN_SECRET:
            found.append(value)
    return list(dict.fromkeys(found))
