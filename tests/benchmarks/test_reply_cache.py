"""The evaluation's reply cache, in front of the scripted OpenAI-compatible server (its replies
are scripted): the same request is answered once by the server and then from the cache, also
after a restart; other requests, errors and the real provider client go through."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from fake_openai import FakeOpenAI

from benchmarks.reply_cache import ReplyCache, request_key


def chat(base_url: str, content: str, **extra: object) -> tuple[int, dict]:
    body = {"model": "m", "temperature": 0, "messages": [{"role": "user", "content": content}]}
    req = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body | extra).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def reply(answer: dict) -> str:
    return answer["choices"][0]["message"]["content"]


def test_the_same_request_reaches_the_server_once(tmp_path):
    with FakeOpenAI(["first", "second"]) as up, ReplyCache(up.base_url) as cache:
        answers = [
            chat(cache.base_url, "q1"),
            chat(cache.base_url, "q1"),
            chat(cache.base_url, "q2"),
        ]
        assert [(s, reply(a)) for s, a in answers] == [
            (200, "first"),
            (200, "first"),
            (200, "second"),
        ]
        assert len(up.requests) == 2 and (cache.misses, cache.hits) == (2, 1)
        # the stored answer is the server's own, usage included
        assert answers[1][1] == answers[0][1]


def test_stored_replies_survive_a_restart(tmp_path):
    path = tmp_path / "replies.jsonl"
    with FakeOpenAI(["kept"]) as up:
        with ReplyCache(up.base_url, path) as cache:
            chat(cache.base_url, "q")
        with path.open("a") as f:
            f.write('{"key": "cut by an interrupt')  # an unfinished line is skipped
        with ReplyCache(up.base_url, path) as cache:
            assert reply(chat(cache.base_url, "q")[1]) == "kept"
            assert (cache.misses, cache.hits) == (0, 1) and len(up.requests) == 1


def test_two_runs_sharing_the_file_read_what_the_other_stored(tmp_path):
    path = tmp_path / "replies.jsonl"
    with FakeOpenAI(["from a"]) as a, FakeOpenAI(["from b"]) as b:
        with ReplyCache(a.base_url, path) as first, ReplyCache(b.base_url, path) as second:
            assert reply(chat(first.base_url, "q")[1]) == "from a"
            with path.open("a") as f:
                f.write('{"key": "still being written')  # waits for its end of line
            assert reply(chat(second.base_url, "q")[1]) == "from a"
            assert (second.hits, len(b.requests)) == (1, 0)


def test_errors_are_passed_on_and_not_stored():
    script = [{"status": 400, "message": "context too long"}, "after"]
    with FakeOpenAI(script) as up, ReplyCache(up.base_url) as cache:
        status, body = chat(cache.base_url, "q")
        assert status == 400 and "context too long" in json.dumps(body)
        again = [chat(cache.base_url, "q") for _ in range(2)]
        assert [(s, reply(a)) for s, a in again] == [(200, "after")] * 2
        assert len(up.requests) == 2 and (cache.misses, cache.hits) == (2, 1)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (b'{"a": 1, "b": [2]}', b'{"b":[2],"a":1}', True),
        (b'{"temperature": 0}', b'{"temperature": 0.5}', False),
        (b"not json", b"not json", True),
    ],
)
def test_request_key(a, b, same):
    assert (request_key(a) == request_key(b)) is same


def test_the_provider_client_works_through_it():
    from cadet_magic.llm import load_model

    with FakeOpenAI(["SELECT 1"]) as up, ReplyCache(up.base_url) as cache:
        model = load_model("openai:m", base_url=cache.base_url, api_key="local", temperature=0.0)
        assert [model.invoke("hi").content for _ in range(2)] == ["SELECT 1", "SELECT 1"]
        assert cache.hits == 1


def test_a_server_that_is_gone_is_a_502():
    with FakeOpenAI([]) as up:
        gone = up.base_url
    with ReplyCache(gone, timeout=5) as cache:
        status, body = chat(cache.base_url, "q")
        assert status == 502 and "did not answer" in body["error"]["message"]
        assert cache.hits == 0
