"""A result as plain data and back (stdlib only), for stores that keep it outside the process.

:func:`to_plain` turns an :class:`~cadet_magic.result.AskResult` (or any of the frozen records
it holds) into dictionaries, lists and plain values: strings, numbers, booleans, None, bytes,
dates and times, decimals and UUIDs (what a JSON or msgpack store keeps without running code
when it reads them back); an enum as its value, any other value as its text, a DataFrame as
None. :func:`from_plain` builds the records again from their type annotations: each dataclass
from its fields, each enum from its value, a tuple as a tuple. LangGraph's checkpoints keep a
result this way (:mod:`cadet_magic.langgraph`).

Example:
    >>> from cadet_magic.result import AskResult, Attempt, Outcome, Tokens
    >>> r = AskResult("q", ok=True, rows=[(1, "a")], columns=["n", "s"],
    ...               attempts=[Attempt(1, "SELECT 1", Outcome.ok, tokens=Tokens(5, 1))])
    >>> data = to_plain(r)
    >>> data["rows"], data["attempts"][0]["tokens"]
    ([[1, 'a']], [5, 1])
    >>> back = from_plain(AskResult, data)
    >>> back == r, back.rows, back.attempts[0].tokens
    (True, [(1, 'a')], Tokens(input=5, output=1))
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import types
import typing
import uuid
from collections.abc import Mapping
from typing import Any

#: Values kept as they are (a store reads them back without constructing anything else).
PLAIN = (
    str,
    int,
    float,
    bool,
    bytes,
    type(None),
    datetime.date,
    datetime.time,
    datetime.timedelta,
    decimal.Decimal,
    uuid.UUID,
)


def to_plain(value: Any) -> Any:
    """``value`` as plain data (see the module)."""
    if isinstance(value, enum.Enum):
        return to_plain(value.value)
    if isinstance(value, PLAIN):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    kind = type(value).__module__.split(".")[0]
    if kind == "pandas":  # a DataFrame: the rows hold its values
        return None
    if kind == "numpy" and hasattr(value, "item"):
        return to_plain(value.item())
    return str(value)


def _union(hint: Any, data: Any) -> Any:
    options = [a for a in typing.get_args(hint) if a is not type(None)]
    return from_plain(options[0], data) if len(options) == 1 else data


def _sequence(hint: Any, data: Any) -> Any:
    origin, args = typing.get_origin(hint) or hint, typing.get_args(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_plain(args[0], v) for v in data)
        if args:
            return tuple(from_plain(a, v) for a, v in zip(args, data, strict=False))
        return tuple(data)
    return [from_plain(args[0] if args else Any, v) for v in data]


def from_plain(hint: Any, data: Any) -> Any:
    """The value of type ``hint`` (a class or an annotation) that ``data`` is the plain form
    of; what the annotation does not say (``Any``, a union of several types) stays plain."""
    if data is None or hint is Any:
        return data
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return _union(hint, data)
    if origin in (list, tuple) or hint in (list, tuple):
        return _sequence(hint, data)
    if origin is dict or hint is dict:
        args = typing.get_args(hint)
        return {k: from_plain(args[1] if args else Any, v) for k, v in data.items()}
    if not isinstance(hint, type):
        return data
    if issubclass(hint, enum.Enum):
        return hint(data)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(
            **{
                f.name: from_plain(hints.get(f.name, Any), data[f.name])
                for f in dataclasses.fields(hint)
                if f.init and f.name in data
            }
        )
    if issubclass(hint, tuple) and hasattr(hint, "_fields"):  # a NamedTuple
        hints = typing.get_type_hints(hint)
        return hint(
            *(from_plain(hints.get(n, Any), v) for n, v in zip(hint._fields, data, strict=False))
        )
    return data
