"""Executes the tutorial notebooks (notebooks/*.ipynb) headless, as a reader would run them.

Usage: python scripts/run_notebooks.py [--memory] OUT_DIR [NAME ...]

Each notebook runs top to bottom in a fresh kernel in a copy of notebooks/ under OUT_DIR (so
the databases it writes stay there); the executed copy is written as NAME.executed.ipynb. Uses
the model named by CADET_MODEL when set, otherwise each notebook's stored scripted replies
(labelled as scripted in every output); the quickstart and each tutorial's own-question cell
use the local model (not installed: those cells say how to get it). ``--memory`` adds a last
cell printing the kernel's peak resident memory. Exits non-zero if any cell raises.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_quickstart import local_kernel

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def tutorials() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.endswith(".executed.ipynb"))


#: The cell ``--memory`` appends (Linux reports ``ru_maxrss`` in KiB).
MEMORY_PROBE = (
    "import resource\n"
    "print('peak resident memory:', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, 'MB')"
)


def run(
    notebook: Path, workdir: Path, kernel: str = "python3", memory: bool = False
) -> tuple[bool, float]:
    """Runs ``notebook`` in ``workdir``; returns (ok, seconds) and writes the executed copy."""
    nb = nbformat.read(notebook, as_version=4)
    if memory:
        probe = nbformat.v4.new_code_cell(MEMORY_PROBE)
        probe.metadata["cadet"] = {"memory_probe": True}
        nb.cells.append(probe)
    t0 = time.monotonic()
    ok = True
    with local_kernel(kernel) as kernel_args:
        client = NotebookClient(
            nb,
            timeout=1800,  # a real model's question on a busy machine: minutes
            store_widget_state=False,
            resources={"metadata": {"path": str(workdir)}},
            **kernel_args,
        )
        try:
            client.execute()
        except CellExecutionError as e:
            print(f"{notebook.name} failed: {str(e)[:2000]}", file=sys.stderr)
            ok = False
    nbformat.write(nb, workdir / notebook.name.replace(".ipynb", ".executed.ipynb"))
    return ok, time.monotonic() - t0


def main(out_dir: Path, names: list[str], memory: bool = False) -> int:
    os.environ.setdefault("PLOOMBER_STATS_ENABLED", "false")
    own = str(Path(sys.prefix) / "share" / "jupyter")
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if own not in paths:
        os.environ["JUPYTER_PATH"] = os.pathsep.join([own, *paths])
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in NOTEBOOKS.glob("*_replies.json"):
        shutil.copy(f, out_dir / f.name)
    chosen = [p for p in tutorials() if not names or p.stem in names]
    status = 0
    for notebook in chosen:
        shutil.copy(notebook, out_dir / notebook.name)
        ok, seconds = run(out_dir / notebook.name, out_dir, memory=memory)
        print(f"{notebook.name}: {'ok' if ok else 'FAILED'} in {seconds:.1f} s")
        status |= not ok
    model = os.environ.get("CADET_MODEL") or (
        "each tutorial's scripted stand-in (notebooks/*_replies.json); the quickstart and the "
        "own-question cells: the local model where it is installed"
    )
    print(f"model: {model}")
    return status


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--memory"]
    if not args:
        sys.exit(__doc__)
    sys.exit(main(Path(args[0]), args[1:], memory="--memory" in sys.argv[1:]))
