"""The scripted OpenAI-compatible server, driven through real provider clients.

Also pins down how the installed ``langchain-openai``/``openai`` behave on the
HTTP path users take with ``--model openai:<name>``: which environment
variables set the base URL, which exception a server error becomes, and how
retries work.
"""

from __future__ import annotations

import doctest
import json
import socket
import time
import urllib.error
import urllib.request

import fake_openai as fake_openai_module
import pytest
from conftest import need
from fake_openai import FakeOpenAI, fake_openai  # noqa: F401  (fixture)

from tests.helpers import TIME_SLACK

MODEL = "openai:scripted-test-model"
MESSAGES = [("system", "s"), ("human", "q")]
ENV_VARS = (
    "OPENAI_API_BASE",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "LANGSMITH_GATEWAY",
    "LANGSMITH_GATEWAY_API_KEY",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """No ambient OpenAI, gateway or proxy settings reach the clients."""
    for name in ENV_VARS + PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def init_chat_model():
    try:
        import langchain_openai  # noqa: F401
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        need(False, f"langchain-openai not installed ({exc})")
    return init_chat_model


def _post(url: str, body: object) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


# --- the server on its own ------------------------------------------------------


def test_docstring_examples_run():
    result = doctest.testmod(fake_openai_module)
    assert result.attempted > 0
    assert result.failed == 0


def test_completion_shape_and_recording(fake_openai):  # noqa: F811
    fake_openai.script(["one two three"])
    status, reply = _post(
        fake_openai.base_url + "/chat/completions",
        {"model": "m1", "messages": [{"role": "user", "content": "how many"}]},
    )
    assert status == 200
    assert reply["object"] == "chat.completion"
    assert reply["model"] == "m1"
    assert reply["id"].startswith("chatcmpl-")
    assert isinstance(reply["created"], int)
    assert reply["choices"][0]["message"] == {
        "role": "assistant",
        "content": "one two three",
        "refusal": None,
    }
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}
    assert fake_openai.requests == [
        {"model": "m1", "messages": [{"role": "user", "content": "how many"}]}
    ]
    assert fake_openai.received[0].path == "/v1/chat/completions"
    assert fake_openai.pending == 0


def test_error_spec_and_exhausted_script(fake_openai):  # noqa: F811
    fake_openai.script([{"status": 429, "message": "slow down"}])
    status, body = _post(fake_openai.base_url + "/chat/completions", {"messages": []})
    assert status == 429
    assert body == {
        "error": {
            "message": "slow down",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    status, body = _post(fake_openai.base_url + "/chat/completions", {"messages": []})
    assert status == 500
    assert "no scripted reply left" in body["error"]["message"]


def test_models_listing(fake_openai):  # noqa: F811
    with urllib.request.urlopen(fake_openai.base_url + "/models", timeout=5) as response:
        listing = json.load(response)
    assert listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == ["scripted-test-model"]


def test_stop_is_clean_and_idempotent():
    server = FakeOpenAI([{"content": "late", "delay": 30}]).start()
    port = server.port
    started = time.monotonic()
    with pytest.raises(OSError):  # the delayed answer is cut short by stop()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            body = b'{"messages": []}'
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            time.sleep(0.2)
            server.stop()
            if not sock.recv(1024):
                raise ConnectionResetError("closed without an answer")
    server.stop()
    assert time.monotonic() - started < 0.2 + TIME_SLACK
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_script_rejects_other_types():
    with pytest.raises(TypeError):
        FakeOpenAI([42])


# --- through langchain's init_chat_model and the openai client ------------------


def test_init_chat_model_gets_scripted_content(fake_openai, init_chat_model):  # noqa: F811
    fake_openai.script(["SELECT 42 AS answer", "second reply"])
    model = init_chat_model(MODEL, base_url=fake_openai.base_url, api_key="test", max_retries=0)
    reply = model.invoke(MESSAGES)
    assert reply.content == "SELECT 42 AS answer"
    assert reply.usage_metadata["total_tokens"] == 6  # "s q" + four words
    assert reply.response_metadata["model_name"] == "scripted-test-model"
    assert model.invoke("again").content == "second reply"
    first = fake_openai.requests[0]
    assert first["model"] == "scripted-test-model"
    assert first["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
    ]
    assert fake_openai.received[0].headers["authorization"] == "Bearer test"


def test_streaming_through_langchain(fake_openai, init_chat_model):  # noqa: F811
    fake_openai.script(["SELECT 1 AS one"])
    model = init_chat_model(MODEL, base_url=fake_openai.base_url, api_key="test", max_retries=0)
    text = "".join(chunk.content for chunk in model.stream(MESSAGES))
    assert text == "SELECT 1 AS one"
    assert fake_openai.requests[0]["stream"] is True


def test_scripted_500_raises_one_clear_error(fake_openai, init_chat_model):  # noqa: F811
    import openai

    fake_openai.script([{"status": 500, "message": "The server had an error"}])
    model = init_chat_model(MODEL, base_url=fake_openai.base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.InternalServerError) as info:
        model.invoke(MESSAGES)
    err = info.value
    # langchain-openai re-raises the openai error as its own subclass.
    assert type(err).__name__ == "OpenAIAPIError"
    assert isinstance(err, openai.APIStatusError)
    assert err.status_code == 500
    assert str(err) == "Error code: 500 - The server had an error"
    assert err.body["message"] == "The server had an error"  # the inner "error" object
    assert len(fake_openai.requests) == 1, "max_retries=0 must not retry"


def test_other_statuses_map_to_openai_classes(fake_openai, init_chat_model):  # noqa: F811
    import openai

    cases = [
        (429, openai.RateLimitError, "OpenAIRateLimitError"),
        (401, openai.AuthenticationError, "OpenAIAuthenticationError"),
        (400, openai.BadRequestError, "OpenAIInvalidRequestError"),
    ]
    fake_openai.script([{"status": status} for status, _, _ in cases])
    model = init_chat_model(MODEL, base_url=fake_openai.base_url, api_key="test", max_retries=0)
    for status, cls, name in cases:
        with pytest.raises(cls) as info:
            model.invoke("q")
        assert type(info.value).__name__ == name
        assert str(info.value).startswith(f"Error code: {status} - ")


def test_non_openai_error_body_gives_a_bare_message(fake_openai, init_chat_model):  # noqa: F811
    import openai

    fake_openai.script([{"status": 502, "body": "<html>Bad Gateway</html>"}])
    model = init_chat_model(MODEL, base_url=fake_openai.base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.APIStatusError) as info:
        model.invoke("q")
    assert str(info.value) == "Error code: 502"  # the detail is only in .body
    assert info.value.body == "<html>Bad Gateway</html>"


def test_default_client_retries_5xx_twice(fake_openai, init_chat_model):  # noqa: F811
    import openai

    # retry-after-ms keeps the test fast; without it the openai client backs off
    # about 0.5 s then 1 s (with jitter), so ~1.3 s for the two default retries.
    fast = {"status": 500, "headers": {"retry-after-ms": "10"}}
    fake_openai.script([fast, fast, "third time lucky"])
    model = init_chat_model(MODEL, base_url=fake_openai.base_url, api_key="test")
    assert model.invoke("q").content == "third time lucky"
    assert len(fake_openai.requests) == 3

    fake_openai.script([fast, fast, fast, "never reached"])
    with pytest.raises(openai.InternalServerError):
        model.invoke("q")
    assert len(fake_openai.requests) == 6
    assert fake_openai.pending == 1


def test_server_can_forbid_retries(fake_openai, init_chat_model):  # noqa: F811
    import openai

    fake_openai.script([{"status": 503, "headers": {"x-should-retry": "false"}}, "unused"])
    model = init_chat_model(MODEL, base_url=fake_openai.base_url, api_key="test")
    with pytest.raises(openai.InternalServerError):
        model.invoke("q")
    assert len(fake_openai.requests) == 1


def test_unreachable_server_is_a_connection_error(init_chat_model):
    import openai

    with FakeOpenAI() as server:
        base_url = server.base_url
    model = init_chat_model(MODEL, base_url=base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.APIConnectionError) as info:
        model.invoke("q")
    assert type(info.value).__name__ == "OpenAIConnectionError"
    assert str(info.value) == "Connection error."


# --- environment-only configuration (what `--model openai:<name>` relies on) ----


@pytest.mark.parametrize("variable", ["OPENAI_API_BASE", "OPENAI_BASE_URL"])
def test_base_url_from_environment(fake_openai, init_chat_model, monkeypatch, variable):  # noqa: F811
    monkeypatch.setenv(variable, fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    fake_openai.script(["from the environment"])
    model = init_chat_model(MODEL, max_retries=0)
    assert model.invoke(MESSAGES).content == "from the environment"
    assert fake_openai.received[0].headers["authorization"] == "Bearer env-key"


def test_openai_api_base_wins_over_openai_base_url(fake_openai, init_chat_model, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_BASE", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    fake_openai.script(["api base wins"])
    assert init_chat_model(MODEL, max_retries=0).invoke("q").content == "api base wins"


def test_missing_api_key_fails_when_the_model_is_built(fake_openai, init_chat_model, monkeypatch):  # noqa: F811
    import openai

    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    with pytest.raises(openai.OpenAIError, match="OPENAI_API_KEY"):
        init_chat_model(MODEL)
    assert fake_openai.received == []
