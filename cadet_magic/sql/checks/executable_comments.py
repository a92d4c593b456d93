"""MySQL and MariaDB run the text of "executable comments" (``/*! ... */``, ``/*!50100 ... */``,
``/*M! ... */``, ``/*+ ... */`` optimizer hints aside) as SQL, while every parser reading the
statement as standard SQL skips them: the check and the engine would read two different
statements. Such a comment is refused on the original text (the syntax tree has no comments).

The SQL that runs is generated from the checked tree without comments anyway; refusing tells
the model plainly instead of silently dropping what it meant.

Example:
    >>> mysql = Target.named("mysql")
    >>> executable_comment("SELECT 1 /*! INTO OUTFILE '/tmp/x' */", mysql).code
    'executable_comment'
    >>> executable_comment("SELECT '/*! not a comment */' AS s -- a comment", mysql) is None
    True
    >>> executable_comment("SELECT 1 /*! x */", Target.named("postgres")) is None
    True
"""

from __future__ import annotations

import re

from cadet_magic.sql.checks.context import QUERY_HINT, Issue
from cadet_magic.sql.target import Target

#: Dialects whose engines execute ``/*! ... */`` comments.
DIALECTS = frozenset({"mysql", "singlestore", "doris", "starrocks"})
_EXECUTABLE = re.compile(r"^\s*(!|M!)")


def executable_comment(sql: str, target: Target) -> Issue | None:
    """An ``executable_comment`` issue when ``sql`` (in a MySQL-family dialect) has a comment
    the server would execute; None otherwise (also when the text does not tokenize: the parse
    refuses it then)."""
    if target.read not in DIALECTS or "/*" not in sql:
        return None
    try:
        tokens = target.dialect.tokenize(sql)
    except Exception:  # noqa: BLE001 - the parser refuses what does not tokenize
        return _issue() if re.search(r"/\*M?!", sql) else None
    for token in tokens:
        if any(_EXECUTABLE.match(c) for c in token.comments or ()):
            return _issue()
    return None


def _issue() -> Issue:
    return Issue(
        "executable_comment",
        "Comments of the form /*! ... */ or /*M! ... */ are executed by MySQL and MariaDB as "
        "SQL; remove them and write the whole query as plain SQL. " + QUERY_HINT,
    )
