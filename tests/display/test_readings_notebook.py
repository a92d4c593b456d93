"""Readings in the notebook, in a real IPython shell with the live panel (displays recorded,
no frontend) and a scripted model (stored replies, not a real LLM) whose three candidates split
2 to 1 on SQLite: the panel asks one question with a button per reading, a click makes that
reading the cell's answer without a model call (``-o``, ``_ask``, the output's provenance, the
session's history and stats), ``%cadet choose N`` does the same without widgets, and a kept
choice is a confirmed example that a later answer with its result names."""

from __future__ import annotations

import pytest

from cadet_magic.display import live, render_text
from cadet_magic.display.live import WIDGET_VIEW
from cadet_magic.display.plain_text import READINGS_QUESTION
from cadet_magic.llm import ScriptedModel
from tests.display.results import sqlite_shop
from tests.display.test_live import Handle
from tests.helpers import sql_reply

pytestmark = pytest.mark.filterwarnings(
    "ignore:Traits should be given as instances:DeprecationWarning"  # ipylab 1.1
)

QUESTION = "What did each city order, highest first?"
TOP = (
    "SELECT c.city, sum(o.amount) AS total FROM orders AS o JOIN customers AS c "
    "ON c.customer_id = o.customer_id GROUP BY c.city ORDER BY total DESC LIMIT 1"
)
EVERY = TOP.replace(" LIMIT 1", "")
SPLIT = [TOP, EVERY, TOP]


class Counting(ScriptedModel):
    calls = 0

    def invoke(self, messages, *args, **kwargs):
        type(self).calls += 1
        return super().invoke(messages, *args, **kwargs)


@pytest.fixture
def ip(ipython_shell, tmp_path, monkeypatch):
    shell = ipython_shell
    shell.user_ns["shop"] = sqlite_shop()
    magics = shell.magics_manager.registry["AskMagic"]
    saved = (magics.live, magics.examples_path, magics.last, magics.candidates, magics.ask_readings)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    magics.examples_path = ".cadet/examples.jsonl"
    magics.metrics.reset()
    yield shell
    (magics.live, magics.examples_path, magics.last, magics.candidates,
     magics.ask_readings) = saved  # fmt: skip


@pytest.fixture
def shown(monkeypatch):
    shown: list = []
    handles: list = []

    def display(bundle, display_id=True):
        shown.append(("display", bundle))
        handles.append(Handle(shown))
        return handles[-1]

    monkeypatch.setattr(live, "in_kernel", lambda: True)
    monkeypatch.setattr(live, "_display", display)
    return shown, handles


def ask(ip, replies=SPLIT, line="--con shop --model m --candidates 3 -o out"):
    Counting.calls = 0
    ip.user_ns["m"] = Counting({QUESTION: [sql_reply(r) for r in replies]})
    return ip.run_cell_magic("ask", line, QUESTION)


def panel_buttons(bundle):
    import ipywidgets as W
    from ipywidgets.widgets.widget import _instances

    root = _instances[bundle[WIDGET_VIEW]["model_id"]]
    found, todo = [], [root]
    while todo:
        w = todo.pop()
        if isinstance(w, W.Button) and w.description[:2] in ("0:", "1:"):
            found.append(w)
        todo += list(getattr(w, "children", ()))
    return sorted(found, key=lambda b: b.description)


def test_the_panel_asks_and_a_click_answers_without_a_model_call(ip, shown):
    records, handles = shown
    ip.run_line_magic("config", "AskMagic.live = True")
    assert ask(ip) is None
    asked = ip.user_ns["_ask"]
    assert asked.asks and [r.summary for r in asked.readings] == ["top 1", "all rows"]
    assert list(ip.user_ns["out"].itertuples(index=False, name=None)) == [("Rome", 32.5)]
    last = records[-1][1]
    assert READINGS_QUESTION in last["text/plain"] and "leading reading" in last["text/plain"]
    buttons = panel_buttons(last)
    assert [b.description for b in buttons] == ["0: top 1", "1: all rows"]
    calls = Counting.calls
    buttons[1].click()
    chosen = ip.user_ns["_ask"]
    assert Counting.calls == calls  # no model call
    assert chosen.sql == EVERY and chosen.chosen == 1 and not chosen.asks
    rows = list(ip.user_ns["out"].itertuples(index=False, name=None))
    assert rows == [("Rome", 32.5), ("Oslo", 29.5)]
    kind, bundle = records[-1]
    assert kind == "update" and "the reading you chose: all rows" in bundle["text/plain"]
    provenance = handles[-1].metadata["cadet"]
    assert provenance["sql"] == EVERY and provenance["chosen"]["reading"] == 1
    assert buttons[1].button_style == "success" and buttons[0].button_style == ""
    stats = ip.run_line_magic("cadet", "stats").text
    (line,) = [x for x in stats.splitlines() if "Asked which reading was meant" in x]
    assert line.split()[-3:] == ["1,", "chosen", "1"]


def test_cadet_choose_without_widgets_and_readings_off(ip):
    ip.run_line_magic("config", "AskMagic.live = False")
    asked = ask(ip)
    assert asked.asks and len(ip.user_ns["out"]) == 1
    chosen = ip.run_line_magic("cadet", "choose 1")
    assert chosen is ip.user_ns["_ask"] and chosen.sql == EVERY and len(ip.user_ns["out"]) == 2
    again = ip.run_line_magic("cadet", "choose 0")  # a change of mind: from the readings asked
    assert again.sql == TOP and len(ip.user_ns["out"]) == 1
    with pytest.raises(Exception, match="0 to 1"):
        ip.run_line_magic("cadet", "choose 7")
    ip.run_line_magic("config", "AskMagic.ask_readings = False")
    plain = ask(ip)
    assert not plain.asks and plain.readings == () and plain.uncertain
    with pytest.raises(Exception, match="no readings to choose from"):
        ip.run_line_magic("cadet", "choose 0")


def test_a_kept_choice_is_confirmed_and_a_later_answer_says_so(ip):
    ip.run_line_magic("config", "AskMagic.live = False")
    ask(ip)
    ip.run_line_magic("cadet", "choose 1")
    ip.run_line_magic("cadet", "keep")
    again = ask(ip, [EVERY], line="--con shop --model m --candidates 1")
    assert again.confirmed is not None and again.confirmed.question == QUESTION
    day = again.confirmed.date
    assert len(day) == 10 and f"As you confirmed on {day}" in render_text(again)
    assert again.provenance["confirmed"] == {"date": day, "question": QUESTION}
    other = ask(ip, [TOP], line="--con shop --model m --candidates 1")  # another result
    assert other.confirmed is None and "As you confirmed" not in render_text(other)
