"""``python -m cadet_magic.local install|status`` as a user runs them (child processes): what
they say, their exit codes, and one line on stderr when the install cannot go on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cadet_magic.local.pin import PIN

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cadet_magic.local", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        timeout=120,
    )


@pytest.fixture
def env(tmp_path):
    return {"CADET_LOCAL_DIR": str(tmp_path / "cache")}


def test_status_before_anything_is_installed(env):
    done = run("status", env=env)
    assert done.returncode == 1
    assert "model: not installed" in done.stdout
    assert "not ready: run python -m cadet_magic.local install" in done.stdout
    assert env["CADET_LOCAL_DIR"] in done.stdout


def test_status_path(env):
    done = run("status", "--path", env=env)
    assert done.stdout.strip() == str(Path(env["CADET_LOCAL_DIR"]) / "models" / PIN.filename)


def test_install_from_a_file_of_the_wrong_size_stops_in_one_line(env, tmp_path):
    (tmp_path / "other.gguf").write_bytes(b"GGUF" + bytes(96))
    done = run("install", "--model-only", "--source", str(tmp_path / "other.gguf"), env=env)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("cadet_magic.local: ") and "Traceback" not in done.stderr
    assert "has 100 bytes; the pinned model has 1,117,320,768: it is another file" in last


def test_install_from_an_unreachable_url(env):
    done = run("install", "--model-only", "--source", "http://127.0.0.1:9/m.gguf", env=env)
    assert done.returncode == 1
    assert "Cannot reach http://127.0.0.1:9/m.gguf" in done.stderr.strip().splitlines()[-1]


def test_help_names_the_sources():
    done = run("install", "--help", env={})
    assert done.returncode == 0
    assert "registry" in done.stdout and "URL" in done.stdout and "--portable" in done.stdout
