"""How fast a local model answers on this machine: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF,
assembled by scripts/setup_llm.sh) served by llama-cpp-python's OpenAI-compatible server
(``openai:qwen`` with a base URL) and loaded in the process (``llamacpp:PATH``), side by side.

Measured in one run:

* **raw speed** of llama.cpp on this CPU (the file loaded in-process): prompt tokens per second
  (a fixed ~600-token prompt, one generated token, the cache cleared before each round) and
  generated tokens per second (the same prompt with 64 tokens minus the one-token time);
* **start**: the server until it answers ``/v1/models``; the in-process load of the file;
* **questions**: the sample shop's questions through ``ask()`` (temperature 0, the product's
  defaults otherwise), alternating server and in-process question by question: seconds per
  question, model seconds, model calls and tokens (from the attempts' ``tokens``). Both keep
  llama.cpp's prompt cache between calls (the shared prompt prefix is not computed again).

The load average is printed before and after and written with the figures: a run under load
(1-minute load above 1.5 on this 2-core machine) is marked so, and is not the model's speed.

Run: ``python -m benchmarks.local_model`` (``--rounds N`` for the raw speed, ``--questions N``,
``--no-write`` prints only). Not part of ``python -m benchmarks`` (it needs the model and takes
minutes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from benchmarks.report import table, write_page

#: Questions on the sample shop, simplest first.
QUESTIONS = (
    "How many customers are there?",
    "How many orders per status?",
    "List the three most expensive products in the Electronics category.",
    "What is the revenue per product category, highest first?",
    "Which five customers spent the most in 2025, counting completed and shipped orders?",
)

PROMPT = (
    "You write SQL for DuckDB. Tables:\n"
    + "\n".join(
        f"table t{i} (id INTEGER PRIMARY KEY, name VARCHAR, amount DECIMAL(10,2), "
        f"created DATE, t{(i + 1) % 20}_id INTEGER REFERENCES t{(i + 1) % 20}(id))"
        for i in range(20)
    )
    + "\nQuestion: which rows of t3 have the largest amount?\nAnswer with one SQL query.\n"
)


def load() -> float:
    return os.getloadavg()[0]


def raw_speed(llama: Any, rounds: int) -> tuple[float, float, int]:
    """Prompt and generated tokens per second (medians over ``rounds``), and prompt tokens."""
    prompt_rates, gen_rates, n_prompt = [], [], 0
    for _ in range(rounds):
        llama.reset()
        t0 = time.perf_counter()
        one = llama.create_completion(PROMPT, max_tokens=1, temperature=0)
        t_one = time.perf_counter() - t0
        n_prompt = one["usage"]["prompt_tokens"]
        llama.reset()
        t0 = time.perf_counter()
        many = llama.create_completion(PROMPT, max_tokens=64, temperature=0)
        t_many = time.perf_counter() - t0
        n_gen = many["usage"]["completion_tokens"]
        prompt_rates.append(n_prompt / t_one)
        if n_gen > 1 and t_many > t_one:
            gen_rates.append((n_gen - 1) / (t_many - t_one))
    return statistics.median(prompt_rates), statistics.median(gen_rates or [0.0]), n_prompt


def question_row(result: Any) -> dict[str, float]:
    tokens = result.tokens
    return {
        "seconds": result.elapsed,
        "model_seconds": result.model_seconds,
        "calls": result.model_calls,
        "input": tokens.input if tokens and tokens.input else 0,
        "output": tokens.output if tokens and tokens.output else 0,
    }


def summary(rows: list[dict[str, float]]) -> list[str]:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    return [
        f"{med('seconds'):.1f} s",
        f"{max(r['seconds'] for r in rows):.1f} s",
        f"{med('model_seconds'):.1f} s",
        f"{med('calls'):g}",
        f"{med('input'):,.0f} / {med('output'):,.0f}",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    from langchain.chat_models import init_chat_model

    from cadet_magic.api import ask
    from cadet_magic.examples.shop import create_shop
    from cadet_magic.llm.llamacpp import LlamaCppChatModel, default_threads, load_gguf
    from workloads.llm import MODEL_ALIAS, llm_server, missing, model_path

    why = missing()
    if why:
        raise SystemExit(f"local_model: {why}")
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    loads = [load()]

    t0 = time.perf_counter()
    llama = load_gguf(model_path())
    load_seconds = time.perf_counter() - t0
    prompt_rate, gen_rate, n_prompt = raw_speed(llama, args.rounds)
    loads.append(load())
    print(f"raw: {prompt_rate:.1f} prompt tok/s, {gen_rate:.1f} generated tok/s")

    con = create_shop()
    server_rows: list[dict[str, float]] = []
    local_rows: list[dict[str, float]] = []
    t0 = time.perf_counter()
    with llm_server() as url:
        server_start = time.perf_counter() - t0
        served = init_chat_model(
            f"openai:{MODEL_ALIAS}", base_url=url, api_key="local", temperature=0, timeout=900
        )
        direct = LlamaCppChatModel(model_path(), llama=llama)
        for question in QUESTIONS[: args.questions]:
            for rows, model in ((server_rows, served), (local_rows, direct)):
                result = ask(question, con=con, model=model, model_timeout=900)
                rows.append(question_row(result))
                loads.append(load())
                print(
                    f"{'server' if rows is server_rows else 'llamacpp'}: "
                    f"{result.elapsed:6.1f} s {result.model_calls} call(s) {question}",
                    flush=True,
                )
    con.close()
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")

    busy = max(loads) > 1.5
    mark = " (under load)" if busy else ""
    n = len(server_rows)
    body = [
        f"Load average (1 min) during the run: {min(loads):.2f}-{max(loads):.2f}"
        + (
            "; **taken under load** (other work on this 2-core machine): these figures are "
            "slower than the model's own speed."
            if busy
            else "."
        ),
        "",
        f"llama.cpp on this CPU, {default_threads()} threads, in-process{mark}: load "
        f"{load_seconds:.1f} s; prompt {prompt_rate:.1f} tokens/s ({n_prompt}-token prompt); "
        f"generation {gen_rate:.1f} tokens/s (medians of {args.rounds} rounds). Server start "
        f"(until /v1/models answers) {server_start:.1f} s.",
        "",
        f"Sample-shop questions through `ask()`, n = {n} per way, temperature 0, "
        "alternating question by question:",
        "",
        table(
            [
                "model",
                "median s/question",
                "slowest",
                "model s (median)",
                "calls (median)",
                "tokens in / out (median)",
            ],
            [
                ["`openai:qwen` + base URL (llama.cpp server)", *summary(server_rows)],
                ["`llamacpp:qwen.gguf` (in-process)", *summary(local_rows)],
            ],
        ),
    ]
    text = "\n".join(body)
    if args.no_write:
        print(text)
        return
    write_page(  # reported: the model's own speed, no budget of the product's
        "local_model",
        "Local model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M on this CPU",
        text,
        packages=("llama_cpp_python", "langchain-openai"),
    )


if __name__ == "__main__":
    main()
