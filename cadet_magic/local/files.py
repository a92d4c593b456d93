"""The cache folder's files opened as data a writer of the folder may have planted (stdlib only).

The local model's folder (``CADET_LOCAL_DIR`` may name a shared one) holds what someone else
could have put there: a ``.partial`` file that is a symbolic link to a file of the user's (the
download would append to it, and cut it), a ``.lock`` link (opening it for writing would empty
its target), a wheel in ``parts/``. So every file of the folder is opened without following a
link (``O_NOFOLLOW``: the open itself fails on one, nothing can swap one in between a check and
the open) and only when it is a regular file; a link found where a file of ours belongs is
removed (the link, never what it points at).

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> target, link = os.path.join(folder, "mine"), os.path.join(folder, "x.partial")
    >>> _ = open(target, "w").write("keep me")
    >>> os.symlink(target, link)
    >>> drop_planted(link), os.path.exists(link), open(target).read()
    (True, False, 'keep me')
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from cadet_magic.errors import LocalModelError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
BINARY = getattr(os, "O_BINARY", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CHUNK = 1 << 22


def drop_planted(path: Path | str) -> bool:
    """Removes ``path`` when it is a symbolic link or not a regular file (a FIFO, a device);
    True when it did. A folder there is refused with one line (nothing of it is removed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISREG(st.st_mode):
        return False
    if stat.S_ISDIR(st.st_mode):
        raise LocalModelError(
            f"{path} is a folder where the installer keeps a file: remove it, then run the "
            "install again."
        )
    os.unlink(path)
    return True


def open_file(path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """A descriptor of the regular file ``path`` (``flags`` as for :func:`os.open`), never
    through a symbolic link; :class:`LocalModelError` (one line) for a link or another kind of
    file, ``FileNotFoundError`` when there is none."""
    try:
        fd = os.open(path, flags | NOFOLLOW | CLOEXEC | BINARY | NONBLOCK, mode)
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            raise
        if os.path.islink(path):
            raise LocalModelError(
                f"{path} is a symbolic link: files of the cache folder are not followed "
                "through links. Remove it, then run the install again."
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LocalModelError(
            f"{path} is not a regular file: remove it, then run the install again."
        )
    return fd


def sha256_of(fd: int) -> str:
    """SHA-256 of what descriptor ``fd`` holds from its start (its position is left at the end)."""
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, CHUNK):
        digest.update(chunk)
    return digest.hexdigest()
