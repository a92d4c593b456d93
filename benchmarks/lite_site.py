"""What the JupyterLite benchmarks share (:mod:`benchmarks.lite`, the site's boot and first
answers; :mod:`benchmarks.lite_model`, the model in the page): where the site is built, how
Chromium is started, the page scripts that wait for the kernel and run a cell, and when a visit
may start on a shared machine (the load average, the CPU the other processes use)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SITE = ROOT / "build" / "lite"

WORK = ROOT / "build" / "lite-bench"

NOTEBOOK = "cadet_in_the_browser.ipynb"

CHROMIUM = "/usr/bin/chromium"

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]

MAX_LOAD = 1.5

#: Cores the other processes may use, on average, during a visit that counts as quiet.
MAX_OTHERS = 0.5

#: Seconds to wait before a visit for the load average to settle (the previous visit's share
#: of it decays with a one-minute time constant).
SETTLE = 240.0

IDLE = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return (!!k && k.connectionStatus === 'connected' && k.status === 'idle') ? performance.now()
    : false; }"""

RUN_CELL = """async () => { const nb = window.jupyterapp.shell.currentWidget;
  const kernel = nb.sessionContext.session.kernel;
  const t0 = performance.now();
  await window.jupyterapp.commands.execute('notebook:run-cell');
  if (kernel.status !== 'idle') await new Promise(done => {
    const seen = (_, status) => { if (status === 'idle') {
      kernel.statusChanged.disconnect(seen); done(); } };
    kernel.statusChanged.connect(seen); });
  return performance.now() - t0; }"""


def build(out_root: Path, src: Path) -> tuple[float, float, int]:
    """Builds ``src``'s offline site with ``src``'s own build script; (seconds, MB, files)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(src / "scripts" / "build_lite.py"), "--variant", "offline"],
        cwd=src,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmarks.lite: build failed in {src}:\n{proc.stderr[-3000:]}")
    seconds = time.perf_counter() - t0
    files = [f for f in out_root.rglob("*") if f.is_file()]
    return seconds, sum(f.stat().st_size for f in files) / 1e6, len(files)


def _load() -> float:
    return os.getloadavg()[0]


def settle(limit: float, timeout: float, poll: float = 5.0) -> float:
    """Waits up to ``timeout`` s for the 1-minute load average to fall to ``limit``; the load
    sampled when the wait ended (the figure the refusal rule judges)."""
    end = time.monotonic() + timeout
    while (load := _load()) > limit and time.monotonic() < end:
        time.sleep(poll)
    return load


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores; /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _tree_seconds(root: int | None = None) -> float:
    """CPU seconds used by process ``root`` (this one) and its descendants, living or reaped
    (Chromium, the Playwright driver, the CPython kernel)."""
    root = os.getpid() if root is None else root
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:  # exited meanwhile
            continue
        rest = raw.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        ppid = int(rest[1])
        utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
        stats[int(entry.name)] = (ppid, (utime + stime + cutime + cstime))
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


class Others:
    """The CPU the other processes used during a block (cores, on average): the machine's busy
    time minus this process tree's, over the wall time."""

    def __enter__(self) -> Others:
        self._t, self._busy, self._own = time.monotonic(), _busy_seconds(), _tree_seconds()
        return self

    def __exit__(self, *exc) -> None:
        wall = max(time.monotonic() - self._t, 1e-9)
        busy, own = _busy_seconds() - self._busy, _tree_seconds() - self._own
        self.cores = max(busy - own, 0.0) / wall


@dataclasses.dataclass(frozen=True)
class Quiet:
    """When a visit may start: the 1-minute load average at or below ``limit``, waited for up to
    ``timeout`` seconds."""

    limit: float = MAX_LOAD
    timeout: float = SETTLE

    def settle(self) -> float:
        return settle(self.limit, self.timeout) if self.timeout > 0 else _load()


def verdict(loads: list[float], others: list[float], max_load: float, max_others: float) -> str:
    """Why the run counts as loaded ("" when it does not): a visit started above ``max_load``
    or other processes used more than ``max_others`` cores during one.

    >>> verdict([0.4, 1.2], [0.1, 0.3], 1.5, 0.5)
    ''
    >>> verdict([0.4, 2.0], [0.1, 0.9], 1.5, 0.5)
    'a visit started at load 2.0 > 1.5; other processes used up to 0.9 cores > 0.5 during a visit'
    """
    why = []
    if max(loads) > max_load:
        why.append(f"a visit started at load {max(loads):.1f} > {max_load}")
    if max(others) > max_others:
        why.append(
            f"other processes used up to {max(others):.1f} cores > {max_others} during a visit"
        )
    return "; ".join(why)
