"""The live display of one ``%%ask`` run (edge).

In a Jupyter kernel, one output is displayed when the run starts and updated when it ends. It
holds the widget panel's view *and* a static text/html + text/plain account of the run, so that
every frontend shows something complete: JupyterLab renders the live panel; nbconvert's HTML
export, notebook viewers and frontends without the widget manager render the static HTML
(nbconvert picks the widget view only when the notebook stores the widget state); plain-text
consumers read the text. Outside a kernel (terminal IPython, plain Python) there is no live
display: the magic returns the result, whose own bundle is the same static account.

If any widget call fails, the panel is dropped and the output keeps only the static bundle: a
broken widget never breaks the kernel or the answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from html import escape
from typing import Any

from cadet_magic.agent.events import Event, RunDone, StepDone
from cadet_magic.display.static import STYLE, metadata, mimebundle
from cadet_magic.kinds import Phase, StepName
from cadet_magic.result import AskResult

log = logging.getLogger("cadet_magic")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where a frontend may render widgets)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the magic needs IPython anyway
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _display(bundle: dict, display_id: Any = True) -> Any:
    from IPython.display import display

    return display(bundle, raw=True, display_id=display_id)


def running_bundle(question: str) -> dict[str, str]:
    """What frontends without widgets show while the question is being answered."""
    return {
        "text/plain": f"Asking: {question} (running...)",
        "text/html": f"{STYLE}<div class='cadet-ask'><b>Asking:</b> {escape(question)} "
        "<span class='cadet-muted'>(running\u2026)</span></div>",
    }


def stopped_bundle(question: str, text: str) -> dict[str, str]:
    """What frontends without widgets show for a run that stopped without a result."""
    return {
        "text/plain": f"Asking: {question} ({text})",
        "text/html": f"{STYLE}<div class='cadet-ask'><b>Asking:</b> {escape(question)} "
        f"<span class='cadet-bad'>({escape(text)})</span></div>",
    }


def describe_model(model: Any, namespace: Mapping[str, Any] | None) -> tuple[str, bool]:
    """A provisional label for the model before the run loads it, and whether it is scripted."""
    from cadet_magic.llm import SCRIPTED_LABEL, is_scripted, model_label

    if isinstance(model, str) and namespace is not None and model in namespace:
        obj = namespace[model]
        return model_label(obj), is_scripted(obj)
    if isinstance(model, str):
        if model.startswith("scripted:"):
            return f"{model}: {SCRIPTED_LABEL}", True
        return model, False
    if model is not None:
        return model_label(model), is_scripted(model)
    return "not set", False


#: Steps after which the agent waits on something outside the kernel (the model, the engine,
#: the fallback's worker): the panel shows them at once, so that it says what is awaited.
BEFORE_A_WAIT = frozenset(
    {
        StepName.read_schema,
        StepName.check,
        StepName.next_attempt,
        StepName.check_code,
        StepName.hand_over,
    }
)
#: Seconds that must pass since the panel last changed before it shows any other step: the
#: quick local steps between two waits (the check's verdict, a diagnosis) would otherwise each
#: send the page its widgets' new state (in JupyterLite a later question's 15 updates cost
#: more than the question itself). The next step shown, or the end, shows what they did.
QUICK_GAP = 0.25


def shown_at_once(event: StepDone) -> bool:
    """Whether the panel shows this step whatever the pace (see :data:`BEFORE_A_WAIT`).

    >>> def done(step, phase):
    ...     return StepDone(step, phase, 1, 3, "sqlite", "", (), 0.0)
    >>> shown_at_once(done(StepName.check, Phase.sql)), shown_at_once(done(StepName.generate, Phase.sql))
    (True, False)
    >>> shown_at_once(done(StepName.execute, Phase.fallback))  # the pandas code runs next
    True
    """
    return event.step in BEFORE_A_WAIT or (
        event.step == StepName.execute and event.phase == Phase.fallback
    )


class LiveDisplay:
    """One run's output: the live panel plus a static bundle, updated at the end.

    Args:
        question: the question asked.
        panel: an :class:`~cadet_magic.display.panel.AskPanel`, or None for a static-only
            display (the static bundle is still updated at the end).
        clock: seconds, for the pace of updates (:data:`QUICK_GAP`).
    """

    def __init__(
        self,
        question: str,
        panel: Any = None,
        clock: Callable[[], float] = time.monotonic,
        on_choose: Callable[[AskResult], None] | None = None,
    ) -> None:
        self.question = question
        self.panel = panel
        #: Called with the answer a click on a reading gives (the magic's ``-o``, ``_ask``).
        self.on_choose = on_choose
        self.result: AskResult | None = None
        self.clock = clock
        self._shown = clock()  # when the panel last changed
        self.handle = _display(self._bundle(running_bundle(question)))

    def _bundle(self, static: dict[str, str]) -> dict:
        if self.panel is None:
            return dict(static)
        view = {"version_major": 2, "version_minor": 0, "model_id": self.panel.widget.model_id}
        return {WIDGET_VIEW: view, **static}

    def _drop_panel(self, error: BaseException) -> None:
        log.warning("live panel disabled after a widget error: %s", error)
        panel, self.panel = self.panel, None
        try:
            panel.close()
        except Exception:  # noqa: BLE001 - already failing; the static bundle stays
            pass

    def update(self, event: Event) -> None:
        """Shows one agent step in the panel, unless it is a quick one too soon after the last
        change (:data:`QUICK_GAP`); never raises. The run's end is shown by :meth:`finish`,
        with the result the caller completed (its DataFrame, its cost)."""
        match event:
            case RunDone():
                return
            case StepDone():
                pass
        if self.panel is None:
            return
        now = self.clock()
        if not shown_at_once(event) and now - self._shown < QUICK_GAP:
            return
        self._shown = now
        try:
            self.panel.update(event)
        except Exception as e:  # noqa: BLE001 - a widget failure must not stop the agent
            self._drop_panel(e)
            self._show(running_bundle(self.question))

    def finish(self, result: AskResult) -> None:
        """Shows the finished run in the panel and puts the static account beside it."""
        self.result = result
        if self.panel is not None:
            try:
                self.panel.on_choose = self.chosen
                self.panel.finish(result)
            except Exception as e:  # noqa: BLE001
                self._drop_panel(e)
        self._show(mimebundle(result), metadata(result))

    def chosen(self, result: AskResult) -> None:
        """The user chose a reading in the panel: the static account and the output's
        provenance become the chosen answer's, and ``on_choose`` hears of it."""
        self.result = result
        self._show(mimebundle(result), metadata(result))
        if self.on_choose is not None:
            self.on_choose(result)

    def close(self, text: str = "stopped before an answer") -> None:
        """Ends a run that raised (interrupt, configuration error).

        Attempts already shown stay, marked as stopped; with none, the output is emptied
        (the magic's one-line message says what happened).
        """
        if self.panel is not None:
            try:
                if self.panel.shown_attempts():
                    self.panel.stop(text)
                    self._show(stopped_bundle(self.question, text))
                    return
                self.panel.close()
            except Exception:  # noqa: BLE001
                pass
            self.panel = None
        self._show({"text/plain": ""})

    def _show(self, static: dict[str, str], meta: dict | None = None) -> None:
        try:
            self.handle.update(self._bundle(static), raw=True, metadata=meta or {})
        except Exception as e:  # noqa: BLE001
            log.warning("display update failed: %s", e)


def live_display(
    question: str,
    *,
    model: Any = None,
    con: str | None = None,
    namespace: Mapping[str, Any] | None = None,
    keeper: Any = None,
    context: str = "",
    on_choose: Callable[[AskResult], None] | None = None,
) -> LiveDisplay | None:
    """A live display for one question inside a kernel, or None elsewhere.

    Args:
        question: the question asked.
        model: the model spec, variable name or object the run will use (for the header).
        con: the name of the connection variable, if one was given.
        namespace: the notebook's namespace (to label a model held in a variable).
        keeper: keeps an answer as an example (the panel's "Keep this answer" button).
        context: what the question builds on, shown while it runs (a followed answer, a rerun).
        on_choose: called with the answer when the user chooses a reading in the panel.
    """
    if not in_kernel():
        return None
    panel = None
    try:
        from cadet_magic.display.panel import AskPanel

        label, scripted = describe_model(model, namespace)
        panel = AskPanel(
            question,
            model=label,
            scripted=scripted,
            connection=con or "%sql's current connection",
            keeper=keeper,
            context=context,
        )
    except Exception as e:  # noqa: BLE001 - no widgets here: the static bundle still shows
        log.info("live panel unavailable (%s); showing the static account", e)
        panel = None
    try:
        return LiveDisplay(question, panel, on_choose=on_choose)
    except Exception as e:  # noqa: BLE001
        log.warning("live display unavailable: %s", e)
        return None
