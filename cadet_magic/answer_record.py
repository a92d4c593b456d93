"""An answer as another program receives it: a JSON record and its text (stdlib only).

The LangChain tool (:mod:`cadet_magic.tool`) and the MCP server (:mod:`cadet_magic.mcp`) hand
an :class:`~cadet_magic.result.AskResult` to a caller that is often a model itself, so what they
send is cut to the sharing level (``share``) the answer was asked at: the answer's own columns
and rows (what the question asked for), its SQL, the agreement of the vote, its warnings, the
readings to choose from (where the result has them), and each attempt's outcome and category.
Below ``samples`` nothing else the database holds is in it: a failure is told from the
attempts' categories (:func:`~cadet_magic.schema.share.shared_attempts`, never an engine's
message, which a query can make quote any stored value), a warning that names stored values
(the close values the result check found; at ``schema`` a column's range) says so without them,
and the other answers' and readings' rows are left out.

Example:
    >>> from cadet_magic.result import AskResult, Attempt
    >>> r = AskResult("n?", ok=True, sql="SELECT 1 AS n", columns=["n"], rows=[(1,)],
    ...               attempts=[Attempt(1, "SELECT 1 AS n")])
    >>> answer_record(r)["rows"], answer_record(r)["attempts"]
    ([[1]], [{'phase': 'sql', 'number': 1, 'outcome': 'ok', 'category': None}])
    >>> print(answer_text(r))
    SQL: SELECT 1 AS n
    Rows (1):
    n
    1
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from cadet_magic.result import AskResult
from cadet_magic.result_check.findings import RANGE_WARNING, SUSPECT_WARNING
from cadet_magic.schema.share import shared_attempts

#: Rows of the answer the text shows at most (the record holds every row of the result).
TEXT_ROWS = 50

_SUSPECT = SUSPECT_WARNING.split("{", 1)[0]
_RANGE = RANGE_WARNING.split("{", 1)[0]


def shared_warnings(warnings: list[str], share: str) -> list[str]:
    """``warnings`` as the sharing level allows: below ``samples`` without the stored values a
    suspect answer's warning names (the close values), and at ``schema`` without a column's
    range.

    Example:
        >>> w = ["The answer may be wrong: 'Pari' does not occur in t.city; it holds 'Paris'."]
        >>> shared_warnings(w, "schema")
        ['The answer may be wrong: a value it filters on does not occur in its column (the values it holds are not shared at share=schema).']
    """
    if share == "samples":
        return list(warnings)
    out = []
    for w in warnings:
        if w.startswith(_SUSPECT):
            w = (
                f"{_SUSPECT}a value it filters on does not occur in its column (the values it "
                f"holds are not shared at share={share})."
            )
        elif w.startswith(_RANGE) and share == "schema":
            w = f"{_RANGE}a comparison of the query (the column's range is not shared at share=schema)."
        out.append(w)
    return out


def _shared_result(result: AskResult, share: str) -> AskResult:
    """``result`` with its attempts' errors and feedback as the level allows (for the failure
    summary)."""
    fallback = result.fallback
    if fallback is not None:
        fallback = dataclasses.replace(
            fallback, attempts=shared_attempts(fallback.attempts, share), result=None
        )
    return dataclasses.replace(
        result,
        attempts=shared_attempts(result.attempts, share),
        candidates=shared_attempts(result.candidates, share),
        fallback=fallback,
    )


def _message(result: AskResult, share: str) -> str | None:
    """Why there is no answer, in words the level allows."""
    if result.ok:
        return None
    if share == "samples":
        return result.message
    from cadet_magic.agent.run import failure_message

    return failure_message(_shared_result(result, share))


def _plain(value: Any) -> Any:
    """``value`` as JSON values (a date, a decimal, bytes as text)."""
    return json.loads(json.dumps(value, default=str))


def _readings(result: AskResult, share: str) -> list[dict[str, Any]]:
    """The readings the answer asks the user to choose between (none before the result has
    them), each with its SQL, what it computes, its votes and, at ``samples``, its rows."""
    out = []
    for i, r in enumerate(getattr(result, "readings", ()) or ()):
        item = {
            "choice": i,
            "leading": i == 0,
            "sql": getattr(r, "sql", None),
            "summary": getattr(r, "summary", None),
            "votes": getattr(r, "votes", None),
        }
        if share == "samples":
            item["preview"] = getattr(r, "preview", None)
        out.append(item)
    return _plain(out)


def answer_record(result: AskResult, share: str = "samples") -> dict[str, Any]:
    """The answer as a JSON-serialisable record, cut to ``share`` (see the module)."""
    competing = [
        {"sql": c.sql, "votes": c.votes}
        | ({"columns": list(c.columns), "rows": c.rows} if share == "samples" else {})
        for c in result.competing
    ]
    agreement = result.agreement
    return _plain(
        {
            "question": result.question,
            "ok": result.ok,
            "answered_by": result.answered_by,
            "sql": result.final_sql,
            "columns": list(result.columns),
            "rows": [list(r) for r in result.rows],
            "truncated": result.truncated,
            "agreement": None
            if agreement is None
            else {"votes": agreement.votes, "of": agreement.of},
            "notice": getattr(result, "notice", None),
            "warnings": shared_warnings(list(result.warnings), share),
            "competing": competing,
            "asks": bool(getattr(result, "asks", False)),
            "readings": _readings(result, share),
            "attempts": [
                {
                    "phase": str(a.phase),
                    "number": a.number,
                    "outcome": str(a.outcome),
                    "category": None if a.category is None else str(a.category),
                }
                for a in result.all_attempts
            ],
            "message": _message(result, share),
            "model": result.model,
            "scripted": result.scripted,
            "share": share,
        }
    )


def answer_text(result: AskResult, share: str = "samples") -> str:
    """The answer as text for a model or a person: its SQL, its rows (the first
    :data:`TEXT_ROWS`), the agreement, the warnings and the readings; or why there is none."""
    from cadet_magic.display.plain_text import table_text

    record = answer_record(result, share)
    if not record["ok"]:
        return record["message"] or "No answer."
    lines = [f"SQL: {record['sql']}"]
    more = " (more rows exist: cut at the row limit)" if record["truncated"] else ""
    lines.append(f"Rows ({len(record['rows'])}{more}):")
    rows = [tuple(r) for r in record["rows"]]
    lines += [line.rstrip() for line in table_text(record["columns"], rows, TEXT_ROWS)]
    if record["agreement"] is not None:
        a = record["agreement"]
        lines.append(f"Agreement: {a['votes']} of {a['of']} candidate answers gave this answer")
    if record["notice"]:
        lines.append(f"Note: {record['notice']}")
    lines += [f"Warning: {w}" for w in record["warnings"]]
    if record["asks"]:
        lines.append(
            "The candidate answers read the question in different ways; the answer above is the "
            "leading reading. The readings (ask the user which was meant):"
        )
        lines += [
            f"  {r['choice']}: {r['summary']} ({r['votes']} vote{'s' if r['votes'] != 1 else ''}"
            f"{', leading' if r['leading'] else ''}): {r['sql']}"
            for r in record["readings"]
        ]
    if result.scripted:
        lines.append("Note: answered by a scripted stand-in model (stored replies, not an LLM).")
    return "\n".join(lines)
