"""What this machine offers the local model: memory, cores, and which CPU it is.

Memory is what the process may still use: the smaller of the system's available memory and,
in a container (Binder, Docker, a CI job), what its control group's limit leaves;
``CADET_LOCAL_MEMORY`` (e.g. ``2G``) caps it further, as a limit on this process's own use.
:func:`choose_fit` takes the first of :data:`FITS` that fits with :data:`MARGIN` to spare: the
largest context, with the weights repacked for speed only where memory allows the second
copy; none fitting is one clear line.

Example:
    >>> from cadet_magic.local.pin import PIN
    >>> [choose_fit(PIN, available=n * 2**30) for n in (8, 1.6)]
    [Fit(n_ctx=8192, repack=True), Fit(n_ctx=4096, repack=False)]
    >>> choose_fit(PIN, available=2**30)
    Traceback (most recent call last):
    ...
    cadet_magic.errors.LocalModelError: Too little memory for the local model: it needs about 1.5 GB with a 2048-token context, and 1.0 GB is available to this process. Close other programs or kernels, or use a hosted model (--model openai:gpt-4o-mini).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from cadet_magic.errors import LocalModelError
from cadet_magic.local.pin import ModelPin

#: The environment variable capping the memory the model may count on.
MEMORY_VAR = "CADET_LOCAL_MEMORY"
#: Memory left over for everything else the kernel does (query results, pandas).
MARGIN = 256 * 2**20


@dataclass(frozen=True)
class Fit:
    """How the model is loaded: its context window (tokens) and whether llama.cpp repacks the
    weights (faster on most CPUs, a second copy of most weights in memory)."""

    n_ctx: int
    repack: bool


#: Tried in order: the agent's prompt with a 6000-character schema, earlier attempts and their
#: feedback fits in 8192 tokens; 2048 holds a small schema's first attempt.
FITS = (Fit(8192, True), Fit(8192, False), Fit(4096, False), Fit(2048, False))


def gigabytes(n: int) -> str:
    return f"{n / 2**30:.1f} GB"


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _own_limit() -> int | None:
    """``CADET_LOCAL_MEMORY`` less what this process holds already (anonymous memory)."""
    text = os.environ.get(MEMORY_VAR, "").strip()
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)i?B?", text, re.IGNORECASE)
    if not found:
        return None
    limit = float(found.group(1)) * 1024 ** " KMG".index(found.group(2).upper() or " ")
    used = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                used = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(int(limit) - used, 0)


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom() -> int | None:
    """What this process's control group (v2, else v1) still allows: its limit minus the
    memory its processes use that cannot be reclaimed (file pages can)."""
    try:
        line = Path("/proc/self/cgroup").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    relative = line.split(":", 2)[-1].lstrip("/")
    for folder, limit_name, usage_name in (
        (Path("/sys/fs/cgroup") / relative, "memory.max", "memory.current"),
        (Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes", "memory.usage_in_bytes"),
    ):
        limit = _read_int(folder / limit_name)
        usage = _read_int(folder / usage_name)
        if limit is None or usage is None or limit >= 2**60:
            continue
        reclaimable = 0
        try:
            for row in (folder / "memory.stat").read_text().splitlines():
                key, _, value = row.partition(" ")
                if key in ("inactive_file", "total_inactive_file"):
                    reclaimable = int(value)
        except (OSError, ValueError):
            pass
        return max(limit - max(usage - reclaimable, 0), 0)
    return None


def available_memory() -> int | None:
    """Bytes this process may still use (None when the system does not say)."""
    found = [n for n in (_meminfo_available(), _cgroup_headroom(), _own_limit()) if n is not None]
    return min(found) if found else None


def choose_fit(pin: ModelPin, available: int | None = None) -> Fit:
    """The first of :data:`FITS` whose memory, with :data:`MARGIN` to spare, fits in
    ``available`` (default: :func:`available_memory`); raises :class:`LocalModelError` when
    even the smallest does not."""
    if available is None:
        available = available_memory()
    if available is None:
        return FITS[1]
    for fit in FITS:
        if pin.memory_bytes(fit.n_ctx, fit.repack) + MARGIN <= available:
            return fit
    smallest = FITS[-1]
    raise LocalModelError(
        f"Too little memory for the local model: it needs about "
        f"{gigabytes(pin.memory_bytes(smallest.n_ctx) + MARGIN)} with a "
        f"{smallest.n_ctx}-token context, and {gigabytes(available)} is available to this "
        "process. Close other programs or kernels, or use a hosted model (--model "
        "openai:gpt-4o-mini)."
    )


def threads() -> int:
    """Threads llama.cpp runs on: every core the process may use up to four, half of them
    above (past four, logical cores are usually hyper-threads, which do not speed it up)."""
    n = cores()
    return n if n <= 4 else n // 2


def cpu_fingerprint() -> str:
    """A short hash naming this CPU's model and instruction sets (a build for one CPU may not
    run on another: a native llama.cpp build uses every instruction the builder's CPU has)."""
    described = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key = line.split(":", 1)[0].strip()
            if key in ("model name", "flags", "Features", "CPU part"):
                described += "|" + line.split(":", 1)[-1].strip()
            if key in ("flags", "Features"):
                break
    except OSError:
        described += "|" + platform.processor()
    return hashlib.sha256(described.encode()).hexdigest()[:16]


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
