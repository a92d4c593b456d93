"""The live ``%%ask`` panel (edge: with its status line in :mod:`.status_line`, the only
modules that import ipywidgets, anywidget, ipylab).

While the agent runs, the panel shows the question, the model, the connection and dialect, a
status line with the elapsed time, and one collapsible section per attempt (SQL highlighted, the
safety check's verdict, the engine's error and its category, the feedback sent to the model, the
diff against the previous attempt, timings, the model's time and tokens; the status line
sums them over the run, with the cost when a price is set); while the vote draws candidate
answers, the status line counts them. At the end it shows the answer table, the fallback
when it ran (clearly marked), the buttons (:mod:`.actions`: insert the final SQL as a
``%%sql`` cell below, copy the SQL, keep the answer) and, when the candidates disagreed, the
answers that competed with it, each with its SQL, its first rows, its votes and its own
insert and copy buttons. When the vote's answer has no clear lead (``AskResult.asks``), the
panel asks which reading was meant instead: the readings (what each computes, its votes, its
SQL and first rows) and a button per reading; a click makes that reading the answer without a
model call (:meth:`AskPanel.choose`: the answer, the buttons and ``on_choose``, through which
the magic updates ``-o``, ``_ask`` and the output's provenance).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from html import escape
from typing import Any

import ipywidgets as W
from ipywidgets.widgets.widget_string import HTMLStyle

from cadet_magic.agent.events import AttemptProvisional, Event, RunDone, StepDone
from cadet_magic.display.actions import ActionBar, lab_frontend
from cadet_magic.display.answer_context import context_html, prompts_html
from cadet_magic.display.plain_text import (
    FALLBACK_BANNER,
    FALLBACK_FAILED_BANNER,
    FALLBACK_RUNNING_BANNER,
    WAITING,
    answered_by_fallback,
    attempt_title,
    competing_title,
    done_text,
    progress_text,
    usage_text,
)
from cadet_magic.display.static import (
    answer_html,
    attempt_body_html,
    competing_body_html,
    fallback_summary_html,
    header_html,
    readings_html,
)
from cadet_magic.display.status_line import StatusLine
from cadet_magic.result import AskResult, Attempt, Phase, sql_cell  # noqa: F401 - importable here

log = logging.getLogger("cadet_magic")


class AskPanel:
    """The live panel for one question; ``widget`` is what gets displayed.

    Args:
        question: the question asked.
        model: a label for the model (the final result's label replaces it).
        scripted: whether the model is a scripted stand-in (said in the header).
        connection: a label for the connection (replaced by the result's).
    """

    def __init__(
        self,
        question: str,
        model: str = "",
        scripted: bool = False,
        connection: str = "",
        keeper: Any = None,
        context: str = "",
    ) -> None:
        self.question = question
        #: What the question builds on, shown under the header while it runs (the answer it
        #: follows, a rerun); the finished panel shows the result's own account of it.
        self.context = context
        self.model = model
        self.scripted = scripted
        self.connection = connection
        self.dialect: str | None = None
        # One layout and one HTML style for the panel's widgets whose look never changes
        # (each widget otherwise opens its own two: every model is a message to the page).
        self._layout = W.Layout()
        self._style = HTMLStyle()
        self.header = self._html(self._header_value())
        self.status = StatusLine(layout=self._layout)
        self.status.show(self._status_value("starting: reading the schema", 0.0), 0.0, True)
        self.attempts = W.Accordion(children=[], layout=self._layout)
        self.attempts.add_class("cadet-attempts")
        #: The fallback's section (banner, attempts, summary), made when the fallback starts:
        #: most questions never need it.
        self.fallback: Any = None
        #: The answers that competed with the answer (made when the candidates disagreed).
        self.competing: Any = None
        #: The readings' question and buttons (made when the answer asks), and what a choice
        #: calls with the chosen result (set by the live display).
        self.readings: Any = None
        self.reading_buttons: list[Any] = []
        self.on_choose: Any = None
        self.result: AskResult | None = None
        self.answer = self._html("")
        self.actions = ActionBar(keeper=keeper, layout=W.Layout(display="none"))
        self.widget = W.VBox(
            [self.header, self.status, self.attempts, self.answer, self.actions],
            layout=self._layout,
        )
        self.widget.add_class("cadet-ask")
        self.widget.add_class("cadet-panel")
        self._sections: dict[str, list[tuple[Any, str, str]]] = {"sql": [], "fallback": []}
        lab_frontend()  # created early so that JupyterLab reports ready before any click

    # -- rendering helpers -------------------------------------------------------------------

    def _html(self, value: str) -> Any:
        return W.HTML(value, layout=self._layout, style=self._style)

    def _show_fallback(self, banner: str) -> None:
        """Shows the fallback's section (made the first time) under the SQL attempts."""
        if self.fallback is None:
            self.fallback_banner = self._html("")
            self.fallback_attempts = W.Accordion(children=[], layout=self._layout)
            self.fallback_attempts.add_class("cadet-fallback-attempts")
            self.fallback_detail = self._html("")
            self.fallback = W.VBox(
                [self.fallback_banner, self.fallback_attempts, self.fallback_detail],
                layout=self._layout,
            )
            self.fallback.add_class("cadet-fallback")
            children = list(self.widget.children)
            children.insert(children.index(self.attempts) + 1, self.fallback)
            self.widget.children = tuple(children)
        self.fallback_banner.value = f"<div class='cadet-fallback-banner'>{escape(banner)}</div>"

    def _header_value(self) -> str:
        context = (
            f"<div class='cadet-head cadet-muted cadet-context'>{escape(self.context)}</div>"
            if self.context
            else ""
        )
        return (
            header_html(self.question, self.model, self.connection, self.dialect, self.scripted)
            + context
        )

    def _status_value(self, text: str, elapsed: float, state: str = "running") -> str:
        cls = {"running": "cadet-muted", "ok": "cadet-ok"}.get(state, "cadet-bad")
        mark = {
            "running": "\u25cf Running",
            "ok": "\u2713 Done",
            "failed": "\u2717 Done",
            "stopped": "\u25a0 Stopped",
        }[state]
        return (
            f"<div class='cadet-status {cls}'><b>{mark}</b> \u00b7 {escape(text)} \u00b7 "
            f"<span class='cadet-clock'>{elapsed:.1f} s</span></div>"
        )

    def _set_sections(self, phase: str, items: list[tuple[Any, str, str]]) -> None:
        """Shows ``items`` (key, title, body html) as the phase's sections, changing only what changed."""
        if phase != "sql" and self.fallback is None:
            self._show_fallback(FALLBACK_RUNNING_BANNER)
        acc = self.attempts if phase == "sql" else self.fallback_attempts
        old = self._sections[phase]
        children = list(acc.children)
        grew = len(items) > len(old)
        for i, (key, title, body) in enumerate(items):
            if i < len(old) and old[i] == (key, title, body):
                continue
            if i < len(children):
                children[i].value = body
            else:
                children.append(self._html(body))
        with acc.hold_sync():  # children and titles: one message
            if len(children) != len(acc.children):
                acc.children = tuple(children[: len(items)])
            acc.titles = tuple(title for _, title, _ in items)
        if grew:  # after them: sent with them, the page opened no section (the index was new)
            acc.selected_index = len(items) - 1
        self._sections[phase] = list(items)

    # -- live updates ------------------------------------------------------------------------

    def update(self, event: Event) -> None:
        """Shows one step of the agent: the attempt in progress and the status line (the run's
        end: :meth:`finish`)."""
        running: Attempt | None
        match event:
            case AttemptProvisional(attempt=running):
                pass
            case StepDone():
                running = None
            case RunDone():
                return
        dialect, connection = event.dialect, event.connection
        if (dialect and dialect != self.dialect) or (connection and connection != self.connection):
            self.dialect = dialect or self.dialect
            self.connection = connection or self.connection
            self.header.value = self._header_value()
        phase, number = event.phase, event.number
        for name in (Phase.sql, Phase.fallback):  # the vote's candidates: the status line
            items = [_section(a) for a in event.attempts if a.phase == name]
            if running is not None and running.phase == name:
                items.append(_running_section(running))
            if items or name == Phase.sql:
                self._set_sections(name, items)
        if phase == Phase.fallback:
            self._show_fallback(FALLBACK_RUNNING_BANNER)
        text = progress_text(event.step, phase, number, event.max_attempts)
        usage = usage_text([*event.attempts, *([running] if running else [])], total=True)
        if usage:
            text += f" \u00b7 {usage}"
        self.status.show(
            self._status_value(text, event.elapsed),
            event.elapsed,
            True,
        )

    def finish(self, result: AskResult) -> None:
        """Shows the final state: every attempt, the fallback, the answer, the buttons."""
        self.model = result.model or self.model
        self.scripted = result.scripted
        self.connection = result.connection or self.connection
        self.dialect = result.dialect or self.dialect
        self.context = ""  # the answer's own account (context_html) replaces it
        self.header.value = self._header_value()
        self._set_sections("sql", [_section(a) for a in result.attempts])
        fb = result.fallback
        if fb is not None:
            self._show_fallback(FALLBACK_BANNER if fb.ok else FALLBACK_FAILED_BANNER)
            self._set_sections("fallback", [_section(a) for a in fb.attempts])
            detail = [fallback_summary_html(fb)]
            self.fallback_detail.value = "".join(detail)
            # earlier SQL attempts collapsed; the fallback's last attempt open
            self.attempts.selected_index = None
            if fb.attempts:
                self.fallback_attempts.selected_index = len(fb.attempts) - 1
        elif result.attempts:
            self.attempts.selected_index = len(result.attempts) - 1
        text = done_text(result)
        usage = usage_text(result.all_attempts, getattr(result, "cost", None), total=True)
        if usage:
            text += f" \u00b7 {usage}"
        self.status.show(
            self._status_value(text, result.elapsed, "ok" if result.ok else "failed"),
            result.elapsed,
            False,
        )
        self.result = result
        self.answer.value = context_html(result) + answer_html(result) + prompts_html(result)
        if result.asks:
            self._show_readings(result)
        else:
            self._show_competing(result)
        self._offer(result)

    def _offer(self, result: AskResult) -> None:
        """The buttons' bar for ``result`` (insert, copy, keep)."""
        sql = final_sql(result)
        if sql:
            with self.actions.hold_sync():  # the bar's new state: one message
                self.actions.result = result
                self.actions.can_keep = self.actions.keeper is not None and result.ok
                self.actions.sql = sql
                if answered_by_fallback(result):
                    self.actions.status = (
                        "The answer was computed by pandas: these buttons give the fallback's "
                        "simple SELECT."
                    )
            self.actions.layout.display = ""

    def _show_readings(self, result: AskResult) -> None:
        """The question the answer asks: each reading, and a button per reading."""
        buttons = []
        for i, r in enumerate(result.readings):
            b = W.Button(
                description=f"{i}: {r.summary}"[:80],
                tooltip=f"Answer with this reading: {r.sql}"[:300],
                layout=W.Layout(width="auto"),
            )
            b.on_click(lambda _button, i=i: self.choose(i))
            buttons.append(b)
        self.reading_buttons = buttons
        self.readings_detail = self._html(readings_html(result, hint=False))
        self.readings_row = W.HBox(buttons, layout=W.Layout(flex_flow="row wrap"))
        box = W.VBox([self.readings_detail, self.readings_row], layout=self._layout)
        box.add_class("cadet-readings")
        self.readings = box
        self.widget.children = (*self.widget.children, box)

    def choose(self, i: int) -> AskResult:
        """Makes reading ``i`` the answer (no model call): the answer shown, the buttons (the
        chosen one marked, the others still there to change one's mind), the bar, then
        ``on_choose`` with the chosen result."""
        asked = self.result
        assert asked is not None and asked.readings, "no readings to choose from"
        if asked.chosen is not None:  # changing one's mind: choose from the readings as asked
            asked = replace(asked, asks=True, chosen=None)
        chosen = asked.choose(i)
        self.result = chosen
        self.answer.value = context_html(chosen) + answer_html(chosen) + prompts_html(chosen)
        for j, b in enumerate(self.reading_buttons):
            b.button_style = "success" if j == i else ""
            b.icon = "check" if j == i else ""
        with self.actions.hold_sync():
            self.actions.kept = False
            self.actions.status = (
                "Keep this answer to confirm it as the reading you meant: a later answer "
                "giving the same result says so."
            )
        self._offer(chosen)
        if self.on_choose is not None:
            self.on_choose(chosen)
        return chosen

    def _show_competing(self, result: AskResult) -> None:
        """The answers that competed with the answer, each with its SQL, first rows and votes,
        and its own insert/copy buttons (collapsed: the answer comes first)."""
        if not result.competing:
            return
        sections = []
        for c in result.competing:
            bar = ActionBar(layout=W.Layout())
            bar.sql = c.sql
            sections.append(W.VBox([self._html(competing_body_html(c)), bar]))
        box = W.Accordion(children=sections, layout=self._layout)
        box.titles = tuple(competing_title(c, result) for c in result.competing)
        box.add_class("cadet-competing")
        self.competing = box
        self.widget.children = (*self.widget.children, box)

    def shown_attempts(self) -> int:
        """How many attempt sections the panel shows (both phases)."""
        return len(self._sections["sql"]) + len(self._sections["fallback"])

    def stop(self, text: str) -> None:
        """Marks the run as stopped (interrupt, configuration error)."""
        self.status.show(
            self._status_value(text, self.status.elapsed, "stopped"), self.status.elapsed, False
        )

    def close(self) -> None:
        """Closes every widget of the panel."""
        parts = [self.header, self.status, *self.attempts.children, self.attempts]
        if self.fallback is not None:
            fb_attempts = self.fallback_attempts
            parts += [
                self.fallback_banner,
                *fb_attempts.children,
                fb_attempts,
                self.fallback_detail,
            ]
        if self.readings is not None:
            parts += [*self.reading_buttons, self.readings_row, self.readings_detail, self.readings]
        competing = self.competing
        if competing is not None:
            for section in competing.children:
                parts += [*section.children, section]
            parts.append(competing)
        for w in (*parts, self.fallback, self.answer, self.actions, self.widget, self._layout):
            if w is not None:
                w.close()
        self._style.close()


def final_sql(result: AskResult) -> str | None:
    """The SQL to offer for a ``%%sql`` cell: the answer's SQL, else the fallback's SELECT."""
    return result.final_sql


def _section(a: Attempt) -> tuple[Any, str, str]:
    return ((a.phase, a.number), attempt_title(a), attempt_body_html(a))


def _running_section(a: Attempt) -> tuple[Any, str, str]:
    """The attempt still in progress, from its provisional record, with the finished
    attempts' helpers (the model's reply awaited: a waiting line)."""
    if not a.sql and not a.code:
        body = f"<div class='cadet-muted'>{escape(WAITING)}</div>"
    else:
        body = attempt_body_html(a)
    return ((a.phase, a.number), attempt_title(a), body)
