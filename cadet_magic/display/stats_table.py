"""``%cadet stats``: the session's metrics as a small HTML table (and aligned text).

Both are drawn from :meth:`SessionMetrics.rows` and :meth:`SessionMetrics.category_rows`, so a
new figure needs one row there and nothing here. Standard library only.

Example:
    >>> from cadet_magic.metrics import SessionMetrics
    >>> from cadet_magic.result import AskResult, Attempt
    >>> m = SessionMetrics()
    >>> m.record(AskResult("q", ok=True, attempts=[Attempt(1)]))
    >>> html = StatsView(m)._repr_mimebundle_()["text/html"]
    >>> "<table" in html and "<th scope='row'>Questions asked</th><td>1</td>" in html
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

STYLE = (
    "<style>.cadet-stats{border-collapse:collapse;margin:4px 0;"
    "font-family:var(--jp-ui-font-family,sans-serif);font-size:var(--jp-ui-font-size1,13px);"
    "color:var(--jp-content-font-color1,inherit)}"
    ".cadet-stats th,.cadet-stats td{padding:2px 10px;text-align:left;"
    "border-bottom:1px solid var(--jp-border-color2,#ddd)}"
    ".cadet-stats th{font-weight:normal;color:var(--jp-content-font-color2,#555)}"
    ".cadet-stats thead th{font-weight:bold}"
    ".cadet-stats caption{text-align:left;font-weight:bold;padding:2px 0}</style>"
)


def _table(caption: str, rows: Sequence[Sequence[str]], header: Sequence[str] = ()) -> str:
    """A table whose first cell per row is its header cell."""
    head = ""
    if header:
        head = "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr></thead>"
    body = "".join(
        f"<tr><th scope='row'>{escape(r[0])}</th>"
        + "".join(f"<td>{escape(c)}</td>" for c in r[1:])
        + "</tr>"
        for r in rows
    )
    return (
        f"<table class='cadet-stats'><caption>{escape(caption)}</caption>{head}"
        f"<tbody>{body}</tbody></table>"
    )


class StatsView:
    """What ``%cadet stats`` returns: text/plain and a text/html table of the metrics."""

    def __init__(self, metrics: Any, prices: Mapping[str, Any] | None = None) -> None:
        self.metrics = metrics
        self.prices = prices

    @property
    def text(self) -> str:
        return self.metrics.to_text(self.prices)

    def __repr__(self) -> str:
        return self.text

    def html(self) -> str:
        m = self.metrics
        if not m.total:
            return f"<div class='cadet-message'>{escape(self.text)}</div>"
        out = STYLE + _table("Questions in this session", m.rows(self.prices))
        categories = m.category_rows()
        if categories:
            out += _table("By error category", categories, m.CATEGORY_HEADER)
        return out

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text, "text/html": self.html()}
