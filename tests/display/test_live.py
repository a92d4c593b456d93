"""%%ask with the live display on and off, in a real IPython shell (no frontend)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from cadet_magic.display import live, mimebundle
from cadet_magic.display.live import WIDGET_VIEW, LiveDisplay, describe_model
from cadet_magic.kinds import Phase, StepName
from cadet_magic.llm import ScriptedModel
from tests.display.results import CORRECTED, REPLIES, sqlite_shop

pytestmark = pytest.mark.filterwarnings(
    "ignore:Traits should be given as instances:DeprecationWarning"  # ipylab 1.1
)


class Handle:
    """Records what a display handle was shown."""

    def __init__(self, shown: list) -> None:
        self.shown = shown

    def update(self, bundle, raw=False, metadata=None):
        assert raw
        self.shown.append(("update", bundle))
        self.metadata = metadata


@pytest.fixture
def ip(ipython_shell):
    ipython_shell.user_ns["shop"] = sqlite_shop()
    ipython_shell.user_ns["scripted"] = ScriptedModel(REPLIES, name="scripted:display-tests")
    magics = ipython_shell.magics_manager.registry["AskMagic"]
    saved = magics.live
    yield ipython_shell
    magics.live = saved


@pytest.fixture
def kernel(monkeypatch):
    """Pretends to run in a kernel: displays are recorded instead of sent."""
    shown: list = []

    def display(bundle, display_id=True):
        shown.append(("display", bundle))
        return Handle(shown)

    monkeypatch.setattr(live, "in_kernel", lambda: True)
    monkeypatch.setattr(live, "_display", display)
    return shown


def ask(ip):
    return ip.run_cell_magic("ask", "--con shop --model scripted", CORRECTED)


def test_live_off_returns_the_result_with_its_static_bundle(ip, kernel):
    ip.run_line_magic("config", "AskMagic.live = False")
    out = ask(ip)
    assert out is ip.user_ns["_ask"] and out.ok and not kernel
    bundle = mimebundle(out)
    assert "Attempt 2" in bundle["text/plain"] and "Attempt 2" in bundle["text/html"]


def test_outside_a_kernel_there_is_no_live_display(ip):
    ip.run_line_magic("config", "AskMagic.live = True")
    out = ask(ip)  # terminal IPython: the result's own static bundle is the display
    assert out is ip.user_ns["_ask"] and out.ok


def test_live_on_shows_the_panel_beside_the_static_account(ip, kernel):
    ip.run_line_magic("config", "AskMagic.live = True")
    out = ask(ip)
    assert out is None and ip.user_ns["_ask"].ok
    (kind, first), (kind2, last) = kernel[0], kernel[-1]
    assert kind == "display" and kind2 == "update" and len(kernel) == 2
    assert WIDGET_VIEW in first and "running" in first["text/plain"]
    model_id = first[WIDGET_VIEW]["model_id"]
    assert last[WIDGET_VIEW]["model_id"] == model_id
    assert "Attempt 1: error [column_not_found]" in last["text/plain"]
    assert "Attempt 2: ok" in last["text/plain"] and "SCRIPTED" in last["text/plain"]
    assert "Feedback sent to the model" in last["text/html"]
    assert "Traceback" not in last["text/html"]


def test_a_failing_widget_falls_back_to_the_static_account(ip, kernel, monkeypatch):
    from cadet_magic.display.panel import AskPanel

    def broken(self, event):
        raise RuntimeError("comm closed")

    monkeypatch.setattr(AskPanel, "update", broken)
    ip.run_line_magic("config", "AskMagic.live = True")
    out = ask(ip)
    assert out is None and ip.user_ns["_ask"].ok  # the answer still came back
    last = kernel[-1][1]
    assert WIDGET_VIEW not in last and "Attempt 2: ok" in last["text/plain"]
    assert "Answer" in last["text/html"]


def test_no_widgets_means_static_only(ip, kernel, monkeypatch):
    import cadet_magic.display.panel as panel

    monkeypatch.setattr(panel, "AskPanel", None)  # calling it fails like a missing ipywidgets
    ip.run_line_magic("config", "AskMagic.live = True")
    assert ask(ip) is None
    assert all(WIDGET_VIEW not in bundle for _, bundle in kernel)
    assert "Attempt 2: ok" in kernel[-1][1]["text/plain"]


def test_configuration_error_empties_the_live_output(ip, kernel):
    ip.run_line_magic("config", "AskMagic.live = True")
    with pytest.raises(UsageError):
        ip.run_cell_magic("ask", "--con shop --model nosuch:model", CORRECTED)
    assert kernel[-1] == ("update", {"text/plain": ""})


def test_close_and_describe_model():
    display = LiveDisplay.__new__(LiveDisplay)
    display.panel, display.question = None, "q"
    shown: list = []
    display.handle = Handle(shown)
    display.close()
    assert shown == [("update", {"text/plain": ""})]
    assert describe_model("scripted:replies.json", {})[1] is True
    assert describe_model("openai:gpt-4o-mini", {}) == ("openai:gpt-4o-mini", False)
    label, scripted = describe_model("m", {"m": ScriptedModel({}, name="scripted:x")})
    assert scripted and "scripted" in label
    assert describe_model(None, None) == ("not set", False)


def test_interrupt_keeps_the_attempts_shown(ip, kernel, monkeypatch):
    import cadet_magic.api

    real_ask = cadet_magic.api.ask

    def interrupted(question, **kwargs):
        events = []
        real_ask(question, **{**kwargs, "on_event": events.append})
        for event in events[:6]:  # attempt 1 failed, attempt 2 asked for
            kwargs["on_event"](event)
        raise KeyboardInterrupt

    monkeypatch.setattr(cadet_magic.api, "ask", interrupted)
    ip.run_line_magic("config", "AskMagic.live = True")
    with pytest.raises(UsageError, match="Interrupted"):
        ask(ip)
    kind, last = kernel[-1]
    assert WIDGET_VIEW in last and "stopped before an answer" in last["text/plain"]


class Steps:
    """A panel that records the steps it was shown."""

    def __init__(self) -> None:
        self.steps: list[str] = []

    def update(self, event) -> None:
        self.steps.append(event.step)


@pytest.mark.parametrize(
    ("steps", "shown"),
    [
        # (step, phase, seconds since the run began) -> the steps the panel shows
        (
            [("read_schema", "sql", 0.01), ("generate", "sql", 0.02), ("check", "sql", 0.03)],
            ["read_schema", "check"],  # before the model call and the query: at once
        ),
        (
            [("execute", "sql", 0.05), ("diagnose", "sql", 0.06), ("next_attempt", "sql", 0.07)],
            ["next_attempt"],  # quick local steps between two waits
        ),
        (
            [("generate", "sql", 0.5), ("check", "sql", 0.51), ("execute", "sql", 1.2)],
            ["generate", "check", "execute"],  # a slow model, a slow query: every step
        ),
        (
            [("hand_over", "fallback", 0.1), ("check_code", "fallback", 0.11)],
            ["hand_over", "check_code"],
        ),
        ([("execute", "fallback", 0.1), ("run_code", "fallback", 0.12)], ["execute"]),
    ],
)
def test_quick_steps_between_waits_are_not_each_shown(steps, shown):
    from cadet_magic.agent.events import StepDone

    now = [0.0]
    display = LiveDisplay.__new__(LiveDisplay)
    display.panel, display.question, display.clock, display._shown = (
        Steps(),
        "q",
        lambda: now[0],
        0.0,
    )
    for step, phase, at in steps:
        now[0] = at
        display.update(StepDone(StepName(step), Phase(phase), 1, 3, "sqlite", "", (), at))
    assert display.panel.steps == shown
