"""``python -m benchmarks.retry_prompts``: prompt tokens a retry makes the model read, with the
previous prompt layout and with the current one (no model call: the local model's tokenizer
only).

A server that caches the prompt prefix (llama.cpp) reads only the tokens after the longest
prefix a retry's prompt shares with what it read and wrote last (the previous prompt and the
reply it generated). The previous layout put the question, then every earlier attempt and its
error, then the feedback into one user turn: each retry re-read the history. The current one
(:func:`cadet_magic.agent.prompts.build_messages`) appends the failed SQL as the model's turn
and the feedback as the user's to the previous prompt.

The retries are real: the local model's replies that failed (``tests/llm/data/real_replies.json``
and the multi-attempt questions of an evaluation results folder), replayed through ``ask()`` by a
scripted model on their Spider databases; each retry's prompt is rendered with the model's chat
template (ChatML) and tokenized with its own vocabulary, in both layouts.

    .venv/bin/python -m benchmarks.retry_prompts [RESULTS_FOLDER ...] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.report import ROOT, write_section

#: Prompt tokens per second the local model reads on this machine when idle (BENCHMARKS.md,
#: local model section): to turn tokens into seconds.
PROMPT_TOKENS_PER_S = 85.0


def chatml(messages: Sequence[tuple[str, str]]) -> str:
    """Messages in the Qwen chat template, ready for the assistant's turn."""
    roles = {"human": "user", "ai": "assistant"}
    body = "".join(f"<|im_start|>{roles.get(r, r)}\n{text}<|im_end|>\n" for r, text in messages)
    return body + "<|im_start|>assistant\n"


def previous_layout(question: str, system: str, attempts: Sequence) -> list[tuple[str, str]]:
    """The retry prompt as it was before (one user turn: question, history, feedback)."""
    history = "\n\n".join(
        f"Attempt {a.number}:\nSQL: {a.sql or '(no SQL in the reply)'}\n"
        f"Error: {(a.error or a.outcome).strip()}"
        for a in attempts
    )
    last = attempts[-1]
    user = (
        f"Question: {question}\n\nPrevious attempts failed:\n\n{history}\n\n"
        f"What to fix now:\n{last.feedback or 'Fix the error above.'}\n\n"
        "Write the corrected query in one ```sql block."
    )
    return [("system", system), ("human", user)]


def cases(folder: Path | None) -> list[dict]:
    """(database, question, replies) of real failed attempts: the replayed real replies, and
    the multi-attempt questions of a results folder."""
    out = []
    data = json.loads((ROOT / "tests" / "llm" / "data" / "real_replies.json").read_text())
    for c in data["cases"]:
        if c["database"].startswith("spider:") and len(c["replies"]) > 1:
            out.append({"db_id": c["database"].split(":", 1)[1], "question": c["question"],
                        "replies": c["replies"]})  # fmt: skip
    if folder is not None:
        for path in sorted(folder.glob("spider*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                sqls = [a.get("sql") for a in rec.get("attempts", []) if isinstance(a, dict)]
                if rec.get("stop_reason") == "unchanged_sql" and rec.get("first_sql"):
                    sqls = [rec["first_sql"]] * 2  # lines without attempts' SQL: a repeat
                if len(sqls) > 1 and all(sqls):
                    out.append({"db_id": rec["db_id"], "question": rec["question"],
                                "replies": [f"```sql\n{s}\n```" for s in sqls]})  # fmt: skip
    return out


def measure(items: list[dict]) -> dict[int, dict[str, list[int]]]:
    """Per retry number: whole prompt tokens and tokens to read, in both layouts."""
    from llama_cpp import Llama

    from cadet_magic.api import ask
    from cadet_magic.llm import ScriptedModel
    from workloads.gold import DATA
    from workloads.llm import model_path

    vocab = Llama(model_path=str(model_path()), vocab_only=True, verbose=False)

    def tokens(text: str) -> list[int]:
        return vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def to_read(prompt: list[int], cached: list[int]) -> int:
        n = 0
        for a, b in zip(prompt, cached, strict=False):
            if a != b:
                break
            n += 1
        return len(prompt) - n

    out: dict[int, dict[str, list[int]]] = {}
    for item in items:
        path = DATA / "spider-dev" / "database" / item["db_id"] / f"{item['db_id']}.sqlite"
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        scripted = ScriptedModel({item["question"]: item["replies"]})
        prompts: list = []
        real_invoke = scripted.invoke

        def invoke(messages, *a, _real=real_invoke, _seen=prompts, **kw):
            _seen.append(list(messages))
            return _real(messages, *a, **kw)

        scripted.invoke = invoke  # type: ignore[method-assign]
        try:
            result = ask(item["question"], con=con, model=scripted, fallback=False)
        finally:
            con.close()
        system = prompts[0][0][1]
        new_prev = old_prev = None
        for k, prompt in enumerate(prompts, start=1):
            reply = result.attempts[k - 1].reply if k - 1 < len(result.attempts) else ""
            new = tokens(chatml(prompt))
            old = (
                new
                if k == 1
                else tokens(
                    chatml(previous_layout(item["question"], system, result.attempts[: k - 1]))
                )
            )
            if k > 1 and new_prev is not None and old_prev is not None:
                row = out.setdefault(k, {"old": [], "new": [], "old_read": [], "new_read": []})
                row["old"].append(len(old))
                row["new"].append(len(new))
                row["old_read"].append(to_read(old, old_prev))
                row["new_read"].append(to_read(new, new_prev))
            tail = tokens(reply + "<|im_end|>\n")
            new_prev, old_prev = new + tail, old + tail
    return out


def table(rows: dict[int, dict[str, list[int]]]) -> str:
    lines = [
        "| attempt | retries | prompt tokens, before / after (mean) | tokens the model reads with "
        "a prefix cache, before / after (mean) | seconds to read at "
        f"{PROMPT_TOKENS_PER_S:.0f} tokens/s, before / after |",
        "|---|---|---|---|---|",
    ]
    for k in sorted(rows):
        r = rows[k]
        m = {key: statistics.mean(v) for key, v in r.items()}
        lines.append(
            f"| {k} | {len(r['new'])} | {m['old']:.0f} / {m['new']:.0f} | "
            f"{m['old_read']:.0f} / {m['new_read']:.0f} | "
            f"{m['old_read'] / PROMPT_TOKENS_PER_S:.1f} / {m['new_read'] / PROMPT_TOKENS_PER_S:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.retry_prompts")
    p.add_argument("folders", nargs="*", type=Path, help="evaluation results folders")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    by_question = {(c["db_id"], c["question"]): c for f in args.folders or [None] for c in cases(f)}
    items = list(by_question.values())
    body = table(measure(items))
    text = (
        f"{len(items)} real failed questions replayed (scripted: the model's own replies), every "
        "retry's prompt in the previous layout (before) and the current one (after), tokenized "
        "with the model's vocabulary.\n\n" + body
    )
    print(text)
    if not args.no_write:
        write_section(
            "retry_prompts",
            "Retry prompts: tokens the local model reads per retry, before and after",
            text,
            packages=("llama_cpp_python",),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
