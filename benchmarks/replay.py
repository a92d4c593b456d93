"""``python -m benchmarks.replay``: the evaluation replayed from recorded replies, to show that a
change of the code left the agent's behaviour as it was.

The real-model evaluation's reference run (:mod:`benchmarks.eval`, ``benchmarks/eval/reference/``)
keeps, per feedback mode, every attempt's SQL as the model wrote it in ``spider.MODE.jsonl``
(and the vote's candidates, the fallback's SELECT and pandas code), and its options in
``run.json``. :class:`ReplayServer` is an OpenAI-compatible server on 127.0.0.1 that
answers each chat request with that recorded reply for (question, attempt number, mode): a
scripted model, labelled as such (its model is :data:`MODEL`, its replies carry the system
fingerprint ``replayed``), that never calls nor stores anything of the real model. The runner
sends the recorded questions through :func:`cadet_magic.eval.evaluate` against it, mode after
mode, and writes to ``--out``:

* ``requests.MODE.jsonl``: every chat request body the product sent, byte for byte, one a line;
* ``results.MODE.jsonl``: the evaluation's results lines without their timings;
* ``summary.txt``: per mode the requests sent, the answers that matched the gold query and the
  final answers whose SQL is the recorded run's (the replay reproduces the recorded run where
  the product's code is the code that ran it).

Two such folders, one written before a change and one after it, must be equal:
``python -m benchmarks.replay --compare BEFORE AFTER`` says where they differ (exit 1) or that
they are the same (exit 0). A request that differs is a change of what the model is sent (a
prompt, a feedback text, the schema shown); a result that differs is a change of what the user
gets. The replies are the recorded ones even where the changed code would have led the real
model elsewhere, so the check is exact and needs no model.

How the request is matched: its first user turn starts with ``Question: <question>``; a
request whose system prompt asks for a ```python block is the fallback's; a request carrying a
``seed`` is the vote's candidate of that number (the vote samples candidate ``k`` with seed
``k``), answered with the recorded candidate ``k`` (the results line's ``candidates``, in the
order they were drawn); otherwise the attempt number is one more than the model turns already
in the request (the SQL phase) or than the earlier fallback attempts its user turn lists (the
fallback). Past the recorded attempts the last recorded reply answers again; past the recorded
candidates the first attempt's reply answers; a fallback without a recorded attempt gets
:data:`NO_FALLBACK`. The replay answers one reply per request (as llama-cpp-python's server
does, which ignores ``n``), so the vote asks for its candidates one by one, as in the recorded
run.

Use::

    python -m benchmarks.replay --out /tmp/replay-before            # on the old code
    python -m benchmarks.replay --out /tmp/replay-after             # on the new code
    python -m benchmarks.replay --compare /tmp/replay-before /tmp/replay-after
"""

from __future__ import annotations

import argparse
import http.server
import json
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from benchmarks.report import ROOT
from benchmarks.sample import MODES, REFERENCE, spider_dir

#: The recorded evaluation's folder: the reference run.
RECORDED = REFERENCE
#: The model name the product is given (and sends in every request): the replies are replayed.
MODEL = "replayed-spider-eval"
#: The fallback's reply when the recorded run has no fallback attempt for the question.
NO_FALLBACK = "```sql\nSELECT 1 AS replayed\n```\n```python\nresult = df\n```"
#: Keys of a results line that measure time (left out: they differ from run to run).
TIMINGS = ("seconds", "model_seconds")

_FALLBACK_ATTEMPT = re.compile(r"^Fallback attempt \d+:$", re.M)


def read_recorded(folder: Path, mode: str) -> dict[str, dict]:
    """The recorded results lines of ``mode`` by question (the last line of a question wins)."""
    records: dict[str, dict] = {}
    path = folder / f"spider.{mode}.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        records[rec["question"]] = rec
    return records


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content or "")


def _question(user: str, questions: Sequence[str]) -> str | None:
    """The recorded question a first user turn asks (the longest that matches).

    >>> _question("Question: How many?\\n\\nExamples", ["How many?", "How"])
    'How many?'
    """
    found = [
        q for q in questions if user == f"Question: {q}" or user.startswith(f"Question: {q}\n\n")
    ]
    return max(found, key=len, default=None)


def fenced(sql: str | None, code: str | None = None) -> str:
    """A reply as the model writes one: the SQL fenced, then the pandas code when given.

    >>> print(fenced("SELECT 1", "result = df"))
    ```sql
    SELECT 1
    ```
    ```python
    result = df
    ```
    """
    text = f"```sql\n{(sql or '').strip()}\n```"
    return text if code is None else f"{text}\n```python\n{code.strip()}\n```"


def recorded_reply(body: Mapping[str, Any], records: Mapping[str, dict]) -> tuple[str, str]:
    """The recorded reply to one chat request body, and what it was matched to (for the log).

    >>> rec = {"attempts": [{"sql": "SELECT a FROM t"}, {"sql": "SELECT b FROM t"}]}
    >>> body = {"messages": [{"role": "system", "content": "SQL"},
    ...     {"role": "user", "content": "Question: Q?"},
    ...     {"role": "assistant", "content": "x"}, {"role": "user", "content": "fix"}]}
    >>> recorded_reply(body, {"Q?": rec})
    ('```sql\\nSELECT b FROM t\\n```', 'Q? sql 2')

    A vote's candidate (its seed is its number) gets the recorded candidate of that number:

    >>> rec["candidates"] = [{"sql": "SELECT c FROM t"}]
    >>> first = {"messages": body["messages"][:2], "seed": 1, "temperature": 0.7}
    >>> recorded_reply(first, {"Q?": rec})
    ('```sql\\nSELECT c FROM t\\n```', 'Q? candidate 1')
    >>> recorded_reply(dict(first, seed=2), {"Q?": rec})[1]
    'Q? candidate 2 (none recorded)'
    """
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    system = "".join(_text(m) for m in messages if m.get("role") == "system")
    users = [_text(m) for m in messages if m.get("role") == "user"]
    question = _question(users[0], list(records)) if users else None
    if question is None:
        raise LookupError("the request asks no recorded question")
    rec = records[question]
    if "```python" in system:
        n = len(_FALLBACK_ATTEMPT.findall(users[0])) + 1
        tried = rec.get("fallback_attempts") or []
        if not tried:
            return NO_FALLBACK, f"{question} fallback {n} (none recorded)"
        got = tried[min(n, len(tried)) - 1]
        return fenced(got.get("sql"), got.get("code") or ""), f"{question} fallback {n}"
    tried = rec.get("attempts") or []
    if not tried:
        raise LookupError(f"no attempt recorded for {question!r}")
    seed = body.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        drawn = rec.get("candidates") or []
        if 1 <= seed <= len(drawn):
            return fenced(drawn[seed - 1].get("sql")), f"{question} candidate {seed}"
        return fenced(tried[0].get("sql")), f"{question} candidate {seed} (none recorded)"
    n = sum(1 for m in messages if m.get("role") == "assistant") + 1
    return fenced(tried[min(n, len(tried)) - 1].get("sql")), f"{question} sql {n}"


def completion(body: Mapping[str, Any], content: str, number: int) -> dict[str, Any]:
    """A chat completion carrying ``content``, with a deterministic usage (words, not tokens)."""
    prompt = sum(len(_text(m).split()) for m in body.get("messages") or [])
    words = len(content.split())
    return {
        "id": f"chatcmpl-replayed-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "system_fingerprint": "replayed",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": words,
            "total_tokens": prompt + words,
        },
    }


class ReplayServer:
    """The scripted server: ``mode`` chooses the recorded replies (``records[mode]``, by
    question); ``bodies`` keeps every chat request body received, ``matched`` what each was
    answered as. A request it cannot match gets a 500 the client does not retry."""

    def __init__(self, records: Mapping[str, Mapping[str, dict]]) -> None:
        self.records = records
        self.mode = next(iter(records))
        self.bodies: list[bytes] = []
        self.matched: list[str] = []
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the replay server is not running (use it as a context manager)")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def answer(self, body: bytes) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.bodies.append(body)
            number = len(self.bodies)
            try:
                content, why = recorded_reply(json.loads(body), self.records[self.mode])
            except (LookupError, ValueError) as e:
                self.matched.append(f"unmatched: {e}")
                message = f"replay: no recorded reply ({e})"
                return 500, {"error": {"message": message, "type": "replay", "code": None}}
            self.matched.append(why)
        return 200, completion(json.loads(body), content, number)

    def take(self) -> tuple[list[bytes], list[str]]:
        """The requests received since the last call, and what each was matched to."""
        with self._lock:
            bodies, matched = self.bodies, self.matched
            self.bodies, self.matched = [], []
        return bodies, matched

    def __enter__(self) -> ReplayServer:
        replay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/").endswith("/chat/completions"):
                    status, payload = replay.answer(body)
                else:
                    status, payload = 404, {"error": {"message": f"no route {self.path}"}}
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status != 200:
                    self.send_header("x-should-retry", "false")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def without_timings(rec: dict) -> dict:
    """A results line without what measures time (its own, its attempts', the fallback's and
    the vote's candidates').

    >>> without_timings({"a": 1, "seconds": 2.0, "attempts": [{"sql": "x", "model_seconds": 1}],
    ...     "candidates": [{"sql": "y", "model_seconds": 0.5}]})
    {'a': 1, 'attempts': [{'sql': 'x'}], 'candidates': [{'sql': 'y'}]}
    """
    out = {k: v for k, v in rec.items() if k not in TIMINGS}
    for key in ("attempts", "fallback_attempts", "candidates"):
        if isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in a.items() if k not in TIMINGS} for a in out[key]]
    return out


def _refuse_recorded(out: Path, recorded: Path) -> None:
    """The replay never writes beside the real model's records or into its reply store."""
    out, recorded = out.resolve(), recorded.resolve()
    store = (ROOT / ".cache").resolve()
    for real in (recorded, store):
        if out == real or real in out.parents:
            raise SystemExit(f"replay: --out must not be in {real} (the real model's records)")


#: Options of the recorded run the replay leaves as they are: the model's, its time limit and
#: the result check's total time are the replay's own.
NOT_REPLAYED = ("model", "api_key", "base_url", "model_timeout", "temperature", "check_budget")


def recorded_options(recorded: Path) -> Any:
    """The options the recorded run asked with (its ``run.json``; the product's defaults when
    it has none), with the replay's own model time limit and no total time for the result
    check (each check query keeps the query timeout): how many check queries fit in the
    product's 0.2 s depends on the machine's load, so with it two replays of the same code
    could differ (a value found in one, the SQL suspect in the other).

    >>> o = recorded_options(Path("/nonexistent"))
    >>> o.model_timeout, o.check_budget
    (60.0, None)
    """
    from cadet_magic.options import AskOptions

    run = recorded / "run.json"
    given = json.loads(run.read_text(encoding="utf-8")).get("options", {}) if run.is_file() else {}
    kept = {k: v for k, v in given.items() if k in AskOptions.names() and k not in NOT_REPLAYED}
    return AskOptions(**kept).replace(model_timeout=60.0, check_budget=None)


def replay(
    out: Path,
    data: Path,
    recorded: Path = RECORDED,
    modes: Sequence[str] = MODES,
    limit: int | None = None,
    options: Any = None,
) -> dict[str, tuple[int, int, int, int]]:
    """Replays ``modes`` over the questions of the recorded files (their order, the first
    ``limit``) with ``options`` (default: the recorded run's, :func:`recorded_options`),
    writing the folder described in the module's docstring; per mode (requests, questions,
    final matches, final answers the same SQL as the recorded run's)."""
    from cadet_magic.eval import evaluate, load

    _refuse_recorded(out, recorded)
    out.mkdir(parents=True, exist_ok=True)
    records = {m: read_recorded(recorded, m) for m in modes}
    options = recorded_options(recorded) if options is None else options
    dataset = load(data)
    by_key = {(q.db_id, q.question, q.gold): q for q in dataset.questions}
    figures: dict[str, tuple[int, int, int, int]] = {}
    with ReplayServer(records) as server:
        for mode in modes:
            keys = [(r["db_id"], r["question"], r["gold"]) for r in records[mode].values()]
            chosen = [by_key[k] for k in keys if k in by_key][:limit]
            raw = out / f".evaluate.{mode}.jsonl"
            raw.unlink(missing_ok=True)
            server.mode = mode
            evaluate(
                dataset,
                f"openai:{MODEL}",
                base_url=server.base_url,
                api_key="replayed",
                feedback=mode,
                out=raw,
                questions=chosen,
                temperature=0.0,
                options=options,
                progress=None,
                print_summary=False,
            )
            bodies, matched = server.take()
            lines = [json.loads(line) for line in raw.read_text(encoding="utf-8").splitlines()]
            raw.unlink()
            with (out / f"requests.{mode}.jsonl").open("wb") as f:
                for body in bodies:
                    f.write(body.replace(b"\n", b"\\n") + b"\n")
            (out / f"matched.{mode}.txt").write_text("\n".join(matched) + "\n", encoding="utf-8")
            with (out / f"results.{mode}.jsonl").open("w", encoding="utf-8") as f:
                for rec in lines:
                    f.write(json.dumps(without_timings(rec), ensure_ascii=False) + "\n")
            matches = sum(bool(rec.get("final_match")) for rec in lines)
            same = sum(
                rec.get("final_sql") == records[mode][rec["question"]].get("final_sql")
                for rec in lines
            )
            figures[mode] = (len(bodies), len(lines), matches, same)
    summary = [
        f"{mode}: {n} requests, {q} questions, {m} final answers match the gold query, "
        f"{same} final answers the recorded run's SQL"
        for mode, (n, q, m, same) in figures.items()
    ]
    (out / "summary.txt").write_text("\n".join(summary) + "\n", encoding="utf-8")
    return figures


def _first_difference(a: list[str], b: list[str]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            at = next((j for j, (c, d) in enumerate(zip(x, y, strict=False)) if c != d), 0)
            return f"line {i + 1}, character {at}: {x[max(0, at - 80) : at + 120]!r} -> {y[max(0, at - 80) : at + 120]!r}"
    return f"{len(a)} lines -> {len(b)} lines"


def compare(before: Path, after: Path) -> list[str]:
    """Where two replay folders differ (requests and results; the timings are not in them)."""
    problems = []
    for path in sorted(before.glob("*.jsonl")):
        other = after / path.name
        if not other.is_file():
            problems.append(f"{path.name}: missing in {after}")
            continue
        a = path.read_text(encoding="utf-8").splitlines()
        b = other.read_text(encoding="utf-8").splitlines()
        if a != b:
            problems.append(f"{path.name}: {_first_difference(a, b)}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.replay", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", type=Path, help="the folder to write (outside benchmarks/eval)")
    p.add_argument("--data", type=Path, help="Spider dev's folder (default $CADET_DATA/spider-dev)")
    p.add_argument("--recorded", type=Path, default=RECORDED, help="the recorded results' folder")
    p.add_argument("--feedback", default=",".join(MODES), help="modes to replay")
    p.add_argument("--limit", type=int, help="only the first K recorded questions of each mode")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = p.parse_args(argv)
    if args.compare:
        problems = compare(*args.compare)
        print("\n".join(problems) if problems else "the same requests and results")
        return 1 if problems else 0
    if args.out is None:
        p.error("--out is required (or --compare)")
    if args.data is None:
        args.data = spider_dir()
    t0 = time.perf_counter()
    modes = [m.strip() for m in args.feedback.split(",") if m.strip()]
    figures = replay(args.out, args.data, args.recorded, modes, args.limit)
    for mode, (n, q, m, same) in figures.items():
        print(
            f"{mode}: {n} requests, {q} questions, {m} matched (replayed replies), "
            f"{same} final answers the recorded run's SQL"
        )
    print(f"written to {args.out} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
