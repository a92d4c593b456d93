"""A model that does not answer: ``AskMagic.model_timeout`` bounds each model call (the
provider client gets it as its own timeout; a watchdog holds the limit), and an interrupt
during the model call says the model call was stopped. The model is the scripted
OpenAI-compatible server on 127.0.0.1, made to hang."""

from __future__ import annotations

import _thread
import threading
import time

import pytest
from IPython.core.error import UsageError

from cadet_magic.llm import load_model
from tests.helpers import TIME_SLACK, sql_reply

pytest.importorskip("langchain_openai")

HANG = {"content": sql_reply("SELECT 1"), "delay": 60}


@pytest.fixture
def shell(openai_env, sql_duckdb):
    ip = sql_duckdb("hanging", "CREATE TABLE orders (id INT, amount DOUBLE)")
    yield ip
    ip.run_line_magic("config", "AskMagic.model_timeout = 120.0")


def test_the_provider_client_gets_the_timeout(shell) -> None:
    model = load_model("openai:scripted-test-model", timeout=7.5)
    assert model.request_timeout == 7.5


def test_a_hanging_model_is_abandoned_at_the_limit(shell, fake_openai) -> None:
    fake_openai.script([HANG, HANG, HANG])
    shell.run_line_magic("config", "AskMagic.model_timeout = 1.0")
    magic = shell.magics_manager.registry["AskMagic"]
    assert magic.model_timeout == 1.0
    start = time.monotonic()
    r = shell.run_cell_magic("ask", "--model openai:scripted-test-model", "Total amount?")
    elapsed = time.monotonic() - start
    assert not r.ok and r.stop_reason == "model_error"
    assert "did not answer within 1 s" in r.message or "did not answer within 1 s" in str(
        r.attempts[-1].error if r.attempts else r.message
    )
    assert elapsed < 1 + TIME_SLACK  # far below the 60 s the server would hang for
    assert fake_openai.requests  # the call did reach the server
    shell.run_line_magic("sql", "SELECT 1")


def test_an_interrupt_during_the_model_call_says_so(shell, fake_openai) -> None:
    fake_openai.script([HANG])
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(UsageError) as refused:
            shell.run_cell_magic("ask", "--model openai:scripted-test-model", "Total amount?")
    finally:
        timer.cancel()
    text = str(refused.value)
    assert "model call was stopped" in text and "query" in text
    assert "cancelled" not in text
    shell.run_line_magic("sql", "SELECT 1")
