"""Files in a shared folder read and written as data: what each hostile thing in the folder
gives (a refusal in one line, never a block, never a read without end, never a write through
a link), on the real file system."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from cadet_magic.errors import ConfigurationError
from cadet_magic.shared_files import append_line, read_bytes

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX links, FIFOs and modes")


def plant(folder: Path, kind: str) -> Path:
    """``folder/.cadet/x.jsonl`` made into ``kind``; the path returned."""
    target = folder / ".cadet" / "x.jsonl"
    victim = folder / "victim"
    victim.write_text("the user's own file\n")
    if kind == "folder_link":
        (folder / "elsewhere").mkdir()
        (folder / ".cadet").symlink_to(folder / "elsewhere")
        return target
    target.parent.mkdir()
    if kind == "file_link":
        target.symlink_to(victim)
    elif kind == "dangling_link":
        target.symlink_to(folder / "nothing-here")
    elif kind == "dev_zero_link":
        target.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    elif kind == "hard_link":
        os.link(victim, target)
    return target


#: (what lies in the folder, what reading gives, what appending gives): "refused ..." is one
#: ConfigurationError line holding the words.
HOSTILE = [
    ("file_link", "refused symbolic link", "refused symbolic link"),
    ("dangling_link", "refused symbolic link", "refused symbolic link"),
    ("folder_link", "refused symbolic link", "refused symbolic link"),
    ("dev_zero_link", "refused symbolic link", "refused symbolic link"),
    ("fifo", "refused not a regular file", "refused not a regular file"),
    ("folder", "refused not a regular file", "refused"),
    ("hard_link", "read", "refused hard link"),
]


def run_within(fn, seconds: float = 60):
    """``fn()``'s value or exception, from a thread (a blocked open would never return: this
    is a hang check, not a timing figure)."""
    out: list = []

    def body() -> None:
        try:
            out.append(("value", fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out.append(("error", e))

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked"
    return out[0]


@pytest.mark.parametrize("kind,read,append", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_things_in_the_folder(tmp_path, kind, read, append):
    target = plant(tmp_path, kind)
    victim = (tmp_path / "victim").read_text()
    for action, expected in (
        (lambda: read_bytes(target, limit=1000, follow=False), read),
        (lambda: append_line(target, b'{"sql":"x"}', limit=1000), append),
    ):
        how, value = run_within(action)
        if expected == "read":
            assert how == "value" and value == b"the user's own file\n"
            continue
        assert how == "error" and isinstance(value, ConfigurationError), value
        line = str(value)
        assert "\n" not in line and str(target.parent) in line
        assert expected.removeprefix("refused").strip() in line
    assert (tmp_path / "victim").read_text() == victim  # never written through


def test_created_for_the_user_only_and_bounded(tmp_path):
    path = tmp_path / "deep" / ".cadet" / "kept.jsonl"
    append_line(path, b"one", limit=10)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with pytest.raises(ConfigurationError, match="more than 10 bytes"):
        append_line(path, b"a longer line", limit=10)
    assert read_bytes(path, limit=10) == b"one\n"
    path.write_text("x" * 11)
    with pytest.raises(ConfigurationError, match="more than 10 bytes"):
        read_bytes(path, limit=10)


def test_following_links_is_for_the_users_own_path_only(tmp_path):
    real = tmp_path / "real.ipynb"
    real.write_text("{}")
    (tmp_path / "link.ipynb").symlink_to(real)
    assert read_bytes(tmp_path / "link.ipynb", limit=10) == b"{}"
    (tmp_path / "zero.ipynb").symlink_to("/dev/zero")
    how, value = run_within(lambda: read_bytes(tmp_path / "zero.ipynb", limit=10))
    assert how == "error" and "not a regular file" in str(value)
