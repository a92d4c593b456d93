"""Does llama.cpp run on this CPU? Asked in a separate process, so a crash is one clear line.

A llama.cpp built for another processor (an image built on one machine, a wheel from another
cache) may die at its first matrix product with SIGILL or SIGSEGV, and would take the kernel
with it. The probe loads the model in a child process and generates one token; its answer is
kept in the cache folder's ``runtime.json`` for the installed libraries and this CPU, so the
kernel asks once. The folder may be shared, so the record is keyed as the model's check record
and ``wheels/BUILD`` are (:func:`~cadet_magic.local.model_store.seal`) and read without following a
link: a verdict someone else wrote (``ok`` for a library that would crash the kernel) does not
verify, and the probe runs again.

Run as ``python -m cadet_magic.local.probe MODEL.gguf``: prints ``ok`` and exits 0 when the
model answered.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cadet_magic.errors import LocalModelError
from cadet_magic.local.machine import cpu_fingerprint, threads
from cadet_magic.local.model_store import cache_dir
from cadet_magic.local.runtime import library_key

PROMPT = (
    "-- customers who spent the most\nSELECT c.name, SUM(oi.quantity * oi.unit_price) AS "
    "spent FROM customers c JOIN orders o ON o.customer_id = c.customer_id JOIN order_items oi "
    "ON oi.order_id = o.order_id GROUP BY c.name ORDER BY spent DESC LIMIT"
)
log = logging.getLogger("cadet_magic")

#: Seconds the probe may take (loading 1.1 GB from a cold disk on a busy machine included).
TIMEOUT = 600.0


@dataclass(frozen=True)
class Probe:
    """A probe's outcome for the libraries and CPU it ran with."""

    libraries: str
    cpu: str
    ok: bool
    detail: str
    seconds: float


def _record() -> Path:
    return cache_dir() / "runtime.json"


def last_probe() -> Probe | None:
    """The recorded probe for the installed libraries on this CPU, if any, when the record is
    this user's (keyed: :func:`~cadet_magic.local.model_store.sealed`)."""
    from cadet_magic.errors import ConfigurationError
    from cadet_magic.local.model_store import sealed
    from cadet_magic.shared_files import read_bytes

    key = library_key()
    try:  # a link, a FIFO, a large file: refused, never read
        kept = json.loads(read_bytes(_record(), limit=65536, follow=False) or b"")
        mac = kept.pop("mac", None) if isinstance(kept, dict) else None
        probe = Probe(**kept)
    except (OSError, ValueError, TypeError, ConfigurationError):
        return None
    if not sealed(asdict(probe), mac):
        return None
    return probe if (probe.libraries, probe.cpu) == (key, cpu_fingerprint()) else None


def run_probe(model: Path) -> Probe:
    """Runs the probe in a child process and records its outcome."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cadet_magic.local.probe", str(model)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        ok = done.returncode == 0 and done.stdout.strip().endswith("ok")
        detail = "" if ok else _why(done.returncode, done.stderr)
    except subprocess.TimeoutExpired:
        ok, detail = False, f"no answer within {TIMEOUT:.0f} s"
    probe = Probe(
        library_key() or "", cpu_fingerprint(), ok, detail, round(time.monotonic() - started, 1)
    )
    _write(probe)
    return probe


def _write(probe: Probe) -> None:
    """Keeps ``probe`` in ``runtime.json``, keyed (without the user's key, nothing is kept and
    the next kernel probes again); a link or other file planted there is removed first."""
    from cadet_magic.local.files import drop_planted, open_file
    from cadet_magic.local.model_store import seal

    mac = seal(asdict(probe))
    if mac is None:
        return
    record = _record()
    tmp = record.with_suffix(".tmp")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        drop_planted(tmp)
        fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps({**asdict(probe), "mac": mac}))
        os.replace(tmp, record)
    except (OSError, LocalModelError) as e:  # a folder the user cannot write: probed again
        log.warning("The probe's verdict could not be kept: %s", e)


def _why(code: int, stderr: str) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (an instruction this processor lacks)" if name == "SIGILL" else ""
        return f"crashed with {name}{hint}"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return f"failed: {lines[-1][:200] if lines else f'exit {code}'}"


def require_runnable(model: Path) -> None:
    """Raises :class:`LocalModelError` (one line) unless llama.cpp runs here (probing once)."""
    probe = last_probe() or run_probe(model)
    if not probe.ok:
        raise LocalModelError(
            f"llama.cpp {probe.detail} when it ran the local model on this CPU, so it is not "
            "loaded into this kernel: rebuild it for this machine with python -m "
            "cadet_magic.local install --rebuild, or use another model (--model ...)."
        )


def main(argv: list[str]) -> int:
    from llama_cpp import Llama

    llama = Llama(model_path=argv[0], n_ctx=256, n_threads=threads(), verbose=False)
    # a prompt of a few dozen tokens: evaluated as a batch, through the matrix products
    llama.create_completion(PROMPT, max_tokens=1, temperature=0.0)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
