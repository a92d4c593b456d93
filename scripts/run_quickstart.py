"""Executes notebooks/quickstart.ipynb headless and writes the executed notebook and its HTML.

Usage: python scripts/run_quickstart.py [--scripted] [OUT_DIR]

The notebook names no model, so its ``%%ask`` cells use the default: the model CADET_MODEL
names, else the installed local model (``python -m cadet_magic.local install``; without it the
first ``%%ask`` says how to get a model). ``--scripted`` uses the scripted stand-in whose replies
are stored beside the notebook instead (labelled as scripted in every output). Exits non-zero
if any cell raises.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"


def use_this_interpreters_kernel() -> None:
    """Puts this interpreter's kernel spec (``ipykernel install --sys-prefix``) first, ahead of
    a user-level ``python3`` spec that may point at another interpreter."""
    own = str(Path(sys.prefix) / "share" / "jupyter")
    paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if own not in paths:
        os.environ["JUPYTER_PATH"] = os.pathsep.join([own, *paths])


@contextmanager
def local_kernel(kernel_name: str = "python3") -> Iterator[dict[str, Any]]:
    """NotebookClient arguments for a kernel that talks over Unix sockets in a private temporary
    folder (POSIX) instead of TCP on 127.0.0.1: nothing else on the machine can reach it, and
    the kernel does not warn about unencrypted TCP in the job's output. The folder goes when
    the block ends (after the client has shut the kernel down)."""
    if os.name != "posix":
        yield {"kernel_name": kernel_name}
        return
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="cadet-kernel-") as folder:
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = os.path.join(folder, "kernel")
        yield {"kernel_name": kernel_name, "config": config}


#: What --scripted sets CADET_MODEL to (the kernel runs in the notebook's folder).
SCRIPTED = "scripted:quickstart_replies.json"
#: Seconds a cell may take: the local model on a busy two-core machine took up to two minutes
#: a call, and a question may make four.
CELL_TIMEOUT = 1800


def main(out_dir: Path | None = None, scripted: bool = False) -> int:
    out_dir = out_dir or NOTEBOOK.parent
    os.environ.setdefault("PLOOMBER_STATS_ENABLED", "false")
    if scripted:
        os.environ["CADET_MODEL"] = SCRIPTED
    started = time.monotonic()
    use_this_interpreters_kernel()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    status = 0
    with local_kernel() as kernel:
        client = NotebookClient(
            nb,
            timeout=CELL_TIMEOUT,
            # The %%ask outputs carry the live panel's widget view beside a static HTML/text
            # account; without stored widget state, nbconvert's HTML export shows that static
            # account (with it, the export would load the widget manager from a CDN and show
            # 'Loading widget...').
            store_widget_state=False,
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
            **kernel,
        )
        try:
            client.execute()
        except CellExecutionError as e:
            print(f"quickstart failed: {e}", file=sys.stderr)
            status = 1
    executed = out_dir / "quickstart.executed.ipynb"
    nbformat.write(nb, executed)
    try:
        from nbconvert import HTMLExporter

        html, _ = HTMLExporter().from_notebook_node(nb)
        (out_dir / "quickstart.executed.html").write_text(html)
    except Exception as e:  # noqa: BLE001 - the notebook itself is the main artifact
        print(f"(HTML export skipped: {e})", file=sys.stderr)
    model = os.environ.get("CADET_MODEL") or "the local model (no model configured)"
    if model == SCRIPTED:
        model = "scripted stand-in (notebooks/quickstart_replies.json, not a real LLM)"
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"Executed {NOTEBOOK.name} with model: {model}, in {time.monotonic() - started:.0f} s "
        f"(load average now {load})\nWrote {executed}"
    )
    return status


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", type=Path, help="where to write (default notebooks/)")
    parser.add_argument(
        "--scripted", action="store_true", help="the scripted stand-in's stored replies"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = arguments(sys.argv[1:])
    sys.exit(main(args.out_dir, args.scripted))
