"""The live ``%%ask`` panel (edge: with its status line in :mod:`.status_line`, the only
modules that import ipywidgets, anywidget, ipylab).

While the agent runs, the panel shows the question, the model, the connection and dialect, a
status line with the elapsed time, and one collapsible section per attempt (SQL highlighted, the
safety check's verdict, the engine's error and its category, the feedback sent to the model, the
diff against the previous attempt, timings, the model's time and tokens; the status line
sums them over the run, with the cost when a price is set). At the end it shows the answer table, the fallback
when it ran (clearly marked), and two buttons: insert the final SQL as a ``%%sql`` cell below,
and copy the SQL.

Inserting a cell: a button click reaches the kernel as a comm message, where
``set_next_input`` payloads never reach the frontend. The kernel therefore asks JupyterLab
itself, through ipylab's ``JupyterFrontEnd``, to run its own commands
``notebook:insert-cell-below`` and ``notebook:replace-selection`` (clicking the button makes
its cell the active one, so the new cell lands right below the ``%%ask`` cell). Where ipylab's
front end is missing (other frontends), the ``%%sql`` text is shown selected for a manual copy.
Copying runs in the browser (anywidget's front end, ``navigator.clipboard``), with the same
visible fallback when the clipboard is blocked.
"""

from __future__ import annotations

import logging
from html import escape
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as W
import traitlets
from ipywidgets.widgets.widget_string import HTMLStyle

from cadet_magic.display.context import context_html, prompts_html
from cadet_magic.display.static import (
    answer_html,
    attempt_body_html,
    fallback_summary_html,
    header_html,
)
from cadet_magic.display.status_line import StatusLine
from cadet_magic.display.text import (
    FALLBACK_BANNER,
    FALLBACK_FAILED_BANNER,
    FALLBACK_RUNNING_BANNER,
    WAITING,
    answered_by_fallback,
    attempt_title,
    done_text,
    progress_text,
    usage_text,
)
from cadet_magic.result import AskResult, Attempt, Phase, sql_cell

log = logging.getLogger("cadet_magic")

_FRONTEND: Any = None
_FRONTEND_READY = False


def lab_frontend() -> Any:
    """One ipylab ``JupyterFrontEnd`` per kernel (None when ipylab is not installed)."""
    global _FRONTEND
    if _FRONTEND is None:
        try:
            from ipylab import JupyterFrontEnd
        except ImportError:
            return None
        _FRONTEND = JupyterFrontEnd()
        _FRONTEND.on_ready(_mark_ready)
    return _FRONTEND


def _mark_ready() -> None:
    global _FRONTEND_READY
    _FRONTEND_READY = True


class ActionBar(anywidget.AnyWidget):
    """Buttons: insert the final SQL as a ``%%sql`` cell below, copy the SQL, keep the answer
    (``keeper(result)``, given by the magic: what ``%cadet keep`` does)."""

    _esm = (Path(__file__).with_name("actions.js")).read_text()
    _css = """
    .cadet-actions-bar{display:flex;gap:6px;align-items:center;flex-wrap:wrap;margin-top:4px}
    .cadet-actions .cadet-action{width:auto;padding:0 10px}
    .cadet-actions .cadet-action-note{color:var(--jp-content-font-color2,#666);
      font-size:var(--jp-ui-font-size1,13px)}
    .cadet-actions .cadet-manual{width:100%;box-sizing:border-box;margin-top:4px;
      font-family:var(--jp-code-font-family,monospace);background:var(--jp-layout-color2,#f5f5f5);
      color:var(--jp-content-font-color1,inherit);border:1px solid var(--jp-border-color2,#ccc)}
    """
    sql = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    manual_text = traitlets.Unicode("").tag(sync=True)
    can_keep = traitlets.Bool(False).tag(sync=True)
    kept = traitlets.Bool(False).tag(sync=True)

    def __init__(self, keeper: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_msg(self._on_message)
        self.inserted = 0
        self.keeper = keeper
        self.result: AskResult | None = None

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "insert":
            self.insert_cell()
        elif isinstance(content, dict) and content.get("event") == "keep":
            self.keep_answer()

    def keep_answer(self) -> bool:
        """Keeps the answer shown (its question and final SQL) as an example."""
        if self.keeper is None or self.result is None:
            self.status = "Nothing to keep."
            return False
        try:
            self.keeper(self.result)
        except Exception as e:  # noqa: BLE001 - one line in the panel, the kernel goes on
            self.status = f"Could not keep this answer: {e}"
            return False
        self.kept = True
        self.status = "Kept: later questions on this database get it as an example."
        return True

    def insert_cell(self) -> bool:
        """Asks JupyterLab to insert a ``%%sql`` cell with the SQL below the active cell."""
        if not self.sql:
            self.status = "No SQL to insert."
            return False
        text = sql_cell(self.sql)
        app = lab_frontend()
        if app is None or not _FRONTEND_READY:
            self.manual_text = text
            self.status = (
                "This frontend cannot insert cells from the kernel (JupyterLab with ipylab is "
                "needed): the %%sql cell is selected below, copy it into a new cell."
            )
            return False
        try:
            app.commands.execute("notebook:insert-cell-below")
            app.commands.execute("notebook:replace-selection", {"text": text})
        except Exception as e:  # noqa: BLE001 - a failed insert must not break the kernel
            log.warning("insert %%%%sql cell failed: %s", e)
            self.manual_text = text
            self.status = "Could not insert the cell: copy the %%sql text below instead."
            return False
        self.inserted += 1
        self.status = "Inserted a %%sql cell below."
        return True


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

    def update(self, event: Any) -> None:
        """Shows one step of the agent: the attempt in progress and the status line."""
        dialect, connection = event.dialect, event.connection
        if (dialect and dialect != self.dialect) or (connection and connection != self.connection):
            self.dialect = dialect or self.dialect
            self.connection = connection or self.connection
            self.header.value = self._header_value()
        phase, number, running = event.phase, event.number, event.attempt
        for name in Phase:
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
        self.answer.value = context_html(result) + answer_html(result) + prompts_html(result)
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
