"""What an answer was built on and what the model was sent (stdlib only; every display).

Read from the result's provenance and prompts: the answer it followed (``--follow``), the kept
examples used or dropped, a rerun's recorded source, the sharing level, and a collapsed
"Sent to the model" section with the exact messages of each model call.

Example:
    >>> from cadet_magic.result import AskResult
    >>> r = AskResult("only 2025?", provenance={"share": "schema",
    ...     "followed": {"number": 2, "question": "Sales per month?", "sql": "SELECT 1"}})
    >>> context_lines(r)
    ["Followed answer 2: 'Sales per month?'", 'Shared with the model: schema (names, types, keys)']
"""

from __future__ import annotations

from html import escape
from typing import Any

from cadet_magic.result import AskResult

#: What each sharing level lets the model see (``AskMagic.share``).
SHARE_TEXT = {
    "schema": "schema (names, types, keys)",
    "stats": "stats (names, types, keys, row counts, value ranges)",
    "samples": "samples (names, types, keys and sample rows)",
}

#: The title of the collapsed section that holds the model's messages.
SENT_TITLE = "Sent to the model"


def context_lines(result: AskResult) -> list[str]:
    """One line each: what was followed, the kept examples, a rerun, the sharing level."""
    p = result.provenance or {}
    lines = []
    followed = p.get("followed")
    if followed:
        number = f" {followed['number']}" if followed.get("number") else ""
        lines.append(f"Followed answer{number}: {followed.get('question')!r}")
    examples = p.get("examples") or {}
    if examples.get("used"):
        used = "; ".join(repr(q) for q in examples["used"])
        lines.append(f"Kept examples used ({len(examples['used'])}): {used}")
    lines += list(examples.get("dropped") or ())
    rerun = p.get("rerun_of")
    if rerun is not None:
        when = rerun.get("created") or "earlier"
        lines.append(
            f"Rerun of the SQL recorded {when} (from {rerun.get('source') or 'an earlier result'}): "
            "no model call"
        )
    share = p.get("share")
    if share and share != "samples" and rerun is None:
        lines.append(f"Shared with the model: {SHARE_TEXT.get(share, share)}")
    return lines


def context_html(result: AskResult) -> str:
    """:func:`context_lines` as the panel's and the static HTML's rows."""
    return "".join(
        f"<div class='cadet-head cadet-muted cadet-context'>{escape(line)}</div>"
        for line in context_lines(result)
    )


def prompts_text(prompts: list[list[dict[str, Any]]]) -> str:
    """Every model call's messages, as plain text."""
    parts = []
    for i, messages in enumerate(prompts, 1):
        parts.append(f"--- model call {i} ---")
        parts += [f"[{m.get('role')}]\n{m.get('content')}" for m in messages]
    return "\n".join(parts)


def prompts_html(result: AskResult) -> str:
    """A collapsed section with the exact messages of each model call ("" without any)."""
    if not result.prompts:
        return ""
    calls = len(result.prompts)
    return (
        f"<details class='cadet-sent'><summary>{SENT_TITLE} ({calls} call(s))</summary>"
        f"<pre class='cadet-prompts'>{escape(prompts_text(result.prompts))}</pre></details>"
    )


class ExamplesView:
    """``%cadet examples``: the kept answers of the examples file, and the lines skipped."""

    def __init__(self, found: Any) -> None:
        self.found = found

    def lines(self) -> list[str]:
        pairs = self.found.pairs
        lines = [f"{len(pairs)} kept answer(s) in {self.found.path}"]
        for i, p in enumerate(pairs, 1):
            lines.append(f"{i}. {p['question']}  [{p.get('dialect') or '?'} {p['database']}]")
            lines.append(f"   {p['sql']}")
        for p in getattr(self.found, "not_kept_here", ()):
            lines.append(f"-  {p['question']}  [not kept by you in this folder: never used]")
            lines.append(f"   {p['sql']}")
        warning = self.found.warning()
        if warning:
            lines.append(warning)
        return lines

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        text = "\n".join(self.lines())
        return {
            "text/plain": text,
            "text/html": f"<pre class='cadet-examples'>{escape(text)}</pre>",
        }
