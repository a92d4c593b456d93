"""The fallback's audit hook: while the model's pandas code runs in-process, file writes, reads
and directory listings outside the Python installation, processes, sockets and database
connections are refused (stdlib only).

A second line of defence behind the syntax check, for what the check cannot see (pandas
dispatching a method name built at run time, ``df.agg("to_" + "csv", ...)``). The hook is
installed once per process (audit hooks cannot be removed) and acts only while :data:`ACTIVE`
is set, i.e. while the fallback's code runs (:mod:`cadet_magic.fallback.in_process` sets it).

Example:
    >>> _open_allowed("/tmp/out.csv", "w"), _listing_allowed(None) in (True, False)
    (False, True)
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
from typing import Any

#: Set while the fallback's code runs: the hook does nothing otherwise.
ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("cadet_fallback", default=False)
_HOOKED = False

_BLOCKED_PREFIXES = (
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.startfile",
    "os.remove",
    "os.unlink",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.truncate",
    "os.link",
    "os.symlink",
    "os.utime",
    "os.putenv",
    "os.unsetenv",
    "os.chdir",
    "subprocess.",
    "socket.",
    "shutil.",
    "ctypes.",
    "pty.",
    "webbrowser.",
    "urllib.",
    "http.",
    "ftplib.",
    "smtplib.",
    "sqlite3.connect",
    "glob.",
    "builtins.input",
    "pickle.find_class",
)
_MODULE_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pyd", ".pth")


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    """Folders of the Python installation and its packages (never the file-system root)."""
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs |= {os.path.dirname(os.__file__), "/usr/share/zoneinfo"}
    for name in ("pandas", "numpy"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(path))))
    full = {os.path.join(os.path.abspath(d), "") for d in dirs if d}
    return tuple(sorted(d for d in full if d != os.path.join(os.path.abspath(os.sep), "")))


def _open_allowed(path: Any, mode: Any) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return False
    if isinstance(path, int):
        return False
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        return False
    full = os.path.abspath(path)
    if full.startswith(_library_dirs()):
        return True
    # Modules imported from the other sys.path entries (the notebook's folder, ...).
    return full.endswith(_MODULE_SUFFIXES) and full.startswith(_path_entries())


def _path_entries() -> tuple[str, ...]:
    return tuple(
        os.path.join(os.path.abspath(p or "."), "") for p in sys.path if isinstance(p, str)
    )


def _listing_allowed(path: Any) -> bool:
    """Directory listings the import system needs: sys.path entries and library folders."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if path is None or path == "":
        path = "."
    if not isinstance(path, str):
        return False
    full = os.path.join(os.path.abspath(path), "")
    return full in _path_entries() or full.startswith(_library_dirs())


def _audit(event: str, args: tuple) -> None:
    if not ACTIVE.get():
        return
    if event == "open":
        path, mode = (args + (None, None))[:2]
        if not _open_allowed(path, mode):
            raise PermissionError(f"the fallback code may not open files ({path!r})")
    elif event in ("os.listdir", "os.scandir"):
        path = args[0] if args else None
        if not _listing_allowed(path):
            raise PermissionError(f"the fallback code may not list directories ({path!r})")
    elif event.startswith(_BLOCKED_PREFIXES):
        raise PermissionError(
            f"the fallback code may not reach files, the network or processes ({event})"
        )


def install_audit_hook() -> None:
    """Installs the audit hook once per process; it acts only while fallback code runs."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
