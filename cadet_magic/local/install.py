"""``python -m cadet_magic.local install`` and ``status``: the local model set up, and said.

``install`` puts the pinned model in the cache folder (downloaded, resumed, checked:
:mod:`cadet_magic.local.download`), installs llama-cpp-python into this interpreter's environment
(built once for this machine: :mod:`cadet_magic.local.runtime`), then runs the model once in a
child process (:mod:`cadet_magic.local.probe`); when llama.cpp crashes there and was not built
here, it is built here and tried again. ``status`` says what is installed, where, and what a
kernel would run it with.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cadet_magic.errors import LocalModelError
from cadet_magic.local.model_store import cache_dir, checked_record, model_file, wheel_dir
from cadet_magic.local.pin import PIN

Say = Callable[[str], None]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextlib.contextmanager
def _one_at_a_time(say: Say) -> Iterator[None]:
    """One install at a time per cache folder (two would append to one partial file): a
    second waits for the first."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks here
        yield
        return
    from cadet_magic.local.files import open_file

    # opened without following a link, never truncated: a planted link empties nothing
    with os.fdopen(open_file(folder / ".lock", os.O_WRONLY | os.O_CREAT), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"Another install is running in {folder}: waiting for it to finish.")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def install_model(source: str | None = None, say: Say = _say, quiet: bool = False) -> Path:
    """The pinned model in the cache folder, downloaded when it is not there and checked."""
    with _one_at_a_time(say):
        return _install_model(source, say, quiet)


def _install_model(source: str | None, say: Say, quiet: bool) -> Path:
    from cadet_magic.local.download import fetch, file_sha256
    from cadet_magic.local.files import drop_planted
    from cadet_magic.local.sources import FileSource, source_for

    path = model_file()
    if drop_planted(path):
        say(f"{path} was a link, not the model (links are not followed): removed.")
    record = checked_record(path)
    if record is not None and record.matches(path):
        say(f"The model is installed: {path} (checked against the pin).")
        return path
    if path.is_file():
        if path.stat().st_size == PIN.size:
            say(f"Checking the model file already at {path}")
            if file_sha256(path, "checking", quiet) == PIN.sha256:
                from cadet_magic.local.model_store import write_record

                write_record(path, "checked in place")
                return path
        say(f"{path} does not match the pin: it is downloaded again.")
        path.unlink()
    chosen = source_for(source, cache_dir() / "parts")
    verb = "Copying" if isinstance(chosen, FileSource) else "Downloading"
    say(
        f"{verb} the model, {PIN.name}, {PIN.size / 1e9:.1f} GB, from {chosen.describe()} "
        f"into {path.parent}; every part is checked against the pinned SHA-256."
    )
    return fetch(PIN, chosen, path, quiet=quiet)


def install(
    source: str | None = None,
    *,
    runtime: bool = True,
    portable: bool = False,
    rebuild: bool = False,
    server: bool = False,
    say: Say = _say,
) -> Path:
    """The whole install: the model, then (``runtime``) llama-cpp-python and the probe."""
    from cadet_magic.local.probe import last_probe, run_probe
    from cadet_magic.local.runtime import install_runtime

    started = time.monotonic()
    path = install_model(source, say)
    if runtime:
        say(install_runtime(wheel_dir(), say, portable, rebuild, server) + ".")
        probe = last_probe()
        if probe is not None and probe.ok and not rebuild:
            say("llama.cpp runs the model on this CPU (tried before with these libraries).")
            return _done(started, path, say)
        say("Running the model once in a separate process (does llama.cpp run on this CPU?)")
        probe = run_probe(path)
        if not probe.ok and not rebuild:
            say(f"llama.cpp {probe.detail}: building it here for this machine.")
            install_runtime(wheel_dir(), say, portable, rebuild=True, server=server)
            probe = run_probe(path)
        if not probe.ok:
            raise LocalModelError(
                f"llama.cpp {probe.detail} when it ran the model on this CPU, even built here; "
                f"its build output is in {wheel_dir() / 'build.log'}."
            )
        say(f"It runs ({probe.seconds:.0f} s to load and answer).")
    return _done(started, path, say)


def _done(started: float, path: Path, say: Say) -> Path:
    say(
        f"Done in {time.monotonic() - started:.0f} s. %%ask --model local uses it; so does "
        "%%ask when no model is configured."
    )
    return path


@dataclass(frozen=True)
class Status:
    """What is installed, in words (``lines``), and whether a kernel can use it (``ready``)."""

    ready: bool
    path: Path
    lines: tuple[str, ...]


def status() -> Status:
    """The model file, llama-cpp-python, the probe and what a kernel would run it with."""
    from cadet_magic.local.machine import available_memory, choose_fit, gigabytes, threads
    from cadet_magic.local.probe import last_probe
    from cadet_magic.local.runtime import installed_version

    path = model_file()
    record = checked_record(path)
    partial = path.with_name(path.name + ".partial")
    lines = [f"Local model: {PIN.name}", f"  folder: {cache_dir()}"]
    model_ok = record is not None and record.matches(path)
    if model_ok and record is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.checked_at))
        lines.append(f"  model: {path} ({PIN.size:,} bytes, checked {when}, from {record.source})")
    elif path.is_file():
        lines.append(f"  model: {path} is there but not checked since it changed")
    elif partial.is_file():
        lines.append(
            f"  model: not installed; {partial.stat().st_size:,} of {PIN.size:,} bytes "
            "downloaded (the install resumes from there)"
        )
    else:
        lines.append("  model: not installed")
    version = installed_version()
    lines.append(
        f"  runtime: llama-cpp-python {version} in {sys.prefix}"
        if version
        else f"  runtime: llama-cpp-python not installed in {sys.prefix}"
    )
    probe = last_probe() if version else None
    if probe is not None:
        lines.append(
            "  runs on this CPU: yes" if probe.ok else f"  runs on this CPU: no, {probe.detail}"
        )
    elif version:
        lines.append("  runs on this CPU: not tried yet (the install or the first use tries it)")
    available = available_memory()
    try:
        fit = choose_fit(PIN, available)
        memory = f"about {gigabytes(PIN.memory_bytes(fit.n_ctx, fit.repack))}"
        shown = "unknown" if available is None else gigabytes(available)
        weights = "repacked for this CPU" if fit.repack else "read from the mapped file"
        lines.append(
            f"  in a kernel: {threads()} threads, a context of {fit.n_ctx} tokens, weights "
            f"{weights}, {memory} of memory ({shown} available now)"
        )
    except LocalModelError as e:
        lines.append(f"  in a kernel: {e}")
    ready = model_ok and bool(version) and (probe is None or probe.ok)
    lines.append(
        "  ready: %%ask --model local (and %%ask with no model configured) uses it"
        if ready
        else "  not ready: run python -m cadet_magic.local install"
    )
    return Status(ready, path, tuple(lines))
