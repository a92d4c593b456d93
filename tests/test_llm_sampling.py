"""Several sampled replies from a LangChain chat model (:mod:`cadet_magic.llm.sampling`),
against the scripted OpenAI-compatible server (replies scripted, not a real model): one
request with ``n`` where the server honours it, one request per reply with the following
seeds where it answers one (llama-cpp-python's server), the user's model left as it was."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("langchain_openai")

from fake_openai import FakeOpenAI
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from cadet_magic.llm.sampling import LangChainSampler, sampler_for

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


def test_a_sampler_trying_side_by_side_gets_the_rest_of_a_round_together():
    with FakeOpenAI(["a", "b", "c", "d"]) as srv:
        m = model(srv)
        sample = LangChainSampler(m, type(m).model_fields, parallel=None)
        first = sample(PROMPT, count=3, seed=10, temperature=0.7)
        last = sample(PROMPT, count=1, seed=13, temperature=0.7)
    # the server answered one reply to a request for three: the two others were sent side by
    # side (the scripted server answers in arrival order: which got which is not fixed)
    assert sorted(r.content for r in first) == ["a", "b", "c"] and last[0].content == "d"
    asked = sorted((b.get("n"), b["seed"], b["temperature"]) for b in srv.requests[1:3])
    assert srv.requests[0]["n"] == 3 and asked == [(None, 11, 0.7), (None, 12, 0.7)]
    assert srv.requests[3].get("n") is None and srv.requests[3]["seed"] == 13
    assert all(b["messages"] == srv.requests[0]["messages"] for b in srv.requests)
    assert (m.temperature, m.seed, m.n) == (0, None, None)  # the user's model unchanged
    assert sample.together


class OneAtATime:
    """A scripted LangChain-like chat model whose server answers one request at a time
    (scripted replies, not a real model): each request holds a lock for ``seconds``."""

    model_fields = {"temperature": None, "seed": None, "n": None}
    lock = threading.Lock()

    def __init__(self, seconds: float, update: dict | None = None) -> None:
        self.seconds, self.update = seconds, update or {}

    def model_copy(self, update: dict) -> OneAtATime:
        return OneAtATime(self.seconds, update)

    def generate(self, prompts):
        with self.lock:
            time.sleep(self.seconds)
        message = AIMessage(content=f"seed {self.update.get('seed')}")
        return SimpleNamespace(generations=[[SimpleNamespace(message=message)]])


def test_a_server_answering_one_request_at_a_time_is_not_asked_for_rounds():
    sample = LangChainSampler(OneAtATime(0.6), OneAtATime.model_fields, parallel=None)
    # n asked, one given; the two others side by side, the second answered after the first
    three = sample(PROMPT, count=3, seed=1, temperature=0.7)
    assert [r.content for r in three] == ["seed 1", "seed 2", "seed 3"]
    assert not sample.batch and sample.parallel is False and not sample.together
    # known to answer one at a time: not ``together``, so the vote asks for one candidate at a
    # time, only as many as it needs (a caller asking for two gets them one after the other)
    assert [r.content for r in sample(PROMPT, count=1, seed=4, temperature=0.7)] == ["seed 4"]


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
