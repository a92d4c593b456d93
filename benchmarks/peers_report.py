"""The section of ``python -m benchmarks.peers``: every approach beside the product's final
answers on the same questions, and the issue's goals checked against the figures.

Read from the results files only (no model): the peers' (``benchmarks/peers/``) and the
product's reference run (``benchmarks/eval/reference/spider.MODE.jsonl``, written by
``python -m benchmarks.eval``: the shipped defaults).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.peer_runs import read_lines
from benchmarks.peers_langchain import MAX_ITERATIONS
from benchmarks.report import Row, Stamp, row, table, write_page
from benchmarks.sample import REFERENCE
from cadet_magic.eval.data import Question
from cadet_magic.eval.significance import Gain, gain, percentile, wilson

Key = tuple[str, str, str]

#: Where the peers' results files are (``spider.PEER.jsonl``).
PEERS_DIR = Path(__file__).resolve().parent / "peers"
#: The command that runs (and resumes) the peers, as the page gives it.
COMMAND = "setsid nohup .venv/bin/python -m benchmarks.peers >> .cache/peers.log 2>&1 < /dev/null &"


def pct(k: int, n: int) -> str:
    """``k`` of ``n`` with its share and 95% Wilson interval.

    >>> pct(3, 4)
    '3/4 (75.0%, 30-95)'
    """
    low, high = wilson(k, n)
    return f"{k}/{n} ({100 * k / n:.1f}%, {100 * low:.0f}-{100 * high:.0f})" if n else "-"


@dataclass(frozen=True)
class Approach:
    """One row: its name, and per question (by key) whether it was right, its calls, prompt
    and reply tokens and seconds."""

    name: str
    right: dict[Key, bool]
    calls: dict[Key, int]
    input_tokens: dict[Key, int | None]
    output_tokens: dict[Key, int | None]
    seconds: dict[Key, float]
    note: str = ""


def product(mode: str, first: bool = False, folder: Path | None = None) -> Approach:
    """The product's answers in ``mode`` (``first``: its first attempts) from the evaluation's
    reference run (or the run in ``folder``)."""
    from cadet_magic.eval.evaluation import mode_path, read_results

    path = mode_path((folder or REFERENCE) / "spider.jsonl", mode, True)
    recs = {k: r for k, r in read_results(path).items() if not r.get("error")}
    field = "first_match" if first else "final_match"
    name = f"the product, {mode}, " + ("first attempt" if first else "final answer")
    if first:  # one call: the first attempt's own tokens and seconds
        att = {k: (r.get("attempts") or [{}])[0] for k, r in recs.items()}
        return Approach(
            name,
            {k: bool(r.get(field)) for k, r in recs.items()},
            {k: 1 for k in recs},
            {k: a.get("input_tokens") for k, a in att.items()},
            {k: None for k in recs},
            {k: float(a.get("model_seconds") or 0.0) for k, a in att.items()},
        )
    return Approach(
        name,
        {k: bool(r.get(field)) for k, r in recs.items()},
        {k: int(r.get("calls") or 0) for k, r in recs.items()},
        {k: r.get("input_tokens") for k, r in recs.items()},
        {k: r.get("output_tokens") for k, r in recs.items()},
        {k: float(r.get("seconds") or 0.0) for k, r in recs.items()},
    )


def peer(name: str, path: Path, label: str, as_returned: bool = False) -> Approach:
    lines = {k: x for k, x in read_lines(path).items() if x.finished}

    def right(x) -> bool:
        if as_returned:
            return bool((x.extra.get("as_returned") or {}).get("match"))
        return x.match

    return Approach(
        label,
        {k: right(x) for k, x in lines.items()},
        {k: x.calls for k, x in lines.items()},
        {k: x.input_tokens for k, x in lines.items()},
        {k: x.output_tokens for k, x in lines.items()},
        {k: x.seconds for k, x in lines.items()},
    )


def _stat(values: Sequence[float | int | None], fmt: Callable[[float], str]) -> str:
    got = [float(v) for v in values if v is not None]
    if not got:
        return "-"
    return f"{fmt(percentile(got, 50) or 0)} / {fmt(percentile(got, 90) or 0)}"


def against(reference: Approach, other: Approach, keys: Sequence[Key]) -> Gain:
    """``reference`` (the product's final answers) against ``other`` on the questions both have."""
    both = [k for k in keys if k in reference.right and k in other.right]
    return gain([other.right[k] for k in both], [reference.right[k] for k in both])


def gain_text(g: Gain) -> str:
    if not g.n:
        return "-"
    return (
        f"+{g.gained} / -{g.lost}: {100 * g.diff:+.1f} pts [{100 * g.low:+.1f}, "
        f"{100 * g.high:+.1f}], p={g.p_value:.3f} (n={g.n})"
    )


def approaches_table(reference: Approach, rows: Sequence[Approach], keys: Sequence[Key]) -> str:
    out = []
    for a in rows:
        done = [k for k in keys if k in a.right]
        if not done:
            continue
        g = against(reference, a, keys) if a is not reference else None
        calls = [a.calls[k] for k in done]
        out.append(
            [
                a.name + (f" ({a.note})" if a.note else ""),
                pct(sum(a.right[k] for k in done), len(done)),
                gain_text(g) if g is not None else "(reference)",
                f"{sum(calls) / len(calls):.2f}",
                _stat([a.input_tokens[k] for k in done], lambda v: f"{v:.0f}"),
                _stat([a.output_tokens[k] for k in done], lambda v: f"{v:.0f}"),
                _stat([a.seconds[k] for k in done], lambda v: f"{v:.1f}"),
            ]
        )
    headers = [
        "approach",
        "right (95% Wilson)",
        "the product's final answers against it: gained / lost, paired difference [95% bootstrap], McNemar",
        "model calls per question (mean)",
        "prompt tokens per question (median / p90)",
        "reply tokens per question (median / p90)",
        "seconds per question (median / p90)",
    ]
    return table(headers, out)


def _pair_text(reference: Approach, other: Approach, g: Gain, keys: Sequence[Key]) -> str:
    both = [k for k in keys if k in reference.right and k in other.right]
    ours, theirs = sum(reference.right[k] for k in both), sum(other.right[k] for k in both)
    return (
        f"{ours}/{g.n} against {theirs}/{g.n}: {100 * g.diff:+.1f} pts "
        f"[{100 * g.low:+.1f}, {100 * g.high:+.1f}]"
    )


def _against_name(p: Approach) -> str:
    if p.name.startswith("the product, "):  # another feedback mode of the product
        return (
            f"Spider dev: final answers, targeted feedback against {p.name.split(', ')[1]} feedback"
        )
    return f"Spider dev: final answers (shipped defaults) against {p.name}"


def goal_rows(
    first: Approach,
    final: Approach,
    peers: Sequence[Approach],
    keys: Sequence[Key],
    stamp: Stamp | None = None,
) -> list[Row]:
    """The goals, each a row of BENCHMARKS.md: the first attempt at least as right as the
    one-shot prompt, the final answers at least 5 points above it and above every other
    approach, each with a paired 95% interval (on the questions both answered)."""
    rows = []
    oneshot = next((p for p in peers if p.name.startswith("one-shot")), None)
    if oneshot is not None:
        g1 = against(first, oneshot, keys)
        rows.append(
            row(
                "Spider dev: the first attempt against the one-shot prompt",
                _pair_text(first, oneshot, g1, keys),
                "paired 95% interval not below 0",
                bool(g1.n) and g1.low >= 0,
                "python -m benchmarks.peers",
                stamp,
            )
        )
        g2 = against(final, oneshot, keys)
        rows.append(
            row(
                _against_name(oneshot),
                _pair_text(final, oneshot, g2, keys),
                f"≥ +{100 * ONESHOT_LEAD:.0f} pts, paired 95% interval above 0",
                bool(g2.n) and g2.diff >= ONESHOT_LEAD and g2.low > 0,
                "python -m benchmarks.peers",
                stamp,
            )
        )
    for p in peers:
        g = against(final, p, keys)
        if p is oneshot or not g.n or p.name.endswith(AS_RETURNED):
            continue
        rows.append(
            row(
                _against_name(p),
                _pair_text(final, p, g, keys),
                "paired 95% interval above 0",
                g.low > 0,
                "python -m benchmarks.peers",
                stamp,
            )
        )
    return rows


def goals(rows: Sequence[Row]) -> str:
    """The goals as the page lists them."""
    return "\n".join(
        f"- {r.figure} ({r.budget}): {r.value}: **{'met' if r.met else 'not met'}**." for r in rows
    )


#: The final answers' lead over the one-shot prompt at least (a share of the questions).
ONESHOT_LEAD = 0.05
#: How the chain's row scored as it returned is named: the same peer scored another way (the
#: row with its SQL taken out is the one held to a goal).
AS_RETURNED = "(run as returned)"


#: The agent's tool-calling row: point 1 asks for tool calling only where the server supports
#: it, and this server returns the call as text (no ``tool_calls``), so the agent's peer is the
#: ReAct row; the tool-calling row shows why and is no goal of its own.
TOOL_CALLING = "LangChain SQL agent (tool calling)"


def figures(
    chosen: Sequence[Question],
    peers_dir: Path,
    eval_dir: Path | None = None,
    stamp: Stamp | None = None,
) -> tuple[str, list[Row]]:
    """The page's tables and goals, and the goals as rows of BENCHMARKS.md (``stamp``: when
    the product's run was measured)."""
    keys = [q.key for q in chosen]
    final = product("targeted", folder=eval_dir)
    first = product("targeted", first=True, folder=eval_dir)
    peers = [
        peer(
            "oneshot", peers_dir / "spider.oneshot.jsonl", "one-shot prompt (CREATE TABLE + 3 rows)"
        ),
        peer(
            "chain",
            peers_dir / "spider.chain.jsonl",
            "LangChain create_sql_query_chain (its SQL taken out)",
        ),
        peer(
            "chain",
            peers_dir / "spider.chain.jsonl",
            "LangChain create_sql_query_chain (run as returned)",
            as_returned=True,
        ),
        peer("agent", peers_dir / "spider.agent.jsonl", "LangChain SQL agent (ReAct)"),
        peer(
            "agent-tools",
            peers_dir / "spider.agent-tools.jsonl",
            TOOL_CALLING,
        ),
        product("raw", folder=eval_dir),
        product("none", folder=eval_dir),
    ]
    rows = [final, first, *peers]
    scored = [p for p in peers if p.right and p.name != TOOL_CALLING]
    aside = (
        f"\n- Not a goal: {TOOL_CALLING}. The agent is the ReAct row: this server returns no "
        "tool calls, so a tool-calling agent never sees one (the row shows it)."
        if any(p.right and p.name == TOOL_CALLING for p in peers)
        else ""
    )
    held = goal_rows(first, final, scored, keys, stamp)
    text = (
        approaches_table(final, rows, keys)
        + "\n\nThe goals, on the questions each peer has answered so far:\n\n"
        + goals(held)
        + aside
    )
    return text, held


def write_report(chosen: Sequence[Question], write: bool = True, measured: bool = False) -> str:
    """Writes (or prints) the peers' page and its rows of BENCHMARKS.md."""
    run_file = REFERENCE / "run.json"
    run = json.loads(run_file.read_text(encoding="utf-8")) if run_file.is_file() else {}
    stamp = Stamp.of_run(run) if run else None
    text, held = figures(chosen, PEERS_DIR, stamp=stamp)
    body = "\n".join(
        [
            f"Command (starts and resumes; results in `benchmarks/peers/spider.PEER.jsonl`): "
            f"`{COMMAND}`; the product's rows come from the reference run of "
            "`python -m benchmarks.eval` (`benchmarks/eval/reference/`: the shipped defaults, "
            "the vote included; targeted mode is the product's default, raw and none its other "
            "feedback modes; where an n is below 300 that run is under way and every pair is on "
            "the questions both answered).",
            "",
            "Every approach runs on the evaluation's fixed sample (Spider dev, seed 0) with the "
            "same model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama-cpp-python's OpenAI-compatible "
            "server, temperature 0, 8192-token context) and is scored by the same rule "
            "(`cadet_magic.vote.execution_match`: the SQL passes the safety check and runs read-only, its "
            "rows compared with the gold query's). The one-shot prompt is the papers' "
            "(`benchmarks/peers_oneshot.py`): every `CREATE TABLE` statement as SQLite keeps it, "
            "three rows per table in a comment, the question; one call, no retry. LangChain's "
            "`create_sql_query_chain` runs over `SQLDatabase` as its documentation shows (its "
            "prompt asks for at most 5 rows unless the question says otherwise); what it returns "
            "is scored as returned (the documentation passes it to `db.run`) and with its SQL "
            "taken out of the reply (a `SQLQuery:` label and code fences removed): the second is "
            "the row paired with the product. LangChain's SQL agent (`create_sql_agent` with "
            "`SQLDatabaseToolkit`, its defaults otherwise) runs as a ReAct agent: with this "
            "server, tool calling returns the call as text in the reply's content and no "
            "`tool_calls`, so a tool-calling agent sees no call (the `tool calling` row, on a few "
            f"questions, shows it); its iterations are capped at {MAX_ITERATIONS} (LangChain's "
            "default is 15; each iteration is a model call and a tool call), and it is scored by "
            "the SQL of its last `sql_db_query` call that ran without error. Tokens are those "
            "the server reported; seconds are wall time per question (the product's raw and none "
            "modes leave out the first call, which they share with targeted mode; the reference "
            "run took its replies from the reply store, so its seconds are not the product's: "
            "`python -m benchmarks.vote_seconds` measures those).",
            "",
            "The server ran with one thread for the prompt and one for generation "
            "(`--n_threads 1 --n_threads_batch 1`), where the evaluation's own server start uses "
            "two: on the two shared cores, two llama.cpp threads stall each other at every "
            "layer while other tests run (generation fell to 1-2 tokens/s); re-asked on both "
            "settings, 10 of 10 replies were identical byte for byte. Seconds were taken while "
            "other developers' tests shared the machine: **under load**, not the speed of any "
            "approach on an idle machine. The goals' rows of BENCHMARKS.md are dated by the "
            "product's run (the reference run); the peers' runs are older "
            f"(`{PEERS_DIR.relative_to(REFERENCE.parents[2])}/`, see its git log).",
            "",
            text,
        ]
    )
    if write:
        write_page(
            "peers",
            f"The peers side by side: the same local model on the fixed Spider sample ({len(chosen)} questions)",
            body,
            held,
            measured=measured,
            packages=(
                "llama_cpp_python",
                "langchain-community",
                "langchain-classic",
                "langchain-core",
            ),
        )
    else:
        print(body)
    return body
