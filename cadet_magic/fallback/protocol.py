"""Frames exchanged with the fallback's worker process (standard library only).

A frame is a JSON header and an optional binary payload (Arrow IPC bytes), each preceded by
its length: ``>I`` header length, the UTF-8 JSON header, ``>Q`` payload length, the payload.
Nothing in a frame is ever unpickled or evaluated: the header goes through :func:`json.loads`
only, the payload through pyarrow's IPC reader only.

Example:
    >>> import io
    >>> buf = io.BytesIO()
    >>> write_frame(buf, {"event": "ready"}, b"xyz")
    >>> _ = buf.seek(0)
    >>> read_frame(buf)
    ({'event': 'ready'}, b'xyz')
"""

from __future__ import annotations

import json
import struct
from typing import Any, BinaryIO

#: Largest header accepted (bytes): headers carry short status fields only.
MAX_HEADER = 1 << 20

#: Largest payload accepted (bytes): a result bigger than this is refused, not read.
MAX_PAYLOAD = 256 << 20


class FrameError(Exception):
    """The stream ended early or held something that is not a frame."""


class PayloadTooLarge(FrameError):
    """A frame announced a payload larger than the reader accepts (nothing of it was read)."""


def encode_frame(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """One frame as bytes."""
    head = json.dumps(header, ensure_ascii=True).encode()
    return struct.pack(">I", len(head)) + head + struct.pack(">Q", len(payload)) + payload


def write_frame(stream: BinaryIO, header: dict[str, Any], payload: bytes = b"") -> None:
    """Writes one frame and flushes."""
    stream.write(encode_frame(header, payload))
    stream.flush()


def _read_exact(read: Any, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = read(min(left, 1 << 20))
        if not chunk:
            raise FrameError("the stream ended inside a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(stream: Any, max_payload: int = MAX_PAYLOAD) -> tuple[dict[str, Any], bytes]:
    """Reads one frame from ``stream`` (anything with ``read``); :class:`FrameError` when the
    stream ends first or a length exceeds its limit."""
    return read_frame_from(stream.read, max_payload)


def read_frame_from(read: Any, max_payload: int = MAX_PAYLOAD) -> tuple[dict[str, Any], bytes]:
    """:func:`read_frame` on a ``read(n)`` function (``os.read`` bound to a descriptor)."""
    header = read_header_from(read)
    return header, read_payload_from(read, max_payload)


def read_header_from(read: Any) -> dict[str, Any]:
    """The first half of a frame: its JSON header (the payload is read separately, so the
    fallback's child can read its limits, confine itself, and only then read the data)."""
    (n,) = struct.unpack(">I", _read_exact(read, 4))
    if n > MAX_HEADER:
        raise FrameError(f"header of {n} bytes is too large")
    try:
        header = json.loads(_read_exact(read, n).decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise FrameError(f"the header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise FrameError("the header is not a JSON object")
    return header


def read_payload_from(read: Any, max_payload: int = MAX_PAYLOAD) -> bytes:
    """The second half of a frame: its payload, refused unread (:class:`PayloadTooLarge`)
    when it announces more than ``max_payload`` bytes."""
    (m,) = struct.unpack(">Q", _read_exact(read, 8))
    if m > max_payload:
        raise PayloadTooLarge(f"payload of {m} bytes is larger than {max_payload}")
    return _read_exact(read, m)


# -- the shape of an Arrow IPC stream, read before pyarrow decodes anything -----------------


class StreamShape(tuple):
    """What an Arrow IPC stream holds, from its message headers alone: ``columns`` (top-level
    fields), ``rows``, ``cells`` (the lengths of every array node, nested and dictionary
    ones included: what decoding would materialise), ``body`` (bytes of buffers) and
    ``compressed`` (whether any batch says its buffers are compressed)."""

    __slots__ = ()
    _fields = ("columns", "rows", "cells", "body", "compressed")

    def __new__(cls, columns: int, rows: int, cells: int, body: int, compressed: bool):
        return super().__new__(cls, (columns, rows, cells, body, compressed))

    columns = property(lambda self: self[0])
    rows = property(lambda self: self[1])
    cells = property(lambda self: self[2])
    body = property(lambda self: self[3])
    compressed = property(lambda self: self[4])


def _table_fields(buf: bytes, pos: int) -> Any:
    """A flatbuffer table at ``pos``: ``field(i)`` is the absolute offset of field ``i``, or
    None when absent (the format's own layout: a signed offset back to a vtable of uint16
    field offsets)."""
    vtable = pos - struct.unpack_from("<i", buf, pos)[0]
    size = struct.unpack_from("<H", buf, vtable)[0]

    def field(i: int) -> int | None:
        slot = 4 + 2 * i
        if slot + 2 > size:
            return None
        off = struct.unpack_from("<H", buf, vtable + slot)[0]
        return pos + off if off else None

    return field


def _target(buf: bytes, at: int) -> int:
    return at + struct.unpack_from("<I", buf, at)[0]


def _batch_counts(buf: bytes, pos: int) -> tuple[int, int, bool]:
    """A RecordBatch table: its row count, the summed lengths of its nodes, compression."""
    field = _table_fields(buf, pos)
    length = struct.unpack_from("<q", buf, f)[0] if (f := field(0)) is not None else 0
    cells = 0
    if (f := field(1)) is not None:
        vec = _target(buf, f)
        (n,) = struct.unpack_from("<I", buf, vec)
        for i in range(n):
            node_length, nulls = struct.unpack_from("<qq", buf, vec + 4 + 16 * i)
            if node_length < 0 or nulls < 0:
                raise FrameError("an Arrow node has a negative length")
            cells += node_length
    if length < 0:
        raise FrameError("an Arrow batch has a negative length")
    return length, cells, field(3) is not None


def stream_shape(payload: bytes) -> StreamShape:
    """Reads the message headers of an Arrow IPC stream (standard library only) and says what
    decoding it would produce, so a result is bounded by its decoded size *before* pyarrow
    or pandas touch it: a column of 10**8 nulls is a few bytes of IPC and gigabytes as
    Python objects; a compressed buffer names its own decompressed size.

    Raises :class:`FrameError` for anything that is not a well-formed stream.
    """
    buf = bytes(payload)
    pos = columns = rows = cells = body = 0
    compressed = False
    try:
        while pos + 4 <= len(buf):
            (n,) = struct.unpack_from("<i", buf, pos)
            pos += 4
            if n == -1:  # continuation marker, then the length
                (n,) = struct.unpack_from("<i", buf, pos)
                pos += 4
            if n == 0:
                break  # end of stream
            if n < 0 or pos + n > len(buf):
                raise FrameError("an Arrow message runs past the payload")
            meta = buf[pos : pos + n]
            message = _table_fields(meta, struct.unpack_from("<I", meta, 0)[0])
            kind = meta[k] if (k := message(1)) is not None else 0
            length = struct.unpack_from("<q", meta, f)[0] if (f := message(3)) is not None else 0
            if length < 0:
                raise FrameError("an Arrow message has a negative body length")
            header = _target(meta, f) if (f := message(2)) is not None else None
            if header is not None and kind == 1:  # Schema: its top-level fields
                if (f := _table_fields(meta, header)(1)) is not None:
                    columns = struct.unpack_from("<I", meta, _target(meta, f))[0]
            elif header is not None and kind in (2, 3):  # DictionaryBatch, RecordBatch
                batch = header
                if kind == 2:
                    data = _table_fields(meta, header)(1)
                    if data is None:
                        continue
                    batch = _target(meta, data)
                n_rows, n_cells, packed = _batch_counts(meta, batch)
                rows += n_rows if kind == 3 else 0
                cells += n_cells
                compressed = compressed or packed
            elif kind not in (0, 1):
                raise FrameError(f"an Arrow message of kind {kind} is not a table")
            pos += n + length
            body += length
    except (struct.error, IndexError):
        raise FrameError("the result is not a well-formed Arrow stream") from None
    return StreamShape(columns, rows, cells, body, compressed)


#: Bytes one decoded cell is counted as (a pandas value or object pointer).
CELL_BYTES = 8


def decoded_bytes(shape: StreamShape) -> int:
    """What a result would take once decoded: every array cell (nested ones included, each
    at least :data:`CELL_BYTES`; every column counted for at least one row) plus its buffers.

    Example:
        >>> decoded_bytes(StreamShape(columns=1, rows=10**8, cells=10**8, body=0, compressed=False))
        1600000000
    """
    return (shape.cells + max(shape.rows, 1) * shape.columns) * CELL_BYTES + shape.body


def result_refusal(shape: StreamShape, row_limit: Any, result_bytes: Any) -> str | None:
    """Why a result may not be brought into the kernel (one line), or None. At most
    ``row_limit`` + 1 rows (the one more says the answer was cut) and ``result_bytes``
    decoded; compressed buffers are refused (they name their own decompressed size).

    Example:
        >>> shape = StreamShape(columns=1, rows=10**8, cells=10**8, body=0, compressed=False)
        >>> print(result_refusal(shape, 1000, 64 << 20))
        the result has 100000000 rows x 1 column(s), more than row_limit (1000) allows; return fewer rows (aggregate, or .head())
        >>> print(result_refusal(shape, 10**9, 64 << 20))
        the result would take 1525 MiB decoded (100000000 rows x 1 column(s)), more than result_bytes (64 MiB); return fewer rows or columns
    """
    size = f"{shape.rows} rows x {shape.columns} column(s)"
    if shape.compressed:
        return "the result's Arrow buffers are compressed, which is not accepted"
    if isinstance(row_limit, int) and shape.rows > row_limit + 1:
        return (
            f"the result has {size}, more than row_limit ({row_limit}) allows; "
            "return fewer rows (aggregate, or .head())"
        )
    decoded = decoded_bytes(shape)
    if isinstance(result_bytes, int) and decoded > result_bytes:
        return (
            f"the result would take {decoded >> 20} MiB decoded ({size}), more than "
            f"result_bytes ({result_bytes >> 20} MiB); return fewer rows or columns"
        )
    return None


def code_lines(code: str) -> int:
    """The lines ``code`` has (what a line number of it can be at most).

    Example:
        >>> code_lines("a = 1\\nresult = a"), code_lines("")
        (2, 1)
    """
    return code.count("\n") + 1


def reported_line(value: Any, lines: int) -> int | None:
    """A line number the child reported, kept only when the code has that line: the child runs
    whatever the model wrote, so any other number it reports is data, not a place.

    Example:
        >>> reported_line(3, 5), reported_line(6, 5), reported_line(10**400, 5), reported_line(True, 5)
        (3, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= lines else None
