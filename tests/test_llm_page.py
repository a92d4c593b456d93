"""The ``browser`` spec's client (the model in the JupyterLite page) against a scripted page.

The page, its service worker relay and the real model are driven in headless Chromium by
tests/lite/test_lite_model.py; here the synchronous request is a scripted transport, so every
answer the page can give (and a missing service worker, a page that does not answer, a part
that does not match the pin, a timeout) is checked for its one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cadet_magic.errors import ConfigurationError, ModelCallError, NoModelError
from cadet_magic.llm import load_model, model_label
from cadet_magic.llm import page as page_module
from cadet_magic.llm.page import NO_MODEL_HERE, NOT_IN_PAGE, PageChatModel
from cadet_magic.llm.transport import TransportError

CASES = json.loads((Path(__file__).parent / "llm_page_cases.json").read_text())["cases"]
ROOT = "http://127.0.0.1:8000/"


class ScriptedPage:
    """Answers the client's requests in the order a case lists them, checking each one; a
    request that asks to wait moves the clock by that wait."""

    def __init__(self, answers: list) -> None:
        self.answers = list(answers)
        self.bodies: list[dict] = []
        self.timeouts: list[float] = []
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def __call__(self, method, url, headers, body, timeout):
        want_method, want_path, *answer = self.answers.pop(0)
        assert (method, url) == (want_method, ROOT + "cadet-model/" + want_path)
        self.timeouts.append(timeout)
        if "wait=" in url:
            self.now += float(url.rsplit("wait=", 1)[1])
        if body:
            self.bodies.append(json.loads(body))
        if answer == ["no answer in time"]:
            raise TransportError("timeout")
        status, payload = answer
        return status, payload if isinstance(payload, str) else json.dumps(payload)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_browser_model_client(case):
    page = ScriptedPage(case["answers"])
    shown = []

    def run():
        model = PageChatModel(
            ROOT,
            transport=page,
            timeout=case.get("timeout"),
            on_progress=lambda s: shown.append(s.progress_text()),
            clock=page.clock,
        )
        if "label" in case:
            assert model.cadet_label == case["label"]
            assert model_label(model, "browser") == case["label"]
        return model.invoke([("system", "rules"), ("human", "Question: q")])

    if "error" in case:
        kind, _, start = case["error"].partition(": ")
        with pytest.raises((ConfigurationError, ModelCallError)) as e:
            run()
        assert type(e.value).__name__ == kind
        assert str(e.value).startswith(start), str(e.value)
        assert "\n" not in str(e.value)
    else:
        reply = run()
        assert reply.content == case["content"]
        assert reply.usage == case.get("usage")
        # greedy by default, as the CPython kernel runs the same model
        assert page.bodies[-1]["temperature"] == 0.0
        assert page.bodies[-1]["messages"][1] == {"role": "user", "content": "Question: q"}
    assert shown == case.get("progress", shown)
    assert not page.answers, "the client skipped a request the page expected"


def test_outside_the_page():
    """The spec in a CPython kernel: one line naming what works there."""
    with pytest.raises(ConfigurationError) as e:
        load_model("browser")
    assert str(e.value) == NOT_IN_PAGE


def test_a_long_call_is_asked_for_every_20_seconds():
    """No model_timeout: the client's own limit (600 s), long enough for two slow cores; no
    request waits more than 20 s (the service worker answers each one)."""
    running = ["GET", "calls/c1?wait=20", 200, {"state": "running"}]
    done = {"state": "done", "reply": {"choices": [{"message": {"content": "x"}}]}}
    page = ScriptedPage(
        [
            ["GET", "status", 200, {"state": "ready", "version": 1}],
            ["GET", "status", 200, {"state": "ready", "version": 1}],
            ["POST", "calls", 200, {"id": "c1"}],
            *[running] * 7,
            ["GET", "calls/c1?wait=20", "no answer in time"],  # a busy page: asked again
            *[running] * 6,
            ["GET", "calls/c1?wait=20", 200, done],
        ]
    )
    model = PageChatModel(ROOT, transport=page, on_progress=print, clock=page.clock)
    assert model.invoke([("human", "q")]).content == "x"
    assert page.now == 300.0 and set(page.timeouts[3:]) == {50.0}


def test_an_interrupted_call_is_stopped_in_the_page():
    page = ScriptedPage(
        [
            ["GET", "status", 200, {"state": "ready", "version": 1}],
            ["GET", "status", 200, {"state": "ready", "version": 1}],
            ["POST", "calls", 200, {"id": "c1"}],
            ["POST", "calls/c1/cancel", 200, {"state": "cancelled"}],
        ]
    )

    def interrupted(method, url, headers, body, timeout):
        if "wait=" in url:
            raise KeyboardInterrupt
        return page(method, url, headers, body, timeout)

    model = PageChatModel(ROOT, transport=interrupted, on_progress=print)
    with pytest.raises(KeyboardInterrupt):
        model.invoke([("human", "q")])
    assert not page.answers


@pytest.mark.parametrize(
    ("answers", "label"),
    [
        (
            [
                [
                    "GET",
                    "status",
                    200,
                    {
                        "state": "ready",
                        "version": 2,
                        "name": "Qwen",
                        "threads": 2,
                        "isolated": True,
                    },
                ],
                [
                    "GET",
                    "status",
                    200,
                    {
                        "state": "ready",
                        "version": 2,
                        "name": "Qwen",
                        "threads": 2,
                        "isolated": True,
                    },
                ],
            ],
            "browser (no model configured, so the model in this page): Qwen, run in this page, "
            "2 threads: cross-origin isolated",
        ),
        ([["GET", "status", 200, {"state": "absent", "version": 1}]], None),
        ([["GET", "status", 404, "not found"]], None),
    ],
    ids=["the-sites-model", "a-site-without-it", "no-service-worker"],
)
def test_default_in_jupyterlite(monkeypatch, answers, label):
    """No model configured in JupyterLite: the page's model when the site has one (and the
    answer says it was chosen so), else one line naming what works in the browser."""
    page = ScriptedPage(answers)
    monkeypatch.setattr(
        page_module,
        "PageChatModel",
        lambda **kw: PageChatModel(ROOT, transport=page, on_progress=print, **kw),
    )
    monkeypatch.setattr(sys, "platform", "emscripten")
    monkeypatch.delenv("CADET_MODEL", raising=False)
    if label is None:
        with pytest.raises(NoModelError) as e:
            load_model(None)
        assert str(e.value) == NO_MODEL_HERE
    else:
        assert model_label(load_model(None)) == label
    assert not page.answers
