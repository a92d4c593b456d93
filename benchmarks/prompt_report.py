"""The figures of the first-prompt experiment (``python -m benchmarks.prompt_tuning
--report-only``): per variant, its first attempts right, paired against the baseline on the
same questions, and its prompt tokens; standard library only, read from the results files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import median

from benchmarks.peer_runs import Line, read_lines
from benchmarks.report import table
from cadet_magic.eval.stats import gain, wilson


def pct(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k}/{n} ({100 * k / n:.1f}%, {100 * low:.0f}-{100 * high:.0f})" if n else "-"


def paired(before: Sequence[bool], after: Sequence[bool]) -> str:
    """``after`` against ``before``: difference in points, 95% paired bootstrap interval,
    gained/lost, McNemar's p."""
    g = gain(before, after)
    if not g.n:
        return "-"
    return (
        f"{100 * g.diff:+.1f} [{100 * g.low:+.1f}, {100 * g.high:+.1f}]; "
        f"+{g.gained}/-{g.lost}; p={g.p_value:.3f}"
    )


def _median(values: Sequence[float | int | None]) -> str:
    got = [v for v in values if v is not None]
    return f"{median(got):.0f}" if got else "-"


def variant_table(
    lines: dict[str, dict[tuple[str, str, str], Line]],
    keys: Sequence[tuple[str, str, str]],
    baseline: str,
) -> str:
    """One row per variant: right, paired against ``baseline`` (on the questions both ran),
    whether the SQL ran, prompt and reply tokens, seconds."""
    rows = []
    base = lines.get(baseline, {})
    for name, got in lines.items():
        done = [k for k in keys if k in got and got[k].finished]
        if not done:
            continue
        both = [k for k in done if k in base and base[k].finished]
        ran = sum(got[k].ran for k in done)
        rows.append(
            [
                f"`{name}`",
                pct(sum(got[k].match for k in done), len(done)),
                paired([base[k].match for k in both], [got[k].match for k in both])
                if name != baseline
                else "(baseline)",
                f"{ran}/{len(done)}",
                _median([got[k].input_tokens for k in done]),
                _median([got[k].output_tokens for k in done]),
                f"{median(got[k].seconds for k in done):.1f}",
            ]
        )
    headers = [
        "variant",
        "first attempt right (95% Wilson)",
        f"paired against `{baseline}`: pts [95% bootstrap]; gained/lost; McNemar",
        "SQL ran",
        "prompt tokens (median)",
        "reply tokens (median)",
        "seconds (median)",
    ]
    return table(headers, rows)


def report(set_name: str, n: int | None = None, out_dir: Path | None = None) -> str:
    """The Markdown tables of set ``set_name``: all its questions, then Spider and the shop
    apart."""
    from benchmarks.prompt_tuning import BASELINE, ONESHOT, OUT_DIR, VARIANTS, question_set

    folder = out_dir or OUT_DIR
    chosen, _ = question_set(set_name, n)
    names = [*VARIANTS, ONESHOT]
    lines = {}
    for name in names:
        path = folder / f"{set_name}.{name}.jsonl"
        if path.is_file():
            lines[name] = read_lines(path)
    parts = []
    groups = [("all", chosen)]
    if set_name == "tuning":
        groups += [
            ("Spider", [q for q in chosen if q.db_id != "shop"]),
            ("the sample shop", [q for q in chosen if q.db_id == "shop"]),
        ]
    for label, qs in groups:
        parts.append(f"**{set_name}, {label} ({len(qs)} questions)**\n")
        parts.append(variant_table(lines, [q.key for q in qs], BASELINE))
        parts.append("")
    return "\n".join(parts)
