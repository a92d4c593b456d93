"""Files found in a folder others can write to, read and written as data (standard library only).

A notebook's folder is often shared: a cloned repository, a network drive, a Binder image, an
archive someone sent. What lies there may be a symbolic link to a file of the user's
(``.cadet/examples.jsonl -> ../../.bashrc``), a FIFO that blocks whoever opens it, a link to
``/dev/zero`` that never ends, or a file of gigabytes. The files cadet_magic keeps there (kept
answers) and reads there (a notebook's recorded answers) go through this module:

- :func:`read_bytes` opens without blocking (``O_NONBLOCK``: a FIFO opens at once), takes a
  regular file only, and reads at most ``limit`` bytes (a larger file is refused, never read);
  with ``follow=False`` neither the file nor its folder may be a symbolic link (``O_NOFOLLOW``
  on both, the file opened inside the opened folder, so that nothing can swap a link in
  between the check and the open).
- :func:`append_line` creates the folder ``0700`` and the file ``0600`` when they are missing,
  refuses links and anything but a regular file with one name, and appends one line.

Each refusal is a :class:`~cadet_magic.errors.ConfigurationError` with one line naming the path
and what to do.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "kept", "a.jsonl")
    >>> append_line(path, b'{"n":1}', limit=100)
    >>> read_bytes(path, limit=100, follow=False)
    b'{"n":1}\\n'
    >>> oct(os.stat(path).st_mode & 0o777), oct(os.stat(os.path.dirname(path)).st_mode & 0o777)
    ('0o600', '0o700')
    >>> os.symlink(path, os.path.join(folder, "link.jsonl"))
    >>> read_bytes(os.path.join(folder, "link.jsonl"), limit=100, follow=False)
    Traceback (most recent call last):
    ...
    cadet_magic.errors.ConfigurationError: ... is a symbolic link; ...
    >>> read_bytes(os.path.join(folder, "missing"), limit=100) is None
    True
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from cadet_magic.errors import ConfigurationError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: Whether a file can be opened relative to an opened folder here (Linux, macOS; not Windows).
_AT = os.open in os.supports_dir_fd and bool(_NOFOLLOW and _DIRECTORY)

#: The mode of a folder and of a file this module creates: the user's only.
FOLDER_MODE = 0o700
FILE_MODE = 0o600


def _refused(path: str | os.PathLike[str], what: str, advice: str) -> ConfigurationError:
    return ConfigurationError(f"{os.fspath(path)} {what}; {advice}")


_LINK_ADVICE = (
    "cadet_magic reads and writes it only as a real file in a real folder (a link in a shared "
    "folder can point anywhere). Remove the link, or choose another path."
)


def _is_link(path: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _open(path: str, flags: int, *, follow: bool, mode: int = FILE_MODE) -> int:
    """A descriptor of ``path`` opened with ``flags`` (never blocking); with ``follow=False``
    the folder and the file are each opened without following a link."""
    flags |= _NONBLOCK | _CLOEXEC | _BINARY
    if follow:
        return os.open(path, flags, mode)
    folder, name = os.path.split(path)
    for candidate in (folder, path):
        if candidate and _is_link(candidate):
            raise _refused(candidate, "is a symbolic link", _LINK_ADVICE)
    if not _AT:
        return os.open(path, flags | _NOFOLLOW, mode)
    try:
        dfd = os.open(folder or ".", os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refused(folder, "is a symbolic link or not a folder", _LINK_ADVICE) from None
        raise
    try:
        return os.open(name, flags | _NOFOLLOW, mode, dir_fd=dfd)
    finally:
        os.close(dfd)


def _not_regular(path: str) -> ConfigurationError:
    return _refused(
        path,
        "is not a regular file (a FIFO, a device or a folder)",
        "cadet_magic reads and writes only regular files there. Remove it, or choose another path.",
    )


def _check_regular(fd: int, path: str, *, single: bool = False) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _not_regular(path)
    if single and st.st_nlink > 1:
        os.close(fd)
        raise _refused(
            path,
            f"has {st.st_nlink} names (a hard link)",
            "cadet_magic appends only to a file of one name. Copy it to a new file instead.",
        )
    return st


def _open_error(e: OSError, path: str, *, follow: bool) -> ConfigurationError | None:
    """The refusal an ``OSError`` of an open means, None for any other error."""
    if not follow and (e.errno == errno.ELOOP or (e.errno == errno.EMLINK and _NOFOLLOW)):
        return _refused(path, "is a symbolic link", _LINK_ADVICE)  # (FreeBSD says EMLINK)
    if e.errno in (errno.EISDIR, errno.ENXIO, errno.ENODEV):  # ENXIO: a FIFO with no reader
        return _not_regular(path)
    return None


def read_bytes(path: str | os.PathLike[str], *, limit: int, follow: bool = True) -> bytes | None:
    """The contents of ``path`` (None when there is no such file), read as data: a regular
    file of at most ``limit`` bytes; ``follow=False`` refuses a link as the file or its folder.
    Anything else is one :class:`ConfigurationError` line (other ``OSError``\\s propagate)."""
    name = os.fspath(path)
    try:
        fd = _open(name, os.O_RDONLY, follow=follow)
    except FileNotFoundError:
        return None
    except OSError as e:
        refused = _open_error(e, name, follow=follow)
        if refused is not None:
            raise refused from None
        raise
    st = _check_regular(fd, name)
    try:
        if st.st_size > limit:
            raise _too_large(name, st.st_size, limit)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while read
            raise _too_large(name, size, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_large(path: str, size: int, limit: int, *, adding: bool = False) -> ConfigurationError:
    return _refused(
        path,
        f"{'would hold' if adding else 'holds'} more than {limit:,} bytes ({size:,}), more "
        "than cadet_magic reads there",
        f"it was not {'written' if adding else 'read'}. Shorten it, or choose another path.",
    )


def append_line(path: str | os.PathLike[str], line: bytes, *, limit: int) -> None:
    """Appends ``line`` and a newline to ``path``: folder and file created ``0700`` / ``0600``
    when missing, neither may be a link, the file must be regular, of one name, and stay
    within ``limit`` bytes. A refusal is one :class:`ConfigurationError` line; other
    ``OSError``\\s propagate."""
    name = os.fspath(path)
    folder = os.path.dirname(name)
    if folder and not os.path.lexists(folder):
        parent = os.path.dirname(folder)
        if parent:
            Path(parent).mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            pass
    try:
        fd = _open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, follow=False)
    except OSError as e:
        refused = _open_error(e, name, follow=False)
        if refused is not None:
            raise refused from None
        raise
    st = _check_regular(fd, name, single=True)
    try:
        data = line.rstrip(b"\n") + b"\n"
        if st.st_size + len(data) > limit:
            raise _too_large(name, st.st_size + len(data), limit, adding=True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
