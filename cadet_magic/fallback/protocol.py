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
    (n,) = struct.unpack(">I", _read_exact(read, 4))
    if n > MAX_HEADER:
        raise FrameError(f"header of {n} bytes is too large")
    try:
        header = json.loads(_read_exact(read, n).decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise FrameError(f"the header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise FrameError("the header is not a JSON object")
    (m,) = struct.unpack(">Q", _read_exact(read, 8))
    if m > max_payload:
        raise FrameError(f"payload of {m} bytes is larger than {max_payload}")
    return header, _read_exact(read, m)
