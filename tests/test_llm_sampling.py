"""Several sampled replies from a LangChain chat model (:mod:`cadet_magic.llm.sampling`),
against the scripted OpenAI-compatible server (replies scripted, not a real model): one
request with ``n`` where the server honours it, one request per reply with the following
seeds where it answers one (llama-cpp-python's server), the user's model left as it was."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_openai")

from fake_openai import FakeOpenAI
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_openai import ChatOpenAI

from cadet_magic.llm.sampling import sampler_for

PROMPT = [("system", "Write SQL."), ("human", "Question: how many?")]


def model(srv: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(model="m", base_url=srv.base_url, api_key="x", temperature=0)


def test_a_server_that_ignores_n_is_asked_one_reply_at_a_time_with_the_next_seeds():
    with FakeOpenAI(["a", "b", "c", "d"]) as srv:
        m = model(srv)
        sample = sampler_for(m)
        first = sample(PROMPT, count=3, seed=10, temperature=0.7)
        again = sample(PROMPT, count=2, seed=10, temperature=0.7)
        last = sample(PROMPT, count=1, seed=12, temperature=0.7)
    # the server answered one reply to a request for three: that one alone comes back (the
    # caller asks again only if it needs more), and later draws go one by one
    assert [[r.content for r in x] for x in (first, again, last)] == [["a"], ["b", "c"], ["d"]]
    asked = [(b.get("n"), b["seed"], b["temperature"]) for b in srv.requests]
    assert asked == [(3, 10, 0.7), (None, 10, 0.7), (None, 11, 0.7), (None, 12, 0.7)]
    assert all(b["messages"] == srv.requests[0]["messages"] for b in srv.requests)
    assert (m.temperature, m.seed, m.n) == (0, None, None)  # the user's model unchanged


def test_a_server_that_honours_n_answers_in_one_request():
    with FakeOpenAI(["a", "b", "c"], honours_n=True) as srv:
        replies = sampler_for(model(srv))(PROMPT, count=3, seed=1, temperature=0.7)
    assert [r.content for r in replies] == ["a", "b", "c"]
    assert [(b["n"], b["seed"]) for b in srv.requests] == [(3, 1)]
    assert replies[0].usage_metadata["output_tokens"] == 1


def test_scripted_and_own_models_draw_their_own_replies():
    assert sampler_for(FakeListChatModel(responses=["x"])) is None

    class Own:
        def invoke(self, messages):
            return "x"

        def cadet_sample(self, messages, *, count, seed, temperature):
            return ["x"] * count

    assert sampler_for(Own()) is None
    assert sampler_for(object()) is None
