"""A repo2docker simulation: what Binder does with binder/, without Docker.

A fresh virtual environment of binder/runtime.txt's Python; ``pip install -r
binder/requirements.txt`` from a copy of the repository's root (wheels prepared by
scripts/setup_binder.sh, installed with --no-index); ``binder/postBuild``; then every notebook
in notebooks/ executed headless in that environment's own kernel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import need
from tests.test_notebooks import check_executed

pytestmark = pytest.mark.notebooks
ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".cache" / "binder" / "wheels"


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
        (WHEELS.parent / "READY").exists(),
        "Binder wheels missing: run bash scripts/setup_binder.sh",
    )
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
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JUPYTER_PATH", "VIRTUAL_ENV", "PYTHONPATH", "CADET_MODEL")
        and not k.startswith("PIP_")
    }
    env.update(
        PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}",
        VIRTUAL_ENV=str(env_dir),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(WHEELS),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PLOOMBER_STATS_ENABLED="false",
        JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        IPYTHONDIR=str(tmp_path / "ipython"),
    )
    py = str(env_dir / "bin" / "python")

    def step(*cmd: str) -> str:
        done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{cmd}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    step(py, "-m", "pip", "install", "-q", "-r", "binder/requirements.txt")
    version = step(py, "-c", "import sys; print(sys.version_info[:2])")
    assert version.strip() == str(tuple(int(x) for x in runtime.split(".")))
    installed = step(py, "-c", "import cadet_magic; print(cadet_magic.__file__)")
    assert installed.startswith(str(repo)), installed  # -e . from the repository's root
    step("bash", "binder/postBuild")
    out = tmp_path / "out"
    report = step(py, "scripts/run_notebooks.py", str(out))
    print(report)
    executed = sorted(out.glob("*.executed.ipynb"))
    assert {p.name.replace(".executed.ipynb", "") for p in executed} == {
        p.stem for p in (ROOT / "notebooks").glob("*.ipynb") if ".executed" not in p.name
    }
    for path in executed:
        check_executed(path, require_expect=path.name != "quickstart.executed.ipynb")
