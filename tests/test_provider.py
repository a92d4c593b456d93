"""%%ask through a real provider client: init_chat_model("openai:...") over HTTP to a
scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import pytest

from cadet_magic.display import mimebundle
from tests.helpers import sql_reply, usage_error

pytest.importorskip("langchain_openai")


@pytest.fixture
def shell(openai_env, sql_duckdb):
    return sql_duckdb(
        "provider",
        "CREATE TABLE orders (id INT, amount DOUBLE); INSERT INTO orders VALUES (1, 5), (2, 7)",
    )


def test_openai_model_over_http(shell, fake_openai):
    fake_openai.script(
        [
            sql_reply("SELECT sum(amont) AS total FROM orders"),
            sql_reply("SELECT sum(amount) AS total FROM orders"),
        ]
    )
    # one candidate: the test reads the retry's turns (the vote's samples are tests/agent/test_vote's)
    r = shell.run_cell_magic(
        "ask", "--model openai:scripted-test-model --candidates 1", "What is the total amount?"
    )
    assert r.ok and r.df["total"].tolist() == [12.0] and len(r.attempts) == 2
    assert not r.scripted and r.model == "openai:scripted-test-model"
    assert len(fake_openai.requests) == 2
    first, second = fake_openai.requests
    assert first["model"] == "scripted-test-model"
    roles = [m["role"] for m in second["messages"]]
    # A retry appends the failed SQL as the model's turn and the feedback as the user's.
    assert roles == ["system", "user", "assistant", "user"]
    assert "amont" in second["messages"][2]["content"]
    shell.run_line_magic("sql", "SELECT 1")


def test_server_error_is_one_clear_line(shell, fake_openai):
    error = {
        "status": 500,
        "message": "upstream model overloaded",
        "headers": {"retry-after-ms": "10"},
    }
    fake_openai.script([error, error, error])
    r = shell.run_cell_magic(
        "ask", "--model openai:scripted-test-model", "What is the total amount?"
    )
    assert not r.ok and r.stop_reason == "model_error"
    assert "\n" not in r.message and "upstream model overloaded" in r.message and "500" in r.message
    text = mimebundle(r)["text/plain"]
    assert "Traceback" not in text
    shell.run_line_magic("sql", "SELECT 1")


def test_missing_api_key_is_a_configuration_message(shell, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    text = usage_error(
        shell, "ask", "--model openai:scripted-test-model", "What is the total amount?"
    )
    assert "OPENAI_API_KEY" in text
