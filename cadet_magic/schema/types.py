"""Column types as the engines write them, read by their structure (standard library only).

Engines write a column's type as text, and some of that text is data: DuckDB writes an ``ENUM``
with every label (``ENUM('open', 'closed')``, also inside nested types and for a type created
with ``CREATE TYPE``), MySQL ``enum('a','b')`` and ``set('a','b')``. Nested types are written
in full: DuckDB ``STRUCT(a INTEGER, b VARCHAR)``, ``MAP(VARCHAR, INTEGER)``,
``UNION(n INTEGER, s VARCHAR)``, ``INTEGER[]``, ``INTEGER[3]``; Spark ``array<int>``,
``map<string,int>``, ``struct<a:int>``; PostgreSQL ``integer[]``. So a type is read by its
outermost name (:func:`outer_type`), never by a word somewhere inside it (``STRUCT(a INTEGER)``
is not a number), and below ``samples`` its labels are left out (:func:`without_labels`).

Example:
    >>> outer_type("STRUCT(a INTEGER, b ENUM('x', 'y'))"), outer_type("INTEGER[3]")
    ('STRUCT', 'LIST')
    >>> ranged_type("DECIMAL(10,2)"), ranged_type("MAP(VARCHAR, INTEGER)"), ranged_type("POINT")
    (True, False, False)
    >>> without_labels("STRUCT(k ENUM('secret', 'x'), v INTEGER)")
    'STRUCT(k ENUM, v INTEGER)'
"""

from __future__ import annotations

import re

#: Outermost type names of numbers (every engine's spelling the schema readers see).
NUMERIC = frozenset(
    """TINYINT SMALLINT MEDIUMINT INT INTEGER BIGINT HUGEINT UHUGEINT UTINYINT USMALLINT
    UINTEGER UBIGINT INT1 INT2 INT4 INT8 INT16 INT32 INT64 INT128 SERIAL SMALLSERIAL BIGSERIAL
    FLOAT FLOAT4 FLOAT8 FLOAT64 DOUBLE REAL DECIMAL DEC NUMERIC BIGNUMERIC BIGDECIMAL NUMBER
    MONEY SMALLMONEY FIXED BYTEINT""".split()
)
#: Outermost type names of dates, times and durations.
TEMPORAL = frozenset(
    """DATE TIME TIMETZ TIMESTAMP TIMESTAMPTZ TIMESTAMP_S TIMESTAMP_MS TIMESTAMP_NS
    TIMESTAMP_TZ TIMESTAMP_NTZ TIMESTAMP_LTZ DATETIME DATETIME2 DATETIMEOFFSET SMALLDATETIME
    INTERVAL YEAR""".split()
)
#: Outermost type names of values holding other values.
NESTED = frozenset("STRUCT MAP UNION LIST ARRAY ROW OBJECT VARIANT RECORD".split())
#: Types whose text lists their values: the name, then its labels in parentheses.
_LABELLED = re.compile(r"\b(ENUM|SET)\s*\(", re.IGNORECASE)


def outer_type(text: str | None) -> str:
    """The outermost type's name, upper-cased: ``LIST`` for an array written with brackets
    (``INTEGER[]``), else the first word ('' for none).

    Example:
        >>> [outer_type(t) for t in ("double precision", "int(11) unsigned", "array<int>", "")]
        ['DOUBLE', 'INT', 'ARRAY', '']
    """
    t = (text or "").strip()
    if t.endswith("]"):
        return "LIST"
    end = 0
    while end < len(t) and (t[end].isalnum() or t[end] == "_"):
        end += 1
    return t[:end].upper()


def ranged_type(text: str | None) -> bool:
    """Whether the ``stats`` level shows the smallest and largest value of a column of this
    type: a number or a date/time by its outermost type, never a nested or enumerated one."""
    outer = outer_type(text)
    return outer in NUMERIC or outer in TEMPORAL


def temporal_type(text: str | None) -> bool:
    return outer_type(text) in TEMPORAL


def _closing(text: str, start: int) -> int:
    """The index after the parenthesis closing the one opened before ``start`` (quoted text
    skipped, a doubled quote inside it included); the text's end when none closes it."""
    depth, i, quote = 1, start, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                if text[i + 1 : i + 2] == quote:
                    i += 1  # a doubled quote: still inside
                else:
                    quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def without_labels(text: str | None) -> str:
    """``text`` with every enumerated type's labels left out (``ENUM('a', 'b')`` is
    ``ENUM``, MySQL's ``set('a','b')`` is ``set``), nested ones too.

    Example:
        >>> without_labels("MAP(VARCHAR, ENUM('it''s', 'b'))"), without_labels("enum('a','b')")
        ('MAP(VARCHAR, ENUM)', 'enum')
    """
    text = text or ""
    out, at = [], 0
    for found in _LABELLED.finditer(text):
        if found.start() < at:
            continue  # inside labels already left out
        out.append(text[at : found.start()] + found.group(1))
        at = _closing(text, found.end())
    out.append(text[at:])
    return "".join(out)
