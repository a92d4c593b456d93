"""The browser model client's portable parts: endpoints, wire format, one-line errors.

The transport is injected; the real one (a synchronous XMLHttpRequest in the kernel's worker)
is exercised in the real browser by tests/lite/test_lite_browser.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cadet_magic.errors import ConfigurationError, ModelCallError
from cadet_magic.llm.browser import BrowserChatModel, endpoint
from cadet_magic.llm.transport import TransportError

CASES = json.loads((Path(__file__).parent / "llm_browser_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['spec']}-{c.get('error', c.get('url'))}")
def test_endpoint(case):
    kwargs = {k: case[k] for k in ("base_url", "api_key") if k in case}
    if "error" in case:
        with pytest.raises(ConfigurationError) as e:
            endpoint(case["spec"], env=case["env"], **kwargs)
        assert str(e.value).startswith(case["error"])
        assert "\n" not in str(e.value)
        return
    opts = endpoint(case["spec"], env=case["env"], **kwargs)
    assert (opts.url, opts.model, opts.api_key) == (case["url"], case["model"], case["key"])
    if opts.api_key:
        assert opts.api_key not in repr(opts)


def _model(answer, timeout=120.0):
    calls = []

    def transport(method, url, headers, body, seconds):
        calls.append((method, url, headers, json.loads(body), seconds))
        if isinstance(answer, Exception):
            raise answer
        return answer

    opts = endpoint("openai:m", base_url="http://127.0.0.1:1/v1", api_key="k", timeout=timeout)
    return BrowserChatModel(opts, transport=transport), calls


def test_candidates_are_sampled_with_a_seed_each():
    model, calls = _model((200, json.dumps({"choices": [{"message": {"content": "x"}}]})))
    replies = model.cadet_sample([("human", "q")], count=2, seed=3, temperature=0.7)
    assert [r.content for r in replies] == ["x", "x"]
    assert [(c[3]["temperature"], c[3]["seed"]) for c in calls] == [(0.7, 3), (0.7, 4)]
    model.invoke([("human", "q")])
    assert "seed" not in calls[-1][3] and "temperature" not in calls[-1][3]


def test_request_and_reply():
    model, calls = _model((200, json.dumps({"choices": [{"message": {"content": "SELECT 1"}}]})))
    reply = model.invoke([("system", "rules"), ("human", "Question: q")])
    assert reply.content == "SELECT 1"
    ((method, url, headers, body, seconds),) = calls
    assert (method, url, seconds) == ("POST", "http://127.0.0.1:1/v1/chat/completions", 120.0)
    assert headers == {"Content-Type": "application/json", "Authorization": "Bearer k"}
    assert body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "Question: q"},
        ],
    }


ERRORS = [
    ((401, '{"error": {"message": "Incorrect API key"}}'), "answered HTTP 401 for http"),
    ((502, "<html>Bad gateway</html>"), "answered HTTP 502"),
    ((200, "not json"), "did not answer in the OpenAI chat format"),
    (TransportError("timeout"), "did not answer within AskMagic.model_timeout = 7 s"),
    (TransportError("blocked", "NetworkError"), "Access-Control-Allow-Headers: authorization"),
    (TransportError("network", "Connection refused"), "Could not reach http://127.0.0.1:1/v1"),
]


@pytest.mark.parametrize(("answer", "expect"), ERRORS, ids=[e for _, e in ERRORS])
def test_one_line_errors(answer, expect):
    model, _ = _model(answer, timeout=7)
    with pytest.raises(ModelCallError) as e:
        model.invoke([("human", "q")])
    assert expect in str(e.value)
    assert "\n" not in str(e.value)


def test_load_model_uses_the_client_without_langchain(monkeypatch):
    from cadet_magic.llm import load_model
    from cadet_magic.llm.browser import BrowserChatModel as Client

    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)  # as in Pyodide
    model = load_model("ollama:llama3.1", base_url="http://127.0.0.1:2/v1", timeout=5)
    assert isinstance(model, Client)
    assert model.options.url == "http://127.0.0.1:2/v1/chat/completions"
    assert model.options.timeout == 5


def test_magic_with_an_openai_compatible_server(ipython_shell, monkeypatch):
    """%%ask without LangChain: the client (stdlib transport on CPython) against a real server on
    127.0.0.1; a failed attempt is corrected on the next; its errors are one line."""
    import sqlite3

    from tests.fake_openai import FakeOpenAI

    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE orders (id INTEGER)")
    con.executemany("INSERT INTO orders VALUES (?)", [(1,), (2,)])
    ipython_shell.user_ns["browser_con"] = con
    replies = ["SELECT COUNT(*) AS n FROM order", "SELECT COUNT(*) AS n FROM orders"]
    with FakeOpenAI(replies) as server:
        run = ipython_shell.run_line_magic
        run("config", f'AskMagic.base_url = "{server.base_url}"')
        run("config", 'AskMagic.api_key = "secret-k"')
        run("config", "AskMagic.live = False")
        try:
            args = "--con browser_con --model openai:scripted-test-model"
            result = ipython_shell.run_cell_magic("ask", args, "How many orders?")
            assert result.ok and result.rows == [(2,)], result
            assert len(result.attempts) == 2
            assert server.received[-1].headers["authorization"] == "Bearer secret-k"
            server.script([{"status": 429, "message": "Rate limit reached"}])
            out = ipython_shell.run_cell_magic("ask", args, "How many orders?")
            assert not out.ok and out.stop_reason == "model_error"
            line = out.attempts[-1].error
            assert "answered HTTP 429" in line and "Rate limit reached" in line, line
            assert "\n" not in line
        finally:
            run("config", "AskMagic.base_url = None")
            run("config", "AskMagic.api_key = None")
            run("config", "AskMagic.live = True")
