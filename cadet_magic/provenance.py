"""How an answer was produced, as a plain JSON-serialisable record (standard library only).

Every :class:`~cadet_magic.result.AskResult` carries one in ``.provenance``; the displays write
it into the output's metadata under :data:`METADATA_KEY`, so that it is saved with the notebook
and survives nbconvert. It holds the question, the SQL that answered, the model's label, the
engine, the database's fingerprint (its URL without credentials and a hash of its tables,
columns and types), each attempt's phase, outcome, category, seconds and tokens, the sharing
level and the package version: never a key, a password or a row.

Example:
    >>> from cadet_magic.schema.structure import Schema
    >>> s = Schema.from_mapping({"orders": ["id", "amount"]})
    >>> schema_fingerprint(s) == schema_fingerprint(Schema.from_mapping({"ORDERS": ["ID", "AMOUNT"]}))
    True
    >>> public_url("postgresql://ann:s3cret@db.example.com:5432/shop?sslmode=require&password=x")
    'postgresql://db.example.com:5432/shop?sslmode=require'
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import sqlglot

#: The key of the output metadata that holds the provenance (``outputs[i].metadata["cadet"]``).
METADATA_KEY = "cadet"

#: The provenance record's own format version (bumped when a field changes meaning).
FORMAT = 1

#: Query-string parameters of a URL that may hold a credential: dropped from the record.
_SECRET_PARAMS = re.compile(r"pass|pwd|secret|token|key|auth|credential|sig", re.I)


def package_version() -> str:
    """The version of cadet_magic (the package, always imported before any of its modules)."""
    package = sys.modules.get("cadet_magic")
    return str(getattr(package, "__version__", "unknown"))


def public_url(label: str | None) -> str:
    """A connection's label or URL without its user, password or secret query parameters.

    Example:
        >>> public_url("mysql+pymysql://root@localhost/shop")
        'mysql+pymysql://localhost/shop'
        >>> public_url("duckdb (native connection)")
        'duckdb (native connection)'
        >>> public_url("mysql (PyMySQL) analyst@db.example.com/shop")
        'mysql (PyMySQL) db.example.com/shop'
    """
    text = (label or "").strip()
    if "://" not in text:
        return re.sub(r"\S+@(?=\S)", "", text)  # "user@host" in a driver's label
    try:
        parts = urlsplit(text)
        host = parts.netloc.rpartition("@")[2]
        query = urlencode(
            [(k, v) for k, v in parse_qsl(parts.query) if not _SECRET_PARAMS.search(k)]
        )
        return urlunsplit((parts.scheme, host, parts.path, query, ""))
    except ValueError:  # not a URL after all: drop anything before an "@"
        return re.sub(r"//[^/@\s]*@", "//", text)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def schema_fingerprint(schema: Any) -> str | None:
    """A short hash of the schema's tables, columns, types and keys (case-insensitive names;
    sample values and comments are not part of it): it changes when the schema does.
    None for a schema without tables (it could not be read)."""
    tables = getattr(schema, "tables", ())
    if not tables:
        return None
    shape = sorted(
        (
            (t.schema or "").lower(),
            t.name.lower(),
            [(c.name.lower(), (c.type or "").lower(), c.primary_key) for c in t.columns],
            sorted(
                [[c.lower() for c in fk.columns], fk.ref_table.lower()] for fk in t.foreign_keys
            ),
        )
        for t in tables
    )
    return _digest(shape)


def database_fingerprint(dialect: str | None, url: str, schema: Any) -> str:
    """A short hash naming the database: its engine, its URL without credentials and its table
    names (not their columns, so that a kept answer outlives an added column).

    Example:
        >>> from cadet_magic.schema.structure import Schema
        >>> a = database_fingerprint("duckdb", "x", Schema.from_mapping({"t": ["a"]}))
        >>> a == database_fingerprint("duckdb", "x", Schema.from_mapping({"t": ["a", "b"]}))
        True
    """
    names = sorted(t.name.lower() for t in getattr(schema, "tables", ()))
    return _digest([dialect or "", url, names])


def attempt_record(a: Any) -> dict[str, Any]:
    """One attempt in the provenance: phase, number, outcome, category, seconds, tokens."""
    tokens = a.tokens
    return {
        "phase": str(a.phase),
        "number": a.number,
        "outcome": str(a.outcome),
        "category": a.category,
        "seconds": round(a.elapsed, 3),
        "model_seconds": None if a.model_seconds is None else round(a.model_seconds, 3),
        "tokens": None if tokens is None else {"input": tokens.input, "output": tokens.output},
    }


def shown_columns(
    columns: Sequence[str], names: Iterable[str], given: Sequence[str | None] = ()
) -> tuple[str, ...]:
    """``columns`` (an answer's result columns) as they may be shown below ``samples``: a name
    of the schema (``names``) or the name the product's own reading of the query gives the
    column at its position (``given``, one per column, None where it gives none:
    :func:`~cadet_magic.sql.output_names.output_names`) as it is; any other (a DuckDB ``PIVOT``
    names its columns after values, pandas code after whatever it computed) as
    ``(column N)``, so that no value reaches the model as a name. Nothing is looked for in the
    text of the query or code: a literal there can hold every value.

    Example:
        >>> shown_columns(["status", "n", "123-45-6789"], ["orders", "status"], [None, "n", None])
        ('status', 'n', '(column 3)')
    """
    known = {n.lower() for n in names}
    shown = []
    for i, c in enumerate(map(str, columns)):
        own = given[i] if i < len(given) else None
        ok = c.lower() in known or (own is not None and c.lower() == own.lower())
        shown.append(c if ok else f"(column {i + 1})")
    return tuple(shown)


def shareable_columns(
    columns: Sequence[Any],
    schema: Any,
    sql: str | None,
    dialect: sqlglot.Dialect | None,
    code: str | None,
) -> tuple[str, ...]:
    """An answer's columns as they may be shown below ``samples`` (:func:`shown_columns`). A
    SQL answer's: with the names its SQL's tree gives them by position. A fallback answer's
    (``code``: its pandas code named them): its SELECT's names only where the code kept the
    SELECT's columns as they were (the same names, in order); else names of the schema only.

    Example:
        >>> from cadet_magic.schema.structure import Schema
        >>> from cadet_magic.sql.dialect import dialect_of
        >>> s, duckdb = Schema.from_mapping({"people": ["name", "ssn"]}), dialect_of("duckdb")
        >>> shareable_columns(["who", "201"], s, "SELECT name AS who, 1 AS x FROM people",
        ...                   duckdb, None)
        ('who', '(column 2)')
        >>> shareable_columns(["who", "n"], s, "SELECT name AS who FROM people", duckdb,
        ...                   "result = df.groupby('who').size().reset_index(name='n')")
        ('(column 1)', '(column 2)')
    """
    from cadet_magic.sql.output_names import output_names

    names = [str(c) for c in columns]
    given = output_names(sql, dialect, len(names))
    if code is not None:  # the columns are the code's: known only where it kept the SELECT's
        kept = all(
            g is not None and g.lower() == c.lower() for g, c in zip(given, names, strict=True)
        )
        given = given if kept else ()
    return shown_columns(names, schema_names(schema), given)


def schema_names(schema: Any) -> set[str]:
    """Every table and column name of ``schema`` (None or empty: none)."""
    names: set[str] = set()
    for t in getattr(schema, "tables", ()) or ():
        names.add(t.name)
        names.update(c.name for c in t.columns)
    return names


def _columns(result: Any, schema: Any, share: str) -> tuple[str, ...]:
    """The result's column names as the record keeps them: below ``samples`` only the schema's
    names and the names the product's reading of its SQL gives them
    (:func:`shareable_columns`: a ``PIVOT`` or pandas code can name columns after values)."""
    from cadet_magic.sql.target import Target

    columns = tuple(str(c) for c in result.columns)
    if share == "samples":
        return columns
    fallback = result.fallback if result.answered_by == "fallback" else None
    code = getattr(fallback, "code", None) if fallback is not None else None
    read = Target.named(result.dialect).dialect
    return shareable_columns(columns, schema, result.final_sql, read, code)


def _agreement(result: Any) -> dict[str, int | bool] | None:
    a = getattr(result, "agreement", None)
    uncertain = bool(getattr(result, "uncertain", False))
    return None if a is None else {"votes": a.votes, "of": a.of, "uncertain": uncertain}


def build(
    result: Any,
    *,
    schema: Any = None,
    share: str = "samples",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The provenance record of ``result`` (an :class:`~cadet_magic.result.AskResult`), read
    with ``schema`` (for its fingerprints). ``extra`` adds keys (the model spec, what was
    followed, the kept examples used, a rerun's source)."""
    url = public_url(result.connection)
    tokens = result.tokens
    record: dict[str, Any] = {
        "format": FORMAT,
        "question": result.question,
        "sql": result.final_sql,
        # a fallback answer's pandas code: a rerun runs it again on the SELECT's rows
        "code": result.fallback.code if result.answered_by == "fallback" else None,
        "answered_by": result.answered_by,
        "ok": result.ok,
        "model": result.model,
        "scripted": result.scripted,
        "engine": result.dialect,
        "database": {
            "url": url,
            "fingerprint": database_fingerprint(result.dialect, url, schema),
            "schema_fingerprint": schema_fingerprint(schema),
        },
        "share": share,
        "attempts": [attempt_record(a) for a in result.all_attempts],
        "stop_reason": None if result.stop_reason is None else str(result.stop_reason),
        # how many candidate answers gave this answer, of how many were drawn, and whether the
        # answer carries the vote's warning (no vote: None)
        "agreement": _agreement(result),
        "seconds": round(result.elapsed, 3),
        "model_calls": result.model_calls,
        "tokens": None if tokens is None else {"input": tokens.input, "output": tokens.output},
        "rows": len(result.rows),
        "columns": list(_columns(result, schema, share)),
        "version": package_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    record.update(extra or {})
    return json.loads(json.dumps(record, default=str))  # plain JSON values only
