"""The ``local`` model spec: the installed model run in this kernel, and the default model.

``%%ask --model local`` (or ``model="local"``) loads the file ``python -m cadet_magic.local
install`` put in the cache folder, once per kernel, with llama.cpp's threads and context sized
to the machine (:mod:`cadet_magic.local.machine`) and greedy replies. With no model configured
at all, :func:`default_model` uses it when it is installed, and its label says so; when it is
not, one line names the two ways to get a model.

What can stop it, one line each, the kernel untouched: the model not installed, its file
changed or incomplete (its size and SHA-256 are checked against the pin whenever the file is
not the one last checked), llama-cpp-python missing, llama.cpp crashing on this CPU (asked in a
child process first, :mod:`cadet_magic.local.probe`), too little memory.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from cadet_magic.errors import LocalModelError, NoModelError
from cadet_magic.llm.llamacpp import LlamaCppChatModel, load_gguf
from cadet_magic.local.model_store import checked_record, model_file, write_record
from cadet_magic.local.pin import PIN

#: The spec.
SPEC = "local"
INSTALL = "python -m cadet_magic.local install"
#: The model as the answer names it.
LABEL = f"local: {PIN.name}, run in this kernel"
DEFAULT_LABEL = f"local (no model configured, so the installed local model): {PIN.name}"

#: The model loaded in this process: (file, size, mtime) -> (llama, context size).
_LOADED: dict[tuple[str, int, int], tuple[Any, int]] = {}
_LOCK = threading.Lock()


def installed() -> bool:
    """True when the model file is in the cache folder (checked or not)."""
    return sys.platform != "emscripten" and model_file().is_file()


def check_file(path: Path) -> None:
    """Raises :class:`LocalModelError` unless ``path`` is the pinned file (a file checked
    before and unchanged since is not read again; a link is never followed)."""
    if path.is_symlink():
        raise LocalModelError(
            f"The local model file {path} is a symbolic link, which the cache folder's files "
            f"never are: run {INSTALL} to replace it with the model."
        )
    if not path.is_file():
        raise LocalModelError(
            f"The local model is not installed (no file at {path}): run {INSTALL} (1.1 GB, "
            "once), or name another model with --model."
        )
    record = checked_record(path)
    if record is not None and record.matches(path):
        return
    size = path.lstat().st_size
    if size != PIN.size:
        raise LocalModelError(
            f"The local model file {path} has {size:,} bytes, not the pinned {PIN.size:,}: "
            f"it is incomplete or another file; run {INSTALL} to download it again."
        )
    from cadet_magic.local.download import file_sha256

    if file_sha256(path) != PIN.sha256:
        raise LocalModelError(
            f"The local model file {path} is corrupt: its SHA-256 does not match the pin; run "
            f"{INSTALL} to download it again."
        )
    write_record(path, "checked in place")


def _require_llama_cpp() -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise LocalModelError(
            "The local model is downloaded but llama-cpp-python, which runs it, is not "
            f"installed in this kernel's environment ({sys.prefix}): run {sys.executable} -m "
            "cadet_magic.local install."
        ) from None


def load_llama(path: Path) -> tuple[Any, int]:
    """llama.cpp's model over ``path`` and its context size, loaded once per process."""
    from cadet_magic.local.machine import choose_fit, threads
    from cadet_magic.local.probe import require_runnable

    if not path.is_file():
        check_file(path)  # says it is not installed
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        check_file(path)
        _require_llama_cpp()
        require_runnable(path)
        fit = choose_fit(PIN)
        llama = load_gguf(path, fit.n_ctx, threads(), repack=fit.repack)
        _LOADED.clear()  # a changed file: the old model goes when nothing holds it
        _LOADED[key] = (llama, fit.n_ctx)
        return llama, fit.n_ctx


class LocalChatModel(LlamaCppChatModel):
    """The installed model as a chat model: ``cadet_label`` is how answers name it, ``n_ctx``
    the context it was loaded with."""

    def __init__(
        self,
        path: Path,
        llama: Any,
        n_ctx: int,
        label: str,
        temperature: float,
        batched: bool = True,
    ) -> None:
        super().__init__(path, temperature=temperature, llama=llama, batched=batched)
        self.n_ctx = n_ctx
        self.cadet_label = label

    def __repr__(self) -> str:
        return f"LocalChatModel({self.cadet_label!r}, n_ctx={self.n_ctx})"


def load_local(
    temperature: float = 0.0, *, default: bool = False, batched: bool = True
) -> LocalChatModel:
    """The chat model for the ``local`` spec (``default``: chosen because none was
    configured, and labelled so; ``batched``: see :class:`LlamaCppChatModel`)."""
    if sys.platform == "emscripten":
        raise LocalModelError(
            "The local model runs in a CPython kernel; in JupyterLite use the model the site "
            "offers, or --model openai:... with a server that allows this page."
        )
    path = model_file()
    llama, n_ctx = load_llama(path)
    label = DEFAULT_LABEL if default else LABEL
    return LocalChatModel(path, llama, n_ctx, label, temperature, batched)


def default_model(temperature: float = 0.0) -> Any:
    """The model used when none is configured: the local one when installed, else
    :class:`NoModelError` naming the two ways to get one."""
    if not installed():
        raise NoModelError()
    return load_local(temperature, default=True)
