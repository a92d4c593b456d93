"""The local model for real (marker ``llm``): installed from the copy the tests' set-up installed,
run in this process by ``--model local`` and as the default when no model is configured, and
through the ``%%ask`` magic. The assertions are what must hold whatever the model writes (see
tests/llm/test_real_model.py's ``check_run``), never whether the answer is right.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cadet_magic.api import ask
from cadet_magic.examples.shop import create_shop
from cadet_magic.llm import local as local_spec
from tests.conftest import LocalLLM, installed_local_model
from tests.llm.test_real_model import SHOP, check_run, compare

pytestmark = [
    pytest.mark.llm,
    pytest.mark.filterwarnings("ignore:Traits should be given as instances:DeprecationWarning"),
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def local_model(monkeypatch) -> Path:
    """The installed local model, as ``--model local`` and the default find it."""
    pytest.importorskip("llama_cpp")
    path = installed_local_model()
    monkeypatch.setenv("CADET_LOCAL_DIR", str(path.parent.parent))
    monkeypatch.delenv("CADET_MODEL", raising=False)
    monkeypatch.delenv("CADET_LOCAL_MEMORY", raising=False)
    return path


@pytest.fixture(scope="module")
def shop():
    con = create_shop()
    yield con
    con.close()


def test_a_real_install_from_the_cache(tmp_path):
    """``install`` from a file (the model the set-up installed): copied and checked part by
    part into a fresh cache folder; llama-cpp-python found installed; ``status`` says ready."""
    source = installed_local_model()
    env = {**os.environ, "CADET_LOCAL_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "cadet_magic.local", "install", "--source", str(source)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "every part is checked against the pinned SHA-256" in done.stderr
    assert "It runs" in done.stderr or "runs the model on this CPU" in done.stderr
    status = subprocess.run(
        [sys.executable, "-m", "cadet_magic.local", "status"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert status.returncode == 0, status.stdout
    assert f"model: {tmp_path}" in status.stdout and "runs on this CPU: yes" in status.stdout


def test_the_local_spec_on_the_sample_shop(local_model, shop):
    question, gold_sql = SHOP["count"]
    events: list = []
    result = ask(
        question, con=shop, model="local", on_event=events.append, model_timeout=LocalLLM.TIMEOUT
    )
    assert result.model == local_spec.LABEL and not result.scripted
    check_run(result, events)
    compare("local-count", result, shop, gold_sql, "duckdb")


def test_the_default_is_the_local_model_and_says_so(local_model, shop):
    question, gold_sql = SHOP["filter"]
    result = ask(question, con=shop, model_timeout=LocalLLM.TIMEOUT)
    assert result.model == local_spec.DEFAULT_LABEL and "no model configured" in result.model
    check_run(result)
    compare("local-default-filter", result, shop, gold_sql, "duckdb")


def test_the_model_is_loaded_once_per_kernel(local_model):
    first = local_spec.load_local()
    second = local_spec.load_local(default=True)
    assert first.llama is second.llama  # one llama.cpp model in the process
    assert first.n_ctx in (8192, 4096, 2048)


def test_ask_cell_with_the_local_model(local_model, ipython_shell, tmp_path):
    path = tmp_path / "shop.duckdb"
    create_shop(path).close()
    ip = ipython_shell
    ip.run_line_magic("sql", f"duckdb:///{path} --alias localshop")
    magic = ip.magics_manager.registry["AskMagic"]
    default_timeout, magic.model_timeout = magic.model_timeout, LocalLLM.TIMEOUT
    try:
        ip.run_cell_magic("ask", "--model local", "How many orders were cancelled?")
        result = ip.user_ns["_ask"]
        assert result.model == local_spec.LABEL
        check_run(result)
    finally:
        ip.run_line_magic("sql", "--close localshop")
        magic.model_timeout = default_timeout
