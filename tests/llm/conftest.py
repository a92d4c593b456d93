"""The ``llm`` tests' time, measured: the terminal summary gives their wall time (set-up of
the model server included) and the load average, so a CI run shows what the real model cost it."""

from __future__ import annotations

import os

import pytest

_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if "llm" in report.keywords:
        _SECONDS[report.nodeid] = _SECONDS.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _SECONDS:
        return
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    terminalreporter.write_line(
        f"llm tests: {len(_SECONDS)} in {sum(_SECONDS.values()):.0f} s with the real local model "
        f"(load average now {load}); each answer in test-artifacts/llm/answers.jsonl"
    )


@pytest.fixture(scope="session")
def gguf_model():
    """The installed local model loaded in this process once for the session
    (``LlamaCppChatModel``), its replies cut at 64 tokens so a test's generations stay short."""
    pytest.importorskip("llama_cpp")
    from cadet_magic.llm.llamacpp import LlamaCppChatModel
    from tests.conftest import installed_local_model

    return LlamaCppChatModel(installed_local_model(), max_tokens=64)
