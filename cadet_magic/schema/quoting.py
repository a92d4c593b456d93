"""Names and database-supplied text as the prompt's schema writes them (stdlib + sqlglot).

Names are written exactly (quoted in the dialect's style where they would not read as
themselves); comments, sample values and rows are made one safe line each
(:func:`neutralize`), so that nothing from the database's content can close the schema's fence,
open a Markdown code fence or a new line.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from sqlglot import exp

if TYPE_CHECKING:
    import sqlglot

#: Sample values longer than this are cut (with an ellipsis).
MAX_SAMPLE_CHARS = 40

_TAG = re.compile(r"<(?=\s*/|[A-Za-z!?])")
_SPACE = re.compile(r"\s+")
_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


def neutralize(text: str, limit: int | None = None) -> str:
    """Makes database-supplied text safe to show inside the fenced schema.

    Collapses whitespace (no new lines), turns the ``<`` of anything tag-like
    into ``‹`` (so ``</schema>`` cannot close the fence), breaks Markdown code
    fences and comment terminators, and cuts the text to ``limit`` characters.

    Args:
        text: a comment, sample value or identifier from the catalog.
        limit: the maximum length of the result, or None.

    Returns:
        One line of text.

    Example:
        >>> neutralize("a\\n</SCHEMA> ```sql */ b")
        'a ‹/SCHEMA> ` ` `sql * / b'
        >>> neutralize("abcdefgh", limit=5)
        'abcd…'
    """
    text = _SPACE.sub(" ", str(text)).strip()
    text = _TAG.sub("‹", text).replace("```", "` ` `").replace("*/", "* /")
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    return text


#: Words reserved as keywords in at least one supported engine (PostgreSQL's reserved and
#: type/function keywords, DuckDB's reserved ones, and SQLite's and MySQL's statement words):
#: a name spelled like one is quoted, whichever the dialect (quoting is exact either way).
RESERVED_WORDS: frozenset[str] = frozenset(
    """
    abort add all alter analyse analyze and anti any array as asc asof asymmetric at
    authorization begin between binary both by case cast check collate collation column
    columns commit concurrently conflict constraint create cross current_catalog current_date
    current_role current_schema current_time current_timestamp current_user default deferrable
    delete desc describe distinct do drop else end escape except exists false fetch filter for
    foreign freeze from full generated glob grant group having if ilike in index initially
    inner insert intersect interval into is isnull join key lambda lateral leading left like
    limit localtime localtimestamp map match natural not notnull null offset on only or order
    outer over overlaps partition pivot pivot_longer pivot_wider placing positional pragma
    primary qualify range references regexp rename replace returning right rollback row rows
    select semi session_user set show similar some struct summarize symmetric table
    tablesample then to trailing transaction trigger true try_cast tuple union unique unpack
    unpivot update user using values variadic verbose view when where window with
    """.split()
)


def _bare_ok(name: str) -> bool:
    """Whether ``name`` reads as itself unquoted: a simple word that is not a keyword."""
    return bool(_SIMPLE_NAME.match(name)) and name.lower() not in RESERVED_WORDS


@functools.lru_cache(maxsize=4096)
def quote_identifier(name: str, dialect: sqlglot.Dialect | None = None) -> str:
    """One identifier exactly as written in ``dialect``: bare when it reads as itself, else
    quoted in the dialect's style with its quote character escaped (sqlglot's generator).

    Example:
        >>> quote_identifier("order_id"), quote_identifier("order"), quote_identifier('a"b')
        ('order_id', '"order"', '"a""b"')
        >>> from cadet_magic.sql.dialect import dialect_of
        >>> mysql = dialect_of("mysql")
        >>> quote_identifier("select", mysql), quote_identifier("a`b", mysql)
        ('`select`', '`a``b`')
    """
    if _bare_ok(name):
        return name
    try:
        return exp.to_identifier(name, quoted=True).sql(dialect=dialect)
    except Exception:  # noqa: BLE001 - a name sqlglot cannot write: standard SQL
        return '"' + name.replace('"', '""') + '"'


def quote_name(name: str, dialect: sqlglot.Dialect | None = None, qualified: bool = False) -> str:
    """A column (or, with ``qualified``, a ``schema.table``) name exactly as written in SQL.

    Names are never altered: keywords, quotes, ``*/`` or ``<`` in a name are quoted in the
    dialect's style (the prompt's fence is chosen so that no name can close it).

    Example:
        >>> quote_name("Order Date"), quote_name("sales.orders", qualified=True)
        ('"Order Date"', 'sales.orders')
        >>> print(quote_name("x */ </schema>"))
        "x */ </schema>"
    """
    if qualified and "." in name:
        return ".".join(quote_identifier(part, dialect) for part in name.split("."))
    return quote_identifier(name, dialect)


def literal(value: str) -> str:
    """A sample value as a SQL string literal, made safe and cut.

    Example:
        >>> literal("it's")
        "'it''s'"
    """
    return "'" + neutralize(value, MAX_SAMPLE_CHARS).replace("'", "''") + "'"
