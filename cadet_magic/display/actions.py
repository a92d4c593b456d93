"""The action bar under an answer (edge: anywidget, ipylab): insert its SQL as a ``%%sql`` cell
below, copy the SQL, keep the answer as an example (the front end is ``actions.js``).

Inserting a cell: a button click reaches the kernel as a comm message, where
``set_next_input`` payloads never reach the frontend. The kernel therefore asks JupyterLab
itself, through ipylab's ``JupyterFrontEnd``, to run its own commands
``notebook:insert-cell-below`` and ``notebook:replace-selection`` (clicking the button makes
its cell the active one, so the new cell lands right below the ``%%ask`` cell). Where ipylab's
front end is missing (other frontends), the ``%%sql`` text is shown selected for a manual copy.
Copying runs in the browser (anywidget's front end, ``navigator.clipboard``), with the same
visible fallback when the clipboard is blocked. The panel shows one bar under the answer and
one under each answer that competed with it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from cadet_magic.result import AskResult, sql_cell

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
