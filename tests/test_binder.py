"""A repo2docker simulation: what Binder does with binder/, without Docker.

A fresh virtual environment of binder/runtime.txt's Python; ``pip install -r
binder/requirements.txt`` from a copy of the repository's root (wheels prepared by
scripts/setup_binder.sh, installed with --no-index); ``binder/postBuild``, which installs the
local model into the image's cache folder (here a fresh folder: the model file copied from the
one the tests' set-up installed, and the llama-cpp-python wheel the local install compiled for
this machine, which setup_binder.sh copies: the image's own is built ``--portable``, for other
CPUs than its builder's, which one machine cannot try; so llama.cpp is compiled once per machine,
not twice); then every notebook in notebooks/ executed headless in that environment's
own kernel, with Binder's memory limit: the quickstart and each tutorial's own-question cell
answered by the real local model, and each kernel's peak resident memory measured.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from tests.conftest import installed_local_model, need
from tests.test_notebooks import check_executed

pytestmark = pytest.mark.notebooks
ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".cache" / "binder" / "wheels"
LOCAL_WHEELS = ROOT / ".cache" / "binder" / "local" / "wheels"
#: Binder's usual memory limit (2 GB) less what the Jupyter server beside the kernel takes.
KERNEL_MEMORY = "1.8G"
BINDER_LIMIT_MB = 2048


def _runtime() -> str:
    text = (ROOT / "binder" / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(3\.\d+)", text)
    assert match, f"binder/runtime.txt must read python-3.X, not {text!r}"
    return match.group(1)


def test_runtime_is_supported():
    major, minor = (int(x) for x in _runtime().split("."))
    assert (major, minor) >= (3, 11)  # pyproject's requires-python; repo2docker defaults to 3.10
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK)


def test_repo2docker_simulation(tmp_path):
    runtime = _runtime()
    python = shutil.which(f"python{runtime}")
    need(python is not None, f"python{runtime} (binder/runtime.txt) not found")
    need(
        (WHEELS.parent / "READY").exists() and any(LOCAL_WHEELS.glob("llama_cpp_python-*.whl")),
        "Binder wheels missing: run bash scripts/setup_binder.sh",
    )
    model = installed_local_model()
    repo = tmp_path / "repo"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    env_dir = tmp_path / "env"
    subprocess.run([python, "-m", "venv", str(env_dir)], check=True)
    # the image's cache folder, holding the wheel pip would build there
    image_cache = tmp_path / "image-cache"
    shutil.copytree(LOCAL_WHEELS, image_cache / "wheels")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JUPYTER_PATH", "VIRTUAL_ENV", "PYTHONPATH", "CADET_MODEL")
        and not k.startswith(("PIP_", "CADET_LOCAL"))
    }
    env.update(
        PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}",
        VIRTUAL_ENV=str(env_dir),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(WHEELS),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_CONFIG_FILE=os.devnull,
        PLOOMBER_STATS_ENABLED="false",
        JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        IPYTHONDIR=str(tmp_path / "ipython"),
        CADET_LOCAL_DIR=str(image_cache),
        CADET_LOCAL_SOURCE=str(model),  # no network: the copy the set-up installed
    )
    py = str(env_dir / "bin" / "python")

    def step(*cmd: str, **extra: str) -> str:
        done = subprocess.run(cmd, cwd=repo, env={**env, **extra}, capture_output=True, text=True)
        assert done.returncode == 0, f"{cmd}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done.stdout + done.stderr

    step(py, "-m", "pip", "install", "-q", "-r", "binder/requirements.txt")
    version = step(py, "-c", "import sys; print(sys.version_info[:2])")
    assert version.strip() == str(tuple(int(x) for x in runtime.split(".")))
    installed = step(py, "-c", "import cadet_magic; print(cadet_magic.__file__)")
    assert installed.startswith(str(repo)), installed  # -e . from the repository's root
    # binder/postBuild as shipped, but for --portable (this machine's build stands in for it)
    post_build = repo / "binder" / "postBuild"
    shipped = post_build.read_text()
    assert shipped.count("cadet_magic.local install --portable\n") == 1, shipped
    post_build.write_text(shipped.replace("install --portable\n", "install\n"))
    built = step("bash", "binder/postBuild")
    assert "Compiling" not in built, built  # the copied wheel was installed, not built again
    print(built)
    status = step(py, "-m", "cadet_magic.local", "status")
    assert "ready:" in status and "runs on this CPU: yes" in status, status
    out = tmp_path / "out"
    report = step(
        py, "scripts/run_notebooks.py", "--memory", str(out), CADET_LOCAL_MEMORY=KERNEL_MEMORY
    )
    print(report)
    executed = sorted(out.glob("*.executed.ipynb"))
    assert {p.name.replace(".executed.ipynb", "") for p in executed} == {
        p.stem for p in (ROOT / "notebooks").glob("*.ipynb") if ".executed" not in p.name
    }
    peaks = {}
    for path in executed:
        quickstart = path.name == "quickstart.executed.ipynb"
        check_executed(
            path, scripted=not quickstart, require_expect=not quickstart, local_model=True
        )
        peaks[path.name] = peak_memory(path)
    print(f"kernels' peak resident memory (MB) with the local model loaded: {peaks}")
    assert max(peaks.values()) < BINDER_LIMIT_MB, peaks


def peak_memory(path: Path) -> int:
    """The kernel's peak resident memory in MB, as the probe cell run_notebooks.py --memory
    appended printed it."""
    nb = nbformat.read(path, as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("cadet", {}).get("memory_probe")]
    text = "".join(o.get("text", "") for o in cell.outputs)
    found = re.search(r"peak resident memory: (\d+) MB", text)
    assert found, text
    return int(found.group(1))
