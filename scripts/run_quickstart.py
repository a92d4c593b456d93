"""Executes notebooks/quickstart.ipynb headless and writes the executed notebook and its HTML.

Uses the model named by CADET_MODEL when set, otherwise the scripted stand-in whose
replies are stored beside the notebook (and labelled as scripted in every output).
Exits non-zero if any cell raises.
"""

from __future__ import annotations

import os
import sys
import tempfile
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


def main(out_dir: Path | None = None) -> int:
    out_dir = out_dir or NOTEBOOK.parent
    os.environ.setdefault("PLOOMBER_STATS_ENABLED", "false")
    use_this_interpreters_kernel()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    status = 0
    with local_kernel() as kernel:
        client = NotebookClient(
            nb,
            timeout=600,
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
    model = os.environ.get("CADET_MODEL") or "scripted stand-in (notebooks/quickstart_replies.json)"
    print(f"Executed {NOTEBOOK.name} with model: {model}\nWrote {executed}")
    return status


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
