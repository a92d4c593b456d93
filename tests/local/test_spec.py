"""The ``local`` spec and the default model, without the real model: each way it cannot run is one
line, in ``ask()`` and through the ``%%ask`` magic, and the kernel is untouched. (The real model
answers in tests/llm/test_local.py.)"""

from __future__ import annotations

import os
import sys

import pytest
from IPython.core.error import UsageError

from cadet_magic.errors import LocalModelError, NoModelError
from cadet_magic.llm import load_model, model_label
from cadet_magic.llm import local as spec
from cadet_magic.local.model_store import model_file, write_record
from cadet_magic.local.pin import PIN
from cadet_magic.local.probe import Probe


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CADET_LOCAL_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the key records carry
    monkeypatch.delenv("CADET_MODEL", raising=False)
    monkeypatch.delenv("CADET_LOCAL_MEMORY", raising=False)
    spec._LOADED.clear()
    yield tmp_path
    spec._LOADED.clear()


def forged(path) -> None:
    """A small file with the user's own record saying it was checked (as the installer writes
    it: the checks after the file's own)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF" + bytes(60))
    write_record(path, "test")


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


def test_no_model_anywhere_names_the_two_ways(folder):
    with pytest.raises(NoModelError) as e:
        load_model(None)
    text = one_line(e)
    assert "python -m cadet_magic.local install" in text and "--model openai:gpt-4o-mini" in text


def test_local_not_installed(folder):
    with pytest.raises(LocalModelError) as e:
        load_model("local")
    assert "The local model is not installed" in one_line(e)
    assert "python -m cadet_magic.local install" in str(e.value)


def test_a_file_of_the_wrong_size(folder):
    model_file().parent.mkdir(parents=True)
    model_file().write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(LocalModelError) as e:
        load_model("local")
    assert "has 104 bytes, not the pinned 1,117,320,768" in one_line(e)


def test_a_corrupt_file_of_the_right_size(folder):
    model_file().parent.mkdir(parents=True)
    with model_file().open("wb") as f:  # sparse: no disk space taken
        f.truncate(PIN.size)
    with pytest.raises(LocalModelError) as e:
        load_model("local")
    assert "is corrupt: its SHA-256 does not match the pin" in one_line(e)


def test_a_changed_file_is_checked_again(folder):
    forged(model_file())
    model_file().write_bytes(b"GGUF" + bytes(61))  # changed after its check
    with pytest.raises(LocalModelError) as e:
        load_model("local")
    assert "has 65 bytes" in one_line(e)


def test_without_llama_cpp_python(folder, monkeypatch):
    forged(model_file())
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(LocalModelError) as e:
        load_model("local")
    assert "llama-cpp-python, which runs it, is not installed" in one_line(e)
    assert f"{sys.executable} -m cadet_magic.local install" in str(e.value)


def test_a_cpu_llama_cpp_crashes_on(folder, monkeypatch):
    pytest.importorskip("llama_cpp")
    forged(model_file())
    crashed = Probe(
        "libs", "cpu", False, "crashed with SIGILL (an instruction this processor lacks)", 1.0
    )
    monkeypatch.setattr("cadet_magic.local.probe.last_probe", lambda: crashed)
    with pytest.raises(LocalModelError) as e:
        load_model("local")
    text = one_line(e)
    assert "crashed with SIGILL" in text and "install --rebuild" in text


def test_the_probe_runs_once_in_a_child_process(folder, monkeypatch):
    """A child that dies by a signal is read as a crash and recorded for these libraries."""
    pytest.importorskip("llama_cpp")
    import subprocess

    from cadet_magic.local import probe

    calls = []

    def died(cmd, **kwargs):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, -4, "", "")

    monkeypatch.setattr(probe.subprocess, "run", died)
    result = probe.run_probe(model_file())
    assert not result.ok and result.detail.startswith("crashed with SIGILL")
    assert calls[0][1:3] == ["-m", "cadet_magic.local.probe"]
    assert probe.last_probe() == result


def test_too_little_memory(folder, monkeypatch):
    pytest.importorskip("llama_cpp")
    forged(model_file())
    monkeypatch.setattr("cadet_magic.local.probe.last_probe", lambda: Probe("", "", True, "", 1))
    monkeypatch.setenv("CADET_LOCAL_MEMORY", "1G")
    with pytest.raises(LocalModelError) as e:
        load_model("local")
    assert "Too little memory for the local model" in one_line(e)


def test_a_variable_named_local_does_not_hide_the_spec(folder):
    with pytest.raises(LocalModelError):
        load_model("local", {"local": 42})
    model = type("M", (), {"invoke": lambda self, m: None})()
    assert load_model("local", {"local": model}) is model


def test_labels():
    class FakeLlama:  # stands in for llama_cpp.Llama (scripted, never called)
        pass

    path = model_file()
    chosen = spec.LocalChatModel(path, FakeLlama(), 4096, spec.LABEL, 0.0)
    default = spec.LocalChatModel(path, FakeLlama(), 4096, spec.DEFAULT_LABEL, 0.0)
    assert (
        model_label(chosen, "local")
        == "local: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), run in this kernel"
    )
    assert model_label(default, None).startswith("local (no model configured, so the installed")


@pytest.mark.parametrize(
    "line, says",
    [
        ("", "No model configured. Either install the local model"),
        ("--model local", "The local model is not installed"),
    ],
    ids=["default", "local"],
)
def test_through_the_magic_one_line_and_the_kernel_goes_on(folder, ipython_shell, line, says):
    import duckdb

    ip = ipython_shell
    ip.user_ns["duck"] = duckdb.connect()
    before = dict(os.environ)
    with pytest.raises(UsageError) as e:
        ip.run_cell_magic("ask", f"{line} --con duck", "How many rows?")
    assert says in one_line(e)
    assert ip.run_cell("1 + 1").result == 2 and dict(os.environ) == before
