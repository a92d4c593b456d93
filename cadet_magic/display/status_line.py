"""The live panel's status line (:mod:`.panel`): a small anywidget whose clock ticks in the
browser between the agent's steps, so the elapsed time moves while a model call or a query
runs and the kernel sends nothing.
"""

from __future__ import annotations

import anywidget
import traitlets

from cadet_magic.display.static import CSS


class StatusLine(anywidget.AnyWidget):
    """The status line; while ``running``, its clock ticks in the browser between agent steps."""

    _esm = """
    function render({ model, el }) {
      let since = performance.now();
      const paint = () => {
        el.innerHTML = model.get("value");
      };
      const tick = () => {
        const clock = el.querySelector(".cadet-clock");
        if (clock && model.get("running")) {
          const s = model.get("elapsed") + (performance.now() - since) / 1000;
          clock.textContent = `${s.toFixed(1)} s`;
        }
      };
      model.on("change:value", () => { since = performance.now(); paint(); });
      paint();
      const timer = setInterval(tick, 200);
      return () => clearInterval(timer);
    }
    export default { render };
    """
    # The panel's look, put in the page's head once for all panels (anywidget keeps one style
    # element per widget class): in the header's HTML, each panel, and each change of its
    # header, added a style element, and the page worked out every element's style again.
    _css = CSS
    value = traitlets.Unicode("").tag(sync=True)
    running = traitlets.Bool(True).tag(sync=True)
    elapsed = traitlets.Float(0.0).tag(sync=True)

    def show(self, html: str, elapsed: float, running: bool) -> None:
        """Sets the line; the browser counts on from ``elapsed`` while ``running``."""
        with self.hold_sync():
            self.running = running
            self.elapsed = elapsed
            self.value = html
