"""A static text/html + text/plain bundle of a result, for frontends without widgets
(nbconvert HTML, terminal IPython, notebook viewers).

Standard library only; Pygments highlights the SQL and pandas code where it is installed
(it comes with IPython). Colours come from JupyterLab's CSS variables, with fallbacks for
pages that lack them, so the same HTML fits the light and the dark theme.

Example:
    >>> from cadet_magic.result import AskResult, Attempt
    >>> r = AskResult(question="n?", ok=True, sql="SELECT 1 AS n", columns=["n"], rows=[(1,)],
    ...               attempts=[Attempt(number=1, sql="SELECT 1 AS n")])
    >>> "Attempt 1" in render_html(r) and "1 row" in render_html(r)
    True
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from cadet_magic.display.answer_context import context_html, prompts_html
from cadet_magic.display.plain_text import (
    CHOOSE_HINT,
    FALLBACK_BANNER,
    FALLBACK_FAILED_BANNER,
    PREVIEW_ROWS,
    READINGS_QUESTION,
    SCRIPTED_NOTE,
    WARNING_LABEL,
    agreement_text,
    answer_label,
    answered_by_fallback,
    attempt_title,
    competing_title,
    confirmed_text,
    done_text,
    first_line,
    reading_title,
    render_text,
    timing_text,
    usage_text,
    verdict,
)
from cadet_magic.provenance import METADATA_KEY
from cadet_magic.result import AskResult, Attempt
from cadet_magic.vote.answers import Competing

#: Rows shown in HTML tables (the DataFrame in ``_ask.df`` holds them all).
MAX_HTML_ROWS = 50

#: The look of the account and of the live panel (the panel puts it in the page once: its
#: status line's ``_css``).
CSS = """
.cadet-ask{font-family:var(--jp-ui-font-family,sans-serif);font-size:var(--jp-ui-font-size1,13px);
 color:var(--jp-content-font-color1,inherit);background:var(--jp-layout-color1,transparent);
 border:1px solid var(--jp-border-color2,#ccc);border-radius:4px;padding:6px 10px;margin:4px 0;
 max-width:100%;box-sizing:border-box}
.cadet-ask .cadet-head{margin:1px 0}
.cadet-ask .cadet-muted{color:var(--jp-content-font-color2,#666)}
.cadet-ask pre{font-family:var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,12px);
 background:var(--jp-layout-color2,rgba(127,127,127,.1));color:var(--jp-content-font-color1,inherit);
 border:1px solid var(--jp-border-color3,transparent);border-radius:3px;padding:4px 6px;margin:3px 0;
 white-space:pre-wrap;word-break:break-word}
.cadet-ask .cadet-ok{color:var(--jp-success-color1,#2e7d32)}
.cadet-ask .cadet-bad{color:var(--jp-error-color1,#c62828)}
.cadet-ask .cadet-warning{background:var(--jp-warn-color3,#fff3cd);color:var(--jp-warn-color0,#6d4c00);padding:2px 6px}
.cadet-ask .cadet-scripted{background:var(--jp-warn-color3,#fff3cd);color:var(--jp-warn-color0,#6d4c00);
 border:1px solid var(--jp-warn-color2,#e0c060);padding:1px 6px;border-radius:3px;display:inline-block;margin:2px 0}
.cadet-ask .cadet-fallback-banner{border-left:4px solid var(--jp-warn-color1,#f0a000);
 background:var(--jp-layout-color2,rgba(240,160,0,.08));padding:3px 8px;margin:6px 0 3px 0;font-weight:bold}
.cadet-ask .cadet-fallback{border-left:4px solid var(--jp-warn-color1,#f0a000);padding-left:8px;margin:4px 0}
.cadet-ask .cadet-row{margin:2px 0}
.cadet-ask .cadet-label{font-weight:bold}
.cadet-ask table.cadet-table{border-collapse:collapse;margin:3px 0;font-size:var(--jp-ui-font-size1,13px)}
.cadet-ask table.cadet-table td,.cadet-ask table.cadet-table th{padding:2px 8px;text-align:left;
 border-bottom:1px solid var(--jp-border-color2,#ddd);color:var(--jp-content-font-color1,inherit)}
.cadet-ask table.cadet-table th{background:var(--jp-layout-color2,rgba(127,127,127,.08))}
.cadet-ask details{border-top:1px solid var(--jp-border-color2,#ddd);padding:3px 0}
.cadet-ask summary{cursor:pointer}
.cadet-ask .cadet-diff .cq-add{color:var(--jp-success-color1,#2e7d32)}
.cadet-ask .cadet-diff .cq-del{color:var(--jp-error-color1,#c62828)}
.cadet-ask .cq-k,.cadet-ask .cq-kd,.cadet-ask .cq-kn,.cadet-ask .cq-kr,.cadet-ask .cq-kc,.cadet-ask .cq-ow{
 color:var(--jp-mirror-editor-keyword-color,#008000);font-weight:bold}
.cadet-ask .cq-s,.cadet-ask .cq-s1,.cadet-ask .cq-s2,.cadet-ask .cq-sd,.cadet-ask .cq-se{
 color:var(--jp-mirror-editor-string-color,#ba2121)}
.cadet-ask .cq-m,.cadet-ask .cq-mi,.cadet-ask .cq-mf{color:var(--jp-mirror-editor-number-color,#080)}
.cadet-ask .cq-c,.cadet-ask .cq-c1,.cadet-ask .cq-cm{color:var(--jp-mirror-editor-comment-color,#408080);
 font-style:italic}
.cadet-ask .cq-o,.cadet-ask .cq-p{color:var(--jp-mirror-editor-operator-color,#aa22ff)}
.cadet-ask .cq-nb,.cadet-ask .cq-bp{color:var(--jp-mirror-editor-builtin-color,#008000)}
.cadet-ask .cq-nf,.cadet-ask .cq-fm{color:var(--jp-mirror-editor-def-color,#00f)}
.cadet-ask .cq-na,.cadet-ask .cq-nv{color:var(--jp-mirror-editor-variable-color,inherit)}
.cadet-panel .widget-html-content{line-height:1.45}
.cadet-panel .widget-html{margin:1px 0;min-height:0}
.cadet-panel .widget-accordion{margin:3px 0}
.cadet-panel .jupyter-widget-Collapse-header{padding:3px 8px}
"""
#: The same, for HTML that stands alone (the static account, notebooks without widgets).
STYLE = f"<style>{CSS}</style>"


@functools.lru_cache(maxsize=256)
def highlight(code: str, language: str = "sql") -> str:
    """``code`` as HTML spans (classes ``cq-*``) where Pygments exists, else escaped text.
    Remembered: the live panel draws every attempt again at each update (in JupyterLite's
    kernel a highlight with a new formatter took about 4 ms)."""
    try:
        from pygments import highlight as _highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer, SqlLexer
    except ImportError:  # pragma: no cover - Pygments comes with IPython
        return escape(code)
    lexer = SqlLexer() if language == "sql" else PythonLexer()
    formatter = HtmlFormatter(nowrap=True, classprefix="cq-")
    return _highlight(code.strip("\n"), lexer, formatter).rstrip("\n")


def code_html(code: str, language: str = "sql", css_class: str = "cadet-sql") -> str:
    """A highlighted code block."""
    return f"<pre class='{css_class}'>{highlight(code, language)}</pre>"


def diff_html(diff: str) -> str:
    """The readable diff of an attempt's SQL, additions and removals coloured."""
    lines = []
    for line in diff.splitlines() or [diff]:
        cls = "cq-add" if line.startswith("+") else "cq-del" if line.startswith("-") else ""
        lines.append(f"<span class='{cls}'>{escape(line)}</span>" if cls else escape(line))
    return "<pre class='cadet-diff'>" + "\n".join(lines) + "</pre>"


def attempt_body_html(a: Attempt) -> str:
    """An attempt's details: SQL (or pandas code), the check's verdict, error, feedback, diff, timings."""
    parts = []
    labelled = bool(a.code)  # the fallback's SELECT and pandas code, told apart
    if a.sql:
        if labelled:
            parts.append("<div class='cadet-row cadet-label'>Simple SELECT:</div>")
        parts.append(code_html(a.sql))
    if a.code:
        parts.append("<div class='cadet-row cadet-label'>pandas code:</div>")
        parts.append(code_html(a.code, "python", "cadet-code"))
    check_cls = "cadet-bad" if a.outcome == "refused" else "cadet-muted"
    parts.append(
        f"<div class='cadet-row cadet-verdict'><span class='cadet-label'>Safety check:</span> "
        f"<span class='{check_cls}'>{escape(verdict(a))}</span></div>"
    )
    if a.error and a.outcome != "refused":
        category = f" <span class='cadet-muted'>[{escape(a.category)}]</span>" if a.category else ""
        parts.append(
            f"<div class='cadet-row cadet-error'><span class='cadet-label'>Error:</span> "
            f"<span class='cadet-bad'>{escape(first_line(a.error))}</span>{category}</div>"
        )
    elif a.category:
        parts.append(
            f"<div class='cadet-row cadet-category'><span class='cadet-label'>Category:</span> "
            f"{escape(a.category)}</div>"
        )
    if a.feedback:
        parts.append(
            "<div class='cadet-row cadet-feedback'><span class='cadet-label'>"
            f"Feedback sent to the model:</span><pre>{escape(a.feedback.strip())}</pre></div>"
        )
    if a.diff:
        parts.append(
            "<div class='cadet-row'><span class='cadet-label'>Diff against the previous attempt:"
            f"</span>{diff_html(a.diff)}</div>"
        )
    if a.timings:
        parts.append(
            f"<div class='cadet-row cadet-timing cadet-muted'>{escape(timing_text(a.timings))}</div>"
        )
    usage = usage_text([a])
    if usage:
        parts.append(f"<div class='cadet-row cadet-usage cadet-muted'>{escape(usage)}</div>")
    return "".join(parts)


def _attempt_html(a: Attempt, open_: bool) -> str:
    status = "cadet-ok" if a.outcome == "ok" else "cadet-bad"
    return (
        f"<details class='cadet-attempt'{' open' if open_ else ''}>"
        f"<summary><span class='{status}'>{escape(attempt_title(a))}</span></summary>"
        f"{attempt_body_html(a)}</details>"
    )


def _cell(value: Any) -> str:
    text = "NULL" if value is None else str(value)
    return escape(text if len(text) <= 200 else text[:199] + "\u2026")


def table_html(columns: Sequence[str], rows: Sequence[tuple], max_rows: int = MAX_HTML_ROWS) -> str:
    """Rows as an HTML table (the first ``max_rows``; a line says how many more exist)."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in r) + "</tr>" for r in rows[:max_rows]
    )
    more = (
        f"<div class='cadet-muted'>\u2026 {len(rows) - max_rows} more row(s) in the DataFrame</div>"
        if len(rows) > max_rows
        else ""
    )
    return (
        f"<table class='cadet-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"{more}"
    )


def header_html(
    question: str, model: str, connection: str, dialect: str | None, scripted: bool
) -> str:
    """Question, model, connection and dialect, and the scripted-model note."""
    where = escape(connection or "connection") + (f" ({escape(dialect)})" if dialect else "")
    parts = [
        f"<div class='cadet-head cadet-question'><span class='cadet-label'>Question:</span> "
        f"{escape(question)}</div>",
        f"<div class='cadet-head cadet-muted'><span class='cadet-label'>Model:</span> "
        f"{escape(model or 'unknown')} \u00b7 <span class='cadet-label'>Connection:</span> {where}"
        "</div>",
    ]
    if scripted:
        parts.append(f"<div class='cadet-scripted'>{escape(SCRIPTED_NOTE)}</div>")
    return "".join(parts)


def answer_html(result: AskResult) -> str:
    """The result table with its row count and truncation note, or the failure summary."""
    if not result.ok:
        return (
            f"<pre class='cadet-bad cadet-summary'>{escape(result.message or 'No answer.')}</pre>"
        )
    source = " from the fallback (simple SELECT + pandas)" if answered_by_fallback(result) else ""
    more = (
        " \u00b7 <span class='cadet-truncated'>"
        f"{escape(result.truncation_note or 'truncated at the row limit: more rows exist')}</span>"
        if result.truncated
        else ""
    )
    label = answer_label(result)
    reading = f" <span class='cadet-reading'>({escape(label)})</span>" if label else ""
    confirmed = confirmed_text(result)
    note = (
        f"<div class='cadet-row cadet-ok cadet-confirmed'>{escape(confirmed)}</div>"
        if confirmed
        else ""
    )
    notice = getattr(result, "notice", None)
    if notice:  # a request to change data, answered read-only
        note = f"<div class='cadet-row cadet-notice'>{escape(notice)}</div>{note}"
    return (
        f"<div class='cadet-ok cadet-answer'><span class='cadet-label'>Answer{source}:</span>"
        f"{reading} {result.row_count} row(s){more}</div>{note}{warnings_html(result)}"
        f"{agreement_html(result)}{table_html(result.columns, result.rows)}"
    )


def reading_body_html(r: Any) -> str:
    """One reading: its SQL and the first rows of its result."""
    return (
        code_html(r.sql)
        + table_html(list(r.columns), list(r.preview), max_rows=PREVIEW_ROWS)
        + ("<div class='cadet-muted'>\u2026 more rows</div>" if r.more else "")
    )


def readings_html(result: AskResult, hint: bool = True) -> str:
    """The question an answer without a clear lead asks and each reading (what it computes, its
    votes, its SQL and first rows); '' when it does not ask."""
    if not getattr(result, "asks", False):
        return ""
    items = "".join(
        f"<details class='cadet-reading-option'{' open' if i == 0 else ''}><summary>"
        f"{escape(reading_title(result, i))}</summary>{reading_body_html(r)}</details>"
        for i, r in enumerate(result.readings)
    )
    how = f"<div class='cadet-muted'>{escape(CHOOSE_HINT)}</div>" if hint else ""
    return (
        f"<div class='cadet-readings'><div class='cadet-row cadet-warning cadet-ask-readings'>"
        f"{escape(READINGS_QUESTION)}</div>{items}{how}</div>"
    )


def agreement_html(result: AskResult) -> str:
    """How many candidate answers gave the answer, marked when the vote left it in doubt."""
    said = agreement_text(result)
    if said is None:
        return ""
    cls = "cadet-warning" if result.uncertain else "cadet-muted"
    return (
        f"<div class='cadet-row cadet-agreement {cls}'>"
        f"<span class='cadet-label'>Agreement:</span> {escape(said)}</div>"
    )


def competing_body_html(c: Competing) -> str:
    """One competing answer: its SQL and the first rows of its result."""
    more = len(c.rows) <= PREVIEW_ROWS and c.more
    return (
        code_html(c.sql)
        + table_html(list(c.columns), list(c.rows), max_rows=PREVIEW_ROWS)
        + ("<div class='cadet-muted'>\u2026 more rows</div>" if more else "")
    )


def competing_html(result: AskResult) -> str:
    """Every competing answer as a collapsed section (its SQL, its first rows, its votes); an
    answer that asks shows its readings instead (:func:`readings_html`)."""
    if getattr(result, "asks", False):
        return readings_html(result)
    return "".join(
        f"<details class='cadet-competing'><summary class='cadet-warning'>"
        f"{escape(competing_title(c, result))}</summary>{competing_body_html(c)}</details>"
        for c in result.competing
    )


def warnings_html(result: AskResult) -> str:
    """The answer's warnings (what looks wrong with it), one line each."""
    return "".join(
        f"<div class='cadet-row cadet-warning'><span class='cadet-label'>{WARNING_LABEL}:</span> "
        f"{escape(w)}</div>"
        for w in getattr(result, "warnings", None) or ()
    )


def fallback_html(result: AskResult, attempts_open_last: bool = True) -> str:
    """The fallback's block, clearly marked: its SQL, pandas code, attempts and result."""
    fb = result.fallback
    if fb is None:
        return ""
    banner = FALLBACK_BANNER if fb.ok else FALLBACK_FAILED_BANNER
    parts = [
        f"<div class='cadet-fallback-banner'>{escape(banner)}</div><div class='cadet-fallback'>",
    ]
    for i, a in enumerate(fb.attempts):
        parts.append(_attempt_html(a, open_=attempts_open_last and i == len(fb.attempts) - 1))
    parts += [fallback_summary_html(fb), "</div>"]
    return "".join(parts)


def fallback_summary_html(fb: Any) -> str:
    """What the fallback's result is, and its SQL and code when no attempt shows them
    (its attempts normally do)."""
    parts = []
    if fb.sql and not fb.attempts:
        parts.append(
            f"<div class='cadet-row'><span class='cadet-label'>Fallback SQL:</span>"
            f"{code_html(fb.sql)}</div>"
        )
    if fb.code and not fb.attempts:
        parts.append(
            f"<div class='cadet-row'><span class='cadet-label'>Fallback pandas code:</span>"
            f"{code_html(fb.code, 'python', 'cadet-code')}</div>"
        )
    summary = fallback_result_summary(fb.result)
    if summary:
        parts.append(f"<div class='cadet-row cadet-muted'>Fallback result: {escape(summary)}</div>")
    return "".join(parts)


def fallback_result_summary(value: Any) -> str:
    """A short description of the fallback's result object (a DataFrame's shape, or its type)."""
    if value is None:
        return ""
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) == 2:
        return f"a DataFrame of {shape[0]} row(s) \u00d7 {shape[1]} column(s)"
    text = first_line(repr(value), 120)
    return f"{type(value).__name__}: {text}"


def attempts_html(attempts: Iterable[Attempt], open_last: bool = True) -> str:
    """Attempts as collapsible sections; only the last one open."""
    attempts = list(attempts)
    return "".join(
        _attempt_html(a, open_=open_last and i == len(attempts) - 1) for i, a in enumerate(attempts)
    )


def render_html(result: AskResult) -> str:
    """The whole result as HTML: header, attempts (earlier ones collapsed), fallback, answer,
    the answers that competed with it."""
    parts = [
        STYLE,
        "<div class='cadet-ask'>",
        header_html(
            result.question, result.model, result.connection, result.dialect, result.scripted
        ),
        f"<div class='cadet-head cadet-muted cadet-status'>{escape(status_line(result))}</div>",
        context_html(result),
        attempts_html(result.attempts, open_last=result.fallback is None),
        fallback_html(result),
        answer_html(result),
        competing_html(result),
        prompts_html(result),
        "</div>",
    ]
    return "".join(parts)


def status_line(result: AskResult) -> str:
    """Done/failed, attempts used, the elapsed time, and the model's time, tokens and cost."""
    usage = usage_text(result.all_attempts, getattr(result, "cost", None), total=True)
    return f"Done: {done_text(result)} in {result.elapsed:.2f} s" + (
        f" \u00b7 {usage}" if usage else ""
    )


def mimebundle(result: AskResult) -> dict[str, str]:
    """The text/plain + text/html bundle of a result."""
    return {"text/plain": render_text(result), "text/html": render_html(result)}


def metadata(result: AskResult) -> dict[str, Any]:
    """The output metadata of a result's display: its provenance under ``"cadet"``."""
    return {METADATA_KEY: result.provenance} if result.provenance else {}
