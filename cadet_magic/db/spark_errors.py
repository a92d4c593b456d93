"""pyspark's errors (classic and Spark Connect) read into one portable :class:`EngineError`.

The error condition (``UNRESOLVED_COLUMN``...) is the code and the head of the kinds, with the
SQLSTATE, the message parameters and the message as the diagnosis reads it
(:func:`spark_plain`: no ``[CONDITION]`` prefix or ``SQLSTATE`` tail, names double-quoted).
pyspark is never imported here: its errors are read through their own methods.

Example:
    >>> spark_names("A column `o`.`amout` cannot be resolved.")
    'A column "o.amout" cannot be resolved.'
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.db.base import read_exception
from cadet_magic.db.error_table import ErrorTable, Name, Reading, Rule, datetime_state
from cadet_magic.errors import EngineError, ErrorKind, exception_chain


def _condition(e: BaseException) -> str:
    get = getattr(e, "getCondition", None) or getattr(e, "getErrorClass", None)
    try:
        return str(get() or "") if get else ""
    except Exception:  # noqa: BLE001
        return ""


def is_cancel(e: BaseException) -> bool:
    text = f"{_condition(e)} {e}"
    return "OPERATION_CANCELED" in text or "cancelled" in text.lower() or "canceled" in text


def is_out_of_memory(e: BaseException) -> bool:
    return isinstance(e, MemoryError) or "OutOfMemoryError" in str(e)[:2000]


_SPARK_NAMES = re.compile(r"`((?:[^`]|``)*)`((?:\.`(?:[^`]|``)*`)*)")
_SPARK_TAIL = re.compile(r"\s*SQLSTATE: \w+.*$")
_SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")


def spark_names(text: str) -> str:
    r"""Spark's backquoted names as double-quoted dotted ones (``\`t\`.\`x\``` -> ``"t.x"``),
    so the diagnosis reads them like other engines' names.

    Example:
        >>> spark_names("A column `o`.`amout` cannot be resolved.")
        'A column "o.amout" cannot be resolved.'
    """

    def dotted(m: re.Match) -> str:
        parts = [m.group(1)] + re.findall(r"\.`((?:[^`]|``)*)`", m.group(2))
        return '"' + ".".join(p.replace("``", "`") for p in parts) + '"'

    return _SPARK_NAMES.sub(dotted, text)


def _spark_call(e: BaseException, method: str) -> object:
    """pyspark's error API (``getCondition``, ``getSqlState`` ...), or None for other errors."""
    f = getattr(e, method, None)
    if not callable(f) or not type(e).__module__.startswith("pyspark"):
        return None
    try:
        return f()
    except Exception:  # noqa: BLE001 - an error without that information
        return None


def spark_plain(message: str, condition: str) -> str:
    """Spark's message as the diagnosis reads it: the first line without its ``[CONDITION]``
    prefix and ``SQLSTATE`` tail, names double-quoted.

    Example:
        >>> spark_plain("[UNRESOLVED_COLUMN] A column `amout` cannot be resolved. "
        ...             "SQLSTATE: 42703; line 1 pos 7;", "UNRESOLVED_COLUMN")
        'A column "amout" cannot be resolved.'
    """
    first, sep, rest = message.strip().partition("\n")
    first = first.strip()
    if first.startswith("[" + condition + "]"):
        first = first[len(condition) + 2 :].strip()
    return spark_names(_SPARK_TAIL.sub("", first).strip() + sep + rest)


def spark_error(error: BaseException) -> EngineError:
    """A pyspark error (classic or Spark Connect) as an :class:`EngineError`: its error
    condition (the code, its head one of the kinds), SQLSTATE, message parameters (``details``)
    and its message as the diagnosis reads it (:func:`spark_plain`)."""
    kinds: list[str] = []
    condition = ""
    sqlstate = None
    details: dict[str, Any] = {}
    plain = None
    for e in exception_chain(error):
        kinds.append(type(e).__name__)
        found = _spark_call(e, "getCondition") or _spark_call(e, "getErrorClass")
        if isinstance(found, str) and found and not condition:
            condition = found
            kinds.append(condition.split(".")[0])
            details = {"condition": condition}
            details["parameters"] = _spark_call(e, "getMessageParameters") or {}
            state = _spark_call(e, "getSqlState")
            if isinstance(state, str) and _SQLSTATE.match(state):
                sqlstate = state
            msg = _spark_call(e, "getMessage")
            if isinstance(msg, str) and msg.strip():
                plain = msg
    if not condition:
        return read_exception(error)
    base = read_exception(error)
    return EngineError(
        base.message,
        plain=spark_plain(plain if plain is not None else base.text, condition),
        sqlstate=sqlstate,
        code=condition,
        kinds=tuple(kinds),
        details=details,
    )


def _datetime_cast(r: Reading) -> bool:
    """A cast of a malformed value to a date or timestamp (``CAST_INVALID_INPUT``)."""
    target = str((r.details.get("parameters") or {}).get("targetType", "")).upper()
    condition = str(r.details.get("condition", ""))
    return "DATE" in target or "TIMESTAMP" in target or "DATETIME" in condition or datetime_state(r)


K = ErrorKind

#: Spark's errors: its error conditions (the head of the kinds) and its wording.
SPARK = ErrorTable(
    "spark",
    driver=spark_error,
    rules=(
        Rule(K.timeout, classes=("OPERATION_CANCELED",)),
        Rule(
            K.aggregation_error,
            classes=(
                "MISSING_AGGREGATION",
                "MISSING_GROUP_BY",
                "GROUP_BY_AGGREGATE",
                "GROUP_BY_POS_AGGREGATE",
                "INVALID_WHERE_CONDITION",
                "NESTED_AGGREGATE_FUNCTION",
            ),
        ),
        Rule(
            K.join_error,
            classes=(
                "AMBIGUOUS_REFERENCE",
                "AMBIGUOUS_COLUMN_OR_FIELD",
                "AMBIGUOUS_LATERAL_COLUMN_ALIAS",
            ),
        ),
        Rule(K.column_not_found, classes=("UNRESOLVED_COLUMN", "UNRESOLVED_FIELD")),
        Rule(K.table_not_found, classes=("TABLE_OR_VIEW_NOT_FOUND",)),
        Rule(K.division_by_zero, classes=("DIVIDE_BY_ZERO",)),
        Rule(
            K.datetime_format,
            classes=("CAST_INVALID_INPUT", "INCONSISTENT_BEHAVIOR_CROSS_VERSION"),
            check=_datetime_cast,
        ),
        Rule(K.function_not_found, classes=("UNRESOLVED_ROUTINE", "WRONG_NUM_ARGS")),
        Rule(
            K.type_mismatch,
            classes=("DATATYPE_MISMATCH", "CAST_INVALID_INPUT", "CAST_OVERFLOW", "INVALID_FORMAT"),
        ),
        Rule(K.syntax_error, classes=("PARSE_SYNTAX_ERROR",)),
    ),
    names=(
        Name(K.column_not_found, r'with name "([^"]+)" cannot be resolved'),
        Name(K.table_not_found, r'The table or view "([^"]+)" cannot be found'),
        Name(K.join_error, r'Reference "([^"]+)" is ambiguous'),
        Name(K.aggregation_error, r'non-aggregating expression "([^"]+)"'),
        Name(K.function_not_found, r'Cannot resolve routine "([^"]+)"'),
        Name(K.function_not_found, r'^The "(\w+)" requires \d+ parameters'),
        Name(K.syntax_error, r"near '([^\s']+)"),
    ),
    proposals=("Did you mean",),
)
