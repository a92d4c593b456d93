"""The result of the fallback's worker as it crosses into the kernel: Arrow IPC bytes out and
back, bounded and plain (pyarrow imported lazily, inside the functions).

The kernel sends ``df`` as an Arrow IPC stream (:func:`to_ipc`) and reads the worker's result
with :func:`from_ipc`: bounded by its decoded size from the stream's headers alone before
pyarrow decodes anything, then read with only plain Arrow types (no extension, view,
run-end or union types, no time zone outside the zone database, no deep nesting) and without
pandas metadata. Anything else is a :class:`ResultRefused` with one line.

Example:
    >>> _known_zone("UTC"), _known_zone("+02:00"), _known_zone("dateutil//etc/passwd")
    (True, True, False)
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.fallback.protocol import FrameError, result_refusal, stream_shape


def to_ipc(df: Any) -> bytes:
    """``df`` as Arrow IPC stream bytes (columns Arrow cannot type are sent as text)."""
    import pyarrow as pa

    from cadet_magic.fallback.worker_child import arrow_table, ipc_bytes

    return ipc_bytes(arrow_table(df, pa), pa)


class ResultRefused(Exception):
    """The worker's result may not be brought into the kernel (one line says why)."""


#: Nesting of list and struct types accepted in a result.
MAX_DEPTH = 4
_OFFSET_TZ = re.compile(r"[+-]\d{2}:\d{2}")


def _known_zone(tz: str) -> bool:
    """A time zone pandas may look up without reading a file we do not choose: UTC, a fixed
    offset, or a key of the system's zone database (``dateutil/...`` names a path)."""
    if tz == "UTC" or _OFFSET_TZ.fullmatch(tz):
        return True
    import zoneinfo

    return tz in zoneinfo.available_timezones()


def _check_type(t: Any, pa: Any, depth: int = 0) -> str | None:
    """Why an Arrow type may not enter the kernel, or None: extension types, views (whose
    values may overlap, so decoding can exceed the buffers), run-end encoding, unions, time
    zones outside the zone database, nesting deeper than :data:`MAX_DEPTH`."""
    if isinstance(t, pa.ExtensionType):
        return "an extension type"
    views = ("is_string_view", "is_binary_view", "is_list_view", "is_large_list_view")
    odd = any(getattr(pa.types, f, lambda _: False)(t) for f in views)
    if odd or pa.types.is_run_end_encoded(t) or pa.types.is_union(t):
        return f"type {t}"
    if pa.types.is_timestamp(t) and t.tz is not None and not _known_zone(t.tz):
        return f"time zone {t.tz!r}"
    if pa.types.is_dictionary(t):
        return _check_type(t.value_type, pa, depth)
    children = [t.field(i).type for i in range(t.num_fields)] if t.num_fields else []
    if children and depth >= MAX_DEPTH:
        return f"nesting deeper than {MAX_DEPTH}"
    for child in children:
        if (why := _check_type(child, pa, depth + 1)) is not None:
            return why
    return None


def from_ipc(payload: bytes, row_limit: int | None = None, result_bytes: int | None = None) -> Any:
    """A DataFrame from Arrow IPC bytes written by the worker: first bounded by its decoded
    size from the stream's headers alone (:func:`~cadet_magic.fallback.protocol.stream_shape`),
    then read with only plain Arrow types, no pandas metadata (which names dtypes and index
    rebuilding). Raises :class:`ResultRefused` with one line."""
    import pyarrow as pa

    try:
        shape = stream_shape(payload)
    except FrameError as e:
        raise ResultRefused(str(e)) from None
    refusal = result_refusal(shape, row_limit, result_bytes)
    if refusal:
        raise ResultRefused(refusal)
    table = pa.ipc.open_stream(pa.py_buffer(payload)).read_all()
    for field in table.schema:
        if (why := _check_type(field.type, pa)) is not None:
            raise ResultRefused(f"the result's column {field.name[:60]!r} has {why}")
    table.validate(full=True)
    return table.replace_schema_metadata(None).to_pandas()
