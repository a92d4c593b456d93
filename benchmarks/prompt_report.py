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


def fixed_figures(before: Path, after: Path | None = None, peers_dir: Path | None = None) -> str:
    """The chosen prompt on the fixed sample, run once by the product itself
    (``python -m benchmarks.eval``, its records in ``after``): its first attempts and final
    answers in targeted mode, paired against the product's before it (the records in
    ``before``, the compact prompt) and the one-shot peer, on the questions both have."""
    from benchmarks.peers import results_path as peer_path
    from benchmarks.peers_report import product

    oneshot = {
        k: x.match for k, x in read_lines(peer_path("oneshot", peers_dir)).items() if x.finished
    }
    rows = []
    for label, first in (("first attempt", True), ("final answer", False)):
        new = product("targeted", first=first, folder=after).right
        old = product("targeted", first=first, folder=before).right
        if not new:
            return "The chosen prompt has not run on the fixed sample yet."
        for against, other in (
            ("the product before (`compact`)", old),
            ("the one-shot peer", oneshot),
        ):
            both = [k for k in new if k in other]
            rows.append(
                [
                    f"targeted, {label}",
                    pct(sum(new[k] for k in both), len(both)),
                    against,
                    pct(sum(other[k] for k in both), len(both)),
                    paired([other[k] for k in both], [new[k] for k in both]),
                ]
            )
    return table(
        [
            "the product with the chosen prompt",
            "right (95% Wilson)",
            "against",
            "its right on the same questions",
            "chosen minus it: pts [95% bootstrap]; gained/lost; McNemar",
        ],
        rows,
    )


#: How the prompt was chosen, as written before the tuning figures were looked at.
RULE = (
    "The rule, written before any tuning figure was looked at: rank the variants by first "
    "attempts right on the whole tuning set; within 2 questions of the best, prefer a form "
    "rebuilt from the catalog (`create`, `compact`: the same for every engine and in "
    "JupyterLite) over the engine's own statements (`engine`: only SQLite and DuckDB keep one), "
    "then fewer prompt tokens; it replaces the prompt before (`compact`, instructions in the "
    "system message) only if its paired difference against it on the tuning set is positive. "
    "The chosen prompt then ran once on the fixed sample; nothing was changed after that."
)


def write_report(chosen: str, before: Path, after: Path | None = None, write: bool = True) -> str:
    """The ``first_prompt`` section: the variants on the tuning set, the choice, and the chosen
    one on the fixed sample."""
    from benchmarks.prompt_tuning import TUNING_N, TUNING_SEED, VARIANTS
    from benchmarks.report import write_section

    names = ", ".join(f"`{n}`" for n in VARIANTS)
    body = "\n".join(
        [
            "Command: `python -m benchmarks.prompt_tuning --set tuning|fixed --variants NAMES` "
            "(resumes; results in `benchmarks/prompt_tuning/SET.VARIANT.jsonl`; `--report-only` "
            "prints the tables). Each variant is the agent's first attempt with the schema "
            "written one way and the instructions in one place, through the product's own "
            "functions (the schema as the runner reads it, linked within the prompt budget, "
            "`build_messages`), one call at temperature 0, scored by the evaluation's rule. "
            f"Variants: {names}, and `oneshot` (the one-shot peer's prompt) for reference. A "
            "name reads form-samples: `compact` is one line per table with sample values per "
            "column (the prompt before), `create` `CREATE TABLE` statements rebuilt from the "
            "catalog, `engine` the engine's own statements; `columns` a few values per "
            "low-cardinality text column, `rows` three rows per table, `both`, `none`; "
            "`-nokeys` without foreign keys, `-nocomments` without comments, `-user` the "
            "instructions and schema in the user's message instead of a system message.",
            "",
            f"Tuning set: {TUNING_N} Spider dev questions outside the fixed sample over the same "
            f"databases (drawn with seed {TUNING_SEED}) and the 35 questions about the sample "
            "shop in `benchmarks/tuning/shop.json` (DuckDB, with table and column comments), "
            "gold SQL written for this experiment. " + RULE,
            "",
            report("tuning"),
            f"**Chosen: `{chosen}`** (the product's prompt since; on the tuning set above: "
            "the most first attempts right, no product variant within 2 questions of it, its "
            "paired difference against `compact` positive). On the fixed sample it ran once, as "
            "the product (`python -m benchmarks.eval`, targeted mode; the compact prompt's "
            "records of the same questions are kept in `benchmarks/eval/before-36/`):",
            "",
            fixed_figures(before, after),
        ]
    )
    if write:
        write_section(
            "first_prompt",
            "The first prompt, chosen by measurement (real local model, first attempt)",
            body,
            packages=("llama_cpp_python", "sqlglot"),
        )
    else:
        print(body)
    return body
