"""Tokens and the model's time per attempt: read from each provider's usage report, recorded on
every attempt (SQL and fallback), summed on the result. Models here are scripted: langchain-core's
fake chat model with LangChain usage metadata, and the OpenAI-compatible fake server."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from cadet_magic.agent.events import AttemptProvisional
from cadet_magic.agent.reply import usage_of
from cadet_magic.api import ask
from cadet_magic.result import Attempt, Tokens, add_tokens
from tests.fake_openai import _prompt_text, _tokens
from tests.helpers import counted, sql_reply

CASES = json.loads((Path(__file__).parent / "data" / "usage_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_usage_read_from_each_provider_shape(case):
    reply = SimpleNamespace(**case["reply"])
    expected = None if case["tokens"] is None else Tokens(*case["tokens"])
    assert usage_of(reply) == expected


def shop() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer TEXT, amount REAL)")
    con.execute("INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5), (3, 'ann', 7.5)")
    return con


def test_each_attempt_records_its_tokens_and_model_time():
    model = counted(
        (sql_reply("SELECT customer, SUM(amout) FROM orders GROUP BY customer"), 400, 30),
        (sql_reply("SELECT customer, SUM(amount) AS spent FROM orders GROUP BY customer"), 480, 32),
    )
    r = ask("Total spent per customer?", con=shop(), model=model)
    assert r.ok and [a.outcome for a in r.attempts] == ["error", "ok"]
    assert [a.tokens for a in r.attempts] == [Tokens(400, 30), Tokens(480, 32)]
    assert all(a.model_seconds is not None and a.model_seconds >= 0 for a in r.attempts)
    assert all(a.model_seconds <= a.timings["generate"] for a in r.attempts)
    assert r.tokens == Tokens(880, 62) and r.model_calls == 2
    assert r.model_seconds == pytest.approx(sum(a.model_seconds for a in r.attempts))


def test_fallback_attempts_record_tokens_too():
    bad = sql_reply("SELECT nope FROM orders")
    model = counted(
        (bad, 100, 10),
        (bad.replace("nope", "nope2"), 110, 10),
        (bad.replace("nope", "nope3"), 120, 10),
        (
            "```sql\nSELECT customer, amount FROM orders\n```\n"
            "```python\nresult = df.groupby('customer', as_index=False)['amount'].sum()\n```",
            300,
            60,
        ),
    )
    r = ask("Total spent per customer?", con=shop(), model=model)
    assert r.answered_by == "fallback"
    assert [a.tokens for a in r.fallback.attempts] == [Tokens(300, 60)]
    assert r.tokens == Tokens(630, 90) and len(r.all_attempts) == 4


def test_a_model_without_usage_and_a_failed_call():
    class Silent:
        cadet_scripted = True

        def invoke(self, messages):
            return SimpleNamespace(content=sql_reply("SELECT 1 AS one"))

    r = ask("One?", con=shop(), model=Silent())
    assert r.ok and r.attempts[0].tokens is None and r.tokens is None
    assert r.attempts[0].model_seconds is not None

    class Broken:
        cadet_scripted = True

        def invoke(self, messages):
            raise RuntimeError("the server is down")

    r = ask("One?", con=shop(), model=Broken())
    a = r.attempts[0]
    assert a.outcome == "model_error" and a.tokens is None and a.model_seconds is not None


def test_provisional_records_carry_the_tokens_while_running():
    events = []
    model = counted((sql_reply("SELECT COUNT(*) AS n FROM orders"), 70, 8))
    ask("How many orders?", con=shop(), model=model, on_event=events.append)
    after_reply = [e for e in events if isinstance(e, AttemptProvisional) and e.step == "generate"]
    assert after_reply and after_reply[0].attempt.tokens == Tokens(70, 8)


def served_usage(server) -> Tokens:
    """The usage the fake server reported for its last answer (word counts)."""
    reply = sql_reply("SELECT COUNT(*) AS n FROM orders")
    return Tokens(_tokens(_prompt_text(server.requests[-1])), _tokens(reply))


def test_openai_client_reports_the_servers_usage(openai_env):
    """langchain-openai against the OpenAI-compatible fake server: its ``usage`` block (the
    prompt's and the reply's word counts) becomes the attempt's tokens."""
    openai_env.script([sql_reply("SELECT COUNT(*) AS n FROM orders")])
    r = ask("How many orders?", con=shop(), model="openai:gpt-4o-mini")
    assert r.ok and r.attempts[0].tokens == served_usage(openai_env)


def test_browser_client_reports_the_servers_usage(fake_openai):
    from cadet_magic.llm.browser import BrowserChatModel, endpoint
    from cadet_magic.llm.transport import urllib_transport

    fake_openai.script([sql_reply("SELECT COUNT(*) AS n FROM orders")])
    model = BrowserChatModel(
        endpoint("openai:m", base_url=fake_openai.base_url, api_key="k", env={}),
        transport=urllib_transport,
    )
    r = ask("How many orders?", con=shop(), model=model)
    assert r.ok and r.attempts[0].tokens == served_usage(fake_openai)


def test_sums_skip_calls_without_usage():
    attempts = [Attempt(1, tokens=Tokens(5, 1)), Attempt(2), Attempt(3, tokens=Tokens(None, 4))]
    assert add_tokens(a.tokens for a in attempts) == Tokens(5, 5)


#: Usage reports no provider's count can be (a broken or hostile server): infinity and NaN
#: (JSON readers accept them), a 5,000-digit integer (Python refuses to show it as text), a
#: negative, a fraction, more than any call uses. Each side of the report is read as None.
HOSTILE_COUNTS = [
    pytest.param(float("inf"), id="infinity"),
    pytest.param(float("-inf"), id="minus-infinity"),
    pytest.param(float("nan"), id="nan"),
    pytest.param(10**5000, id="5000-digit-int"),
    pytest.param(-3, id="negative"),
    pytest.param(2.5, id="fraction"),
    pytest.param(10**12, id="beyond-any-call"),
]
#: Where each provider's client puts its report on the reply.
REPORT_SHAPES = {
    "usage": lambda n: {"usage": {"prompt_tokens": n, "completion_tokens": 7}},
    "response_metadata": lambda n: {
        "response_metadata": {"token_usage": {"prompt_tokens": n, "completion_tokens": 7}}
    },
    "ollama": lambda n: {"response_metadata": {"prompt_eval_count": n, "eval_count": 7}},
}


@pytest.mark.parametrize("shape", sorted(REPORT_SHAPES))
@pytest.mark.parametrize("count", HOSTILE_COUNTS)
def test_a_hostile_usage_report_never_breaks_the_answer(count, shape):
    """A **scripted** model whose replies carry the report: the query runs, the answer, its
    provenance, its panel and its text all come out, the count that is not one as None."""
    from cadet_magic.display.plain_text import render_text
    from cadet_magic.display.static import render_html

    class Reporting:
        cadet_scripted = True

        def invoke(self, messages):
            fields = REPORT_SHAPES[shape](count)
            return SimpleNamespace(content=sql_reply("SELECT COUNT(*) AS n FROM orders"), **fields)

    r = ask("How many orders?", con=shop(), model=Reporting(), candidates=1)
    assert r.ok and r.rows == [(3,)], r.attempts[-1].error
    assert r.attempts[0].tokens == Tokens(None, 7) and r.tokens == Tokens(None, 7)
    json.dumps(r.provenance)
    assert "How many orders?" in render_html(r) and render_text(r)


@pytest.mark.parametrize(
    "number", ["Infinity", "NaN", "-Infinity", "9" * 5000, "-" + "9" * 5000, "1e999"]
)
def test_the_browser_client_reads_a_reply_whose_usage_is_not_a_count(number):
    """The browser client's JSON reader (a server's raw answer, scripted): the reply is read,
    the count that is not one is None, and the question is answered."""
    from cadet_magic.llm.browser import BrowserChatModel, endpoint

    body = (
        '{"choices": [{"message": {"content": '
        + json.dumps(sql_reply("SELECT COUNT(*) AS n FROM orders"))
        + '}}], "usage": {"prompt_tokens": '
        + number
        + ', "completion_tokens": 7}}'
    )

    def transport(method, url, headers, data, seconds):
        return 200, body

    model = BrowserChatModel(
        endpoint("openai:m", base_url="http://127.0.0.1:1/v1", api_key="k", env={}),
        transport=transport,
    )
    r = ask("How many orders?", con=shop(), model=model, candidates=1)
    assert r.ok and r.rows == [(3,)], r.attempts[-1].error
    assert r.attempts[0].tokens == Tokens(None, 7)
    json.dumps(r.provenance)
