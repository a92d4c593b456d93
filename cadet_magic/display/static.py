"""A static text/html + text/plain bundle of a result, for frontends without widgets
(nbconvert HTML, terminal IPython, notebook viewers). Stdlib only.
"""

from __future__ import annotations

from html import escape

from cadet_magic.display.text import render_text
from cadet_magic.result import AskResult, Attempt

STYLE = """<style>
.cadet-ask{font-family:var(--jp-ui-font-family,sans-serif);font-size:var(--jp-ui-font-size1,13px);
 color:var(--jp-ui-font-color1,inherit);border:1px solid var(--jp-border-color2,#ccc);border-radius:4px;
 padding:6px 10px;margin:4px 0}
.cadet-ask pre{background:var(--jp-layout-color2,rgba(127,127,127,.1));color:inherit;padding:4px 6px;
 margin:2px 0;white-space:pre-wrap}
.cadet-ask .ok{color:var(--jp-success-color1,#2e7d32)} .cadet-ask .bad{color:var(--jp-error-color1,#c62828)}
.cadet-ask .scripted{background:var(--jp-warn-color3,#fff3cd);color:var(--jp-warn-color0,#6d4c00);
 padding:2px 6px;border-radius:3px;display:inline-block}
.cadet-ask table{border-collapse:collapse} .cadet-ask td,.cadet-ask th{padding:2px 8px;
 border-bottom:1px solid var(--jp-border-color2,#ddd);text-align:left}
.cadet-ask summary{cursor:pointer}
</style>"""


def _attempt_html(a: Attempt, open_: bool) -> str:
    status = "ok" if a.outcome == "ok" else "bad"
    label = f"Attempt {a.number}" + (" (fallback)" if a.phase == "fallback" else "")
    what = a.outcome + (f" · {a.category}" if a.category else "")
    timing = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in a.timings.items())
    parts = [
        f"<details class='cadet-attempt'{' open' if open_ else ''}>",
        f"<summary><b>{escape(label)}</b>: <span class='{status}'>{escape(what)}</span></summary>",
    ]
    if a.sql:
        parts.append(f"<pre class='cadet-sql'>{escape(a.sql)}</pre>")
    if a.code:
        parts.append(f"<pre class='cadet-code'>{escape(a.code)}</pre>")
    if a.error:
        parts.append(f"<div class='cadet-error'><b>Error:</b> {escape(a.error)}</div>")
    if a.diff:
        parts.append(f"<div class='cadet-diff'><b>Diff:</b> {escape(a.diff)}</div>")
    if a.feedback:
        parts.append(
            f"<div class='cadet-feedback'><b>Feedback sent to the model:</b><pre>{escape(a.feedback)}</pre></div>"
        )
    if timing:
        parts.append(f"<div class='cadet-timing'>{escape(timing)}</div>")
    parts.append("</details>")
    return "".join(parts)


def table_html(columns: list[str], rows: list[tuple], max_rows: int = 50) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in r) + "</tr>" for r in rows[:max_rows]
    )
    more = f"<div>… {len(rows) - max_rows} more row(s)</div>" if len(rows) > max_rows else ""
    return f"<table class='cadet-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def render_html(result: AskResult) -> str:
    """The whole result as HTML: header, attempts (earlier ones collapsed), answer."""
    parts = [STYLE, "<div class='cadet-ask'>"]
    parts.append(f"<div><b>Question:</b> {escape(result.question)}</div>")
    parts.append(
        f"<div><b>Model:</b> {escape(result.model)} · <b>Connection:</b> "
        f"{escape(result.connection)} ({escape(result.dialect or '')}) · {result.elapsed:.2f} s</div>"
    )
    if result.scripted:
        parts.append(
            "<div class='scripted'>Scripted stand-in model: these replies were stored in advance, "
            "not written by a real LLM.</div>"
        )
    attempts = list(result.attempts) + (list(result.fallback.attempts) if result.fallback else [])
    for i, a in enumerate(attempts):
        parts.append(_attempt_html(a, open_=i == len(attempts) - 1))
    if result.ok:
        from_fallback = result.fallback is not None and result.fallback.ok
        note = " <b>from the fallback</b> (simple SELECT + pandas)" if from_fallback else ""
        more = " · truncated at the row limit: more rows exist" if result.truncated else ""
        parts.append(f"<div class='ok'><b>Answer</b>{note}: {result.row_count} row(s){more}</div>")
        parts.append(table_html(result.columns, result.rows))
    else:
        parts.append(
            f"<pre class='bad cadet-summary'>{escape(result.message or 'No answer.')}</pre>"
        )
    parts.append("</div>")
    return "".join(parts)


def mimebundle(result: AskResult) -> dict[str, str]:
    return {"text/plain": render_text(result), "text/html": render_html(result)}
