"""A plain-text account of a result (stdlib only)."""

from __future__ import annotations

from cadet_magic.result import AskResult, Attempt


def _first_line(text: str | None, width: int = 200) -> str:
    return (text or "").strip().splitlines()[0][:width] if (text or "").strip() else ""


def attempt_text(a: Attempt) -> list[str]:
    head = f"Attempt {a.number}" + (" (fallback)" if a.phase == "fallback" else "")
    head += f": {a.outcome}" + (f" [{a.category}]" if a.category else "")
    lines = [head]
    if a.sql:
        lines += ["    " + line for line in a.sql.strip().splitlines()]
    if a.error:
        lines.append(f"    error: {_first_line(a.error)}")
    if a.diff:
        lines.append(f"    diff: {a.diff}")
    if a.feedback:
        lines.append(f"    feedback sent: {' '.join(a.feedback.split())[:400]}")
    return lines


def table_text(columns: list[str], rows: list[tuple], max_rows: int = 20) -> list[str]:
    if not columns:
        return ["(no columns)"]
    shown = [[str(v) for v in r] for r in rows[:max_rows]]
    widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(columns)]
    widths = [min(w, 40) for w in widths]
    lines = ["  ".join(c[:w].ljust(w) for c, w in zip(columns, widths, strict=False))]
    lines += ["  ".join(v[:w].ljust(w) for v, w in zip(r, widths, strict=False)) for r in shown]
    if len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more row(s)")
    return lines


def render_text(result: AskResult) -> str:
    """Question, model, every attempt, then the answer or the failure summary."""
    lines = [f"Question: {result.question}", f"Model: {result.model}"]
    if result.scripted:
        lines.append("NOTE: answers below come from a SCRIPTED stand-in model, not a real LLM.")
    lines.append(f"Connection: {result.connection} ({result.dialect})")
    for a in result.attempts:
        lines += attempt_text(a)
    if result.fallback is not None:
        for a in result.fallback.attempts:
            lines += attempt_text(a)
    if result.ok:
        source = (
            " (from the FALLBACK: simple SELECT + pandas)"
            if result.fallback and result.fallback.ok
            else ""
        )
        more = " (more rows exist: truncated at the row limit)" if result.truncated else ""
        lines.append(f"Answer{source}: {result.row_count} row(s){more}")
        lines += table_text(result.columns, result.rows)
    else:
        lines.append(result.message or "No answer.")
    return "\n".join(lines)
