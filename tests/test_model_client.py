"""The model clients and the key: servers on 127.0.0.1 (the OpenAI-compatible fake), end to
end through ``ask()`` and ``%%ask`` with scripted replies.

- a redirect to another origin is never followed with the key (the standard-library client
  refuses it with one line; LangChain's OpenAI client drops ``Authorization`` on it);
- an error body that echoes the key is shown and logged with the key redacted;
- a key sent over plain HTTP to a host that is not this machine warns once.
"""

from __future__ import annotations

import logging
import sqlite3
import warnings

import pytest

from cadet_magic.api import ask
from cadet_magic.display import mimebundle
from cadet_magic.llm import load_model
from cadet_magic.llm.browser import BrowserChatModel, endpoint
from cadet_magic.llm.transport import urllib_transport
from tests.fake_openai import FakeOpenAI

KEY = "sk-test-0123456789abcdef"
SQL = "```sql\nSELECT count(*) AS n FROM t\n```"


def _con():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x INTEGER)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    return con


def _redirect(to: FakeOpenAI, status: int = 307) -> dict:
    location = to.base_url + "/chat/completions"
    return {"status": status, "body": "", "headers": {"Location": location}}


def _echo() -> dict:
    return {"status": 401, "message": f"Incorrect API key provided: {KEY}. Check it."}


def _browser_model(base_url: str) -> BrowserChatModel:
    opts = endpoint("openai:m", base_url=base_url, api_key=KEY, timeout=10, env={})
    return BrowserChatModel(opts, transport=urllib_transport)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_the_stdlib_client_never_follows_a_redirect_to_another_origin(status):
    with FakeOpenAI([SQL]) as other, FakeOpenAI([]) as server:
        server.script([_redirect(other, status)])
        r = ask("How many?", con=_con(), model=_browser_model(server.base_url))
        assert not r.ok and "redirected the call" in r.message and "not followed" in r.message
        assert other.received == []  # the key never went there
        assert KEY not in r.message


def test_langchains_client_drops_the_key_on_a_redirect_to_another_origin():
    with FakeOpenAI([SQL]) as other, FakeOpenAI([]) as server:
        server.script([_redirect(other, 307)])
        r = ask("How many?", con=_con(), model="openai:m", api_key=KEY, base_url=server.base_url)
        assert r.ok and r.rows == [(1,)]  # it followed, as the provider's client does ...
        assert [q.headers.get("authorization") for q in other.received] == [None]  # ... keyless


@pytest.mark.parametrize("path", ["stdlib", "langchain"])
def test_an_error_that_echoes_the_key_is_redacted(path, caplog):
    with FakeOpenAI([_echo()] * 3) as server:
        model = _browser_model(server.base_url) if path == "stdlib" else "openai:m"
        with caplog.at_level(logging.DEBUG, logger="cadet_magic"):
            r = ask("How many?", con=_con(), model=model, api_key=KEY, base_url=server.base_url)
    assert not r.ok and "***" in r.message
    shown = [r.message, *(a.error for a in r.attempts), mimebundle(r), caplog.text]
    assert not any(KEY in str(x) for x in shown)


def test_an_error_that_echoes_the_key_is_redacted_through_the_magic(ipython_shell):
    ip = ipython_shell
    ip.user_ns["key_con"] = _con()
    with FakeOpenAI([_echo()] * 3) as server:
        ip.run_line_magic("config", f'AskMagic.api_key = "{KEY}"')
        ip.run_line_magic("config", f'AskMagic.base_url = "{server.base_url}"')
        try:
            ip.run_cell_magic("ask", "--model openai:m --con key_con", "How many?")
        finally:
            ip.run_line_magic("config", "AskMagic.api_key = None")
            ip.run_line_magic("config", "AskMagic.base_url = None")
    r = ip.user_ns["_ask"]
    assert not r.ok and KEY not in str(r.message) and KEY not in str(mimebundle(r))


def test_a_key_over_plain_http_to_another_host_warns_once():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        endpoint("openai:m", base_url="http://192.0.2.7:8000/v1", api_key=KEY, env={})
        endpoint("openai:m", base_url="http://192.0.2.7:8000/v1", api_key=KEY, env={})
        endpoint("openai:m", base_url="http://127.0.0.1:8000/v1", api_key=KEY, env={})
        endpoint("openai:m", base_url="https://192.0.2.7/v1", api_key=KEY, env={})
        load_model("openai:m", api_key=KEY, base_url="http://192.0.2.8/v1")
        load_model("openai:m", api_key=KEY, base_url="http://192.0.2.8/v1")
        load_model("openai:m", api_key=KEY, base_url="http://localhost:9/v1")
    texts = [str(w.message) for w in caught if "unencrypted" in str(w.message)]
    assert len(texts) == 2 and "192.0.2.7" in texts[0] and "192.0.2.8" in texts[1]
    assert not any(KEY in t for t in texts)
