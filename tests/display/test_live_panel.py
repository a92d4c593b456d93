"""The widget panel fed with a real run's recorded events (no frontend needed)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.filterwarnings(
    "ignore:Traits should be given as instances:DeprecationWarning"  # ipylab 1.1
)

pytest.importorskip("ipywidgets")
pytest.importorskip("anywidget")

from cadet_magic.agent.events import AttemptProvisional  # noqa: E402
from cadet_magic.display import actions as actions_module  # noqa: E402
from cadet_magic.display.panel import AskPanel, final_sql, sql_cell  # noqa: E402
from cadet_magic.kinds import StepName  # noqa: E402
from cadet_magic.result import Attempt, Phase  # noqa: E402
from tests.display.results import (  # noqa: E402
    CORRECTED,
    FALLBACK,
    GOOD_SQL,
    REFUSED,
    SIMPLE,
    VOTED,
    VOTED_SQL,
    html_text,
    run,
    with_fallback,
)


def titles(acc) -> list[str]:
    return list(acc.titles)[: len(acc.children)]


def test_update_sequence_from_recorded_events():
    result, events = run(CORRECTED)
    p = AskPanel(CORRECTED, model="scripted:x: scripted stand-in", scripted=True)
    assert "scripted" in p.header.value.lower() and "Running" in p.status.value
    seen = []
    for event in events:
        p.update(event)
        seen.append((event.step, titles(p.attempts), p.attempts.selected_index))
        assert "Running" in p.status.value and f"{event.elapsed:.1f} s" in p.status.value
    by_step = {}
    for step, t, selected in seen:
        by_step.setdefault(step, []).append((t, selected))
    assert seen[0] == ("read_schema", [], None)  # nothing to show before the model replies
    t, selected = by_step["generate"][0]
    assert t == ["\u25cf Attempt 1: running"] and selected == 0
    t, _ = by_step["diagnose"][0]
    assert t == ["\u25cf Attempt 1: running"]
    assert not any(step == "generate" and sel != 0 for step, _, sel in seen[:3])
    t, selected = by_step["next_attempt"][0]  # attempt 1 closed, attempt 2 waiting, open
    assert t[0].startswith("\u2717 Attempt 1: error \u00b7 column_not_found")
    assert t[1] == "\u25cf Attempt 2: running" and selected == 1
    t, selected = seen[-1][1], seen[-1][2]  # finish: both closed, the last one open
    assert t[0].startswith("\u2717 Attempt 1") and t[1].startswith("\u2713 Attempt 2: ok")
    assert selected == 1
    assert "duckdb" not in p.header.value and "(sqlite)" in p.header.value
    assert result.connection and result.connection in p.header.value  # named while running
    first = html_text(p.attempts.children[0].value)
    assert "Feedback sent to the model" in first and "column_not_found" in first
    assert "amout" in first and "Safety check: passed" in first

    p.finish(result)
    assert "Done" in p.status.value and "answered after 2 SQL attempt(s)" in p.status.value
    assert len(p.attempts.children) == 2 and p.attempts.selected_index == 1
    assert "Answer: 3 row(s)" in html_text(p.answer.value)
    assert p.actions.layout.display == "" and p.actions.sql == result.sql
    assert p.fallback is None  # made when the fallback starts
    assert result.connection in p.header.value
    p.close()


@pytest.mark.parametrize("max_attempts", [2, 3])
def test_the_status_line_counts_the_attempts(max_attempts):
    """While it runs, the status line says which attempt of how many (the run's own maximum,
    an option: read from the event, not from the state's fields)."""
    _, events = run(CORRECTED, max_attempts=max_attempts)
    p = AskPanel(CORRECTED)
    shown = []
    for event in events:
        p.update(event)
        shown.append((event.step, html_text(p.status.value)))
    assert next(t for s, t in shown if s == "generate").count(f"attempt 1 of {max_attempts}: ")
    assert f"attempt 2 of {max_attempts}: feedback sent" in dict(shown)["next_attempt"]
    p.close()


def test_running_section_shows_the_check_and_the_error():
    _, events = run(CORRECTED)
    p = AskPanel(CORRECTED)
    for event in events:
        p.update(event)
        if event.step == "execute":
            break
    body = html_text(p.attempts.children[0].value)
    assert "Safety check: passed" in body and "Error:" in body and "amout" in body
    p.close()


def test_refused_run_ends_failed_without_buttons():
    result, events = run(REFUSED)
    p = AskPanel(REFUSED)
    for event in events:
        p.update(event)
    p.finish(result)
    assert "cadet-bad" in p.status.value and "no answer" in p.status.value
    assert "No answer" in html_text(p.answer.value)
    assert "refused" in titles(p.attempts)[0]
    assert p.actions.layout.display == "none" and final_sql(result) is None
    p.close()


def test_fallback_section():
    result, events = run(CORRECTED)
    result = with_fallback(result)
    p = AskPanel(CORRECTED)
    for event in events:
        p.update(event)
    p.finish(result)
    assert p.widget.children.index(p.fallback) == p.widget.children.index(p.attempts) + 1
    assert "Answer from the fallback: simple SELECT + pandas" in p.fallback_banner.value
    assert titles(p.fallback_attempts) == [
        t for t in titles(p.fallback_attempts) if "(fallback)" in t
    ]
    assert p.attempts.selected_index is None and p.fallback_attempts.selected_index == 0
    body = html_text(p.fallback_attempts.children[0].value)
    assert "SELECT name, amount" in body and "groupby" in body
    assert "from the fallback" in html_text(p.answer.value)
    assert p.actions.sql == result.fallback.sql
    assert "answered by the fallback" in p.status.value
    p.close()


def test_fallback_phase_events_open_the_fallback_box():
    result, events = run(CORRECTED)
    p = AskPanel(CORRECTED)
    last = events[-1]
    running = Attempt(1, sql="SELECT 1", phase=Phase.fallback, running=True)
    where = (StepName.generate, Phase.fallback, 1, 3, last.dialect, last.connection)
    p.update(AttemptProvisional(*where, last.attempts, last.elapsed, running))
    assert p.fallback in p.widget.children
    assert titles(p.fallback_attempts) == ["\u25cf Attempt 1 (fallback): running"]
    assert "fallback attempt 1" in p.status.value
    p.close()


def test_real_fallback_run_from_recorded_events(model_writes_select):
    result, events = run(FALLBACK, fallback=True)
    assert result.answered_by == "fallback"
    p = AskPanel(FALLBACK)
    steps = []
    for event in events:
        p.update(event)
        shown = p.fallback is not None and p.fallback in p.widget.children
        steps.append((event.step, shown, titles(p.fallback_attempts) if shown else []))
        if event.step == "hand_over":
            assert "falling back" in p.status.value
            assert len(p.attempts.children) == 3
    before = [d for step, d, _ in steps[: [s for s, _, _ in steps].index("hand_over")]]
    assert set(before) == {False}  # no fallback section until the fallback starts
    assert steps[-2][2] == ["\u25cf Attempt 1 (fallback): running"]
    p.finish(result)
    assert titles(p.fallback_attempts)[0].startswith("\u2713 Attempt 1 (fallback): ok")
    assert p.attempts.selected_index is None and p.fallback_attempts.selected_index == 0
    assert "Answer from the fallback" in p.fallback_banner.value
    assert "DataFrame of 1 row(s)" in html_text(p.fallback_detail.value)
    body = html_text(p.fallback_attempts.children[0].value)
    assert SIMPLE in body and "sort_values" in body and "pandas code" in body
    assert "from the fallback" in html_text(p.answer.value) and "Bob" in p.answer.value
    assert p.actions.sql == SIMPLE and "simple SELECT" in p.actions.status
    p.close()


class FakeLab:
    def __init__(self):
        self.calls = []
        self.commands = self

    def execute(self, command, args=None):
        self.calls.append((command, args))


def test_insert_asks_jupyterlab_for_a_sql_cell(monkeypatch):
    lab = FakeLab()
    monkeypatch.setattr(actions_module, "_FRONTEND", lab)
    monkeypatch.setattr(actions_module, "_FRONTEND_READY", True)
    p = AskPanel("q")
    p.actions.sql = GOOD_SQL + ";"
    p.actions._on_message(p.actions, {"event": "insert"}, [])
    assert lab.calls == [
        ("notebook:insert-cell-below", None),
        ("notebook:replace-selection", {"text": "%%sql\n" + GOOD_SQL + "\n"}),
    ]
    assert "Inserted" in p.actions.status and p.actions.manual_text == ""
    p.close()


def test_insert_without_jupyterlab_shows_the_cell_text(monkeypatch):
    monkeypatch.setattr(actions_module, "_FRONTEND_READY", False)
    p = AskPanel("q")
    p.actions.sql = "SELECT 1"
    assert not p.actions.insert_cell()
    assert p.actions.manual_text == sql_cell("SELECT 1") == "%%sql\nSELECT 1\n"
    assert "copy" in p.actions.status
    p.close()


def test_keep_this_answer_button_and_what_was_sent():
    result, _ = run(CORRECTED)
    kept = []
    p = AskPanel(CORRECTED, keeper=kept.append)
    p.finish(result)
    assert p.actions.can_keep and not p.actions.kept
    p.actions._on_message(p.actions, {"event": "keep"}, [])  # the button's message
    assert kept == [result] and p.actions.kept and "Kept" in p.actions.status
    # the messages sent to the model, collapsed under the answer
    assert "Sent to the model (2 call(s))" in html_text(p.answer.value)
    p.close()
    plain = AskPanel(CORRECTED)  # no examples file: no button
    plain.finish(result)
    assert not plain.actions.can_keep and not plain.actions.keep_answer()
    plain.close()


def test_the_header_says_what_a_running_question_follows():
    result, events = run(CORRECTED)
    p = AskPanel(CORRECTED, context="Following answer 2: 'Orders per status?'")
    p.update(events[0])
    assert "Following answer 2" in html_text(p.header.value)
    p.finish(result)
    assert "Following answer 2" not in html_text(p.header.value)  # the result's account now
    p.close()


def test_the_vote_counts_candidates_and_shows_the_competing_answers(monkeypatch):
    lab = FakeLab()
    monkeypatch.setattr(actions_module, "_FRONTEND", lab)
    monkeypatch.setattr(actions_module, "_FRONTEND_READY", True)
    # readings off: the competing answers (with readings on the panel asks instead, below)
    result, events = run(VOTED, candidates=3, ask_readings=False)
    assert result.sql == VOTED_SQL and str(result.agreement) == "2 of 3"
    p = AskPanel(VOTED)
    statuses = []
    for event in events:
        p.update(event)
        statuses.append(html_text(p.status.value))
    assert any("candidate answer 2 of 3" in s for s in statuses)
    assert any("candidate answer 3 of 3" in s for s in statuses)
    assert [t.split(" \u00b7")[0] for t in titles(p.attempts)] == ["\u2713 Attempt 1: ok"]
    p.finish(result)
    assert "2 of 3 candidate answers gave this answer" in html_text(p.answer.value)
    assert p.competing is not None and titles(p.competing) == ["Another answer (1 of 3 candidates)"]
    body, bar = p.competing.children[0].children
    other = result.competing[0]
    assert "<>" in html_text(body.value) and "Ann" in html_text(body.value) and bar.sql == other.sql
    bar._on_message(bar, {"event": "insert"}, [])  # the same insert as the answer's
    assert lab.calls[-1] == ("notebook:replace-selection", {"text": sql_cell(other.sql)})
    p.close()


def test_an_answer_without_a_clear_lead_asks_with_a_button_per_reading():
    result, _ = run(VOTED, candidates=3)
    assert result.asks and len(result.readings) == 2
    p = AskPanel(VOTED)
    chosen = []
    p.on_choose = chosen.append
    p.finish(result)
    assert p.competing is None and p.readings is not None
    assert "Which did you mean?" in html_text(p.readings_detail.value)
    assert [b.description for b in p.reading_buttons] == [
        f"{i}: {r.summary}" for i, r in enumerate(result.readings)
    ]
    assert "the leading reading, until you choose" in html_text(p.answer.value)
    p.reading_buttons[1].click()
    (picked,) = chosen
    assert picked.sql == result.readings[1].sql and p.actions.result is picked
    assert "the reading you chose" in html_text(p.answer.value)
    p.reading_buttons[0].click()  # a change of mind
    assert chosen[-1].sql == result.readings[0].sql and chosen[-1].chosen == 0
    p.close()
