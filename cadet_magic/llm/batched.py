"""Several replies to one prompt decoded together by llama.cpp (edge: llama-cpp-python's
low-level bindings, given by the caller).

Decoding one token costs about as much for a few sequences as for one (each step reads the
whole model from memory; the sequences' extra arithmetic is small next to it), so k replies
decoded in one batch cost far less than k generations one after the other. Here:

- the prompt is read once, into sequence 0 of the model's context, reusing what that sequence
  already holds of it (the prefix the high-level ``Llama`` left there, or an earlier call's);
- its cache is copied to the other sequences (a copy in llama.cpp's unified cache only marks
  the cells as shared, no memory is copied);
- each step decodes one token per unfinished sequence in one batch; each sequence has its own
  sampler (greedy, or top-k/top-p/min-p/temperature with its own seed: the chain and defaults
  llama-cpp-python's chat completions use) and ends at its own end-of-generation token or at
  ``max_tokens``;
- afterwards the other sequences are removed and sequence 0 keeps the prompt, which the
  high-level ``Llama`` is told it holds, so the next call there (a correction's prompt starts
  with the same text) reads only what differs.

A context made with one sequence (``n_seq_max`` 1) decodes the replies one after the other,
each from the prompt read once. ``on_token(index, tokens)`` is called after each step for each
sequence that got a token, and ``stop()`` is asked between steps (True: every sequence ends
there, its reply as far as it got).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: llama-cpp-python's chat-completion defaults, kept so a reply sampled here is drawn from the
#: distribution a sequential ``create_chat_completion`` draws from.
TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05


@dataclass(frozen=True)
class Draw:
    """How one reply is drawn: greedy (``temperature`` 0) or sampled with its ``seed``."""

    temperature: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class Decoded:
    """One reply: its tokens and why it ended (``stop``: its end-of-generation token;
    ``length``: ``max_tokens`` or the context full; ``stopped``: ``stop()`` said so)."""

    tokens: tuple[int, ...]
    finish: str


class Memory:
    """The context's sequence calls under the names the installed bindings give them
    (``llama_memory_*`` since llama.cpp's memory API, ``llama_kv_self_*`` before)."""

    def __init__(self, bindings: Any, ctx: Any) -> None:
        if hasattr(bindings, "llama_memory_seq_cp") and hasattr(bindings, "llama_get_memory"):
            mem = bindings.llama_get_memory(ctx)
            self._rm = lambda s, p0, p1: bindings.llama_memory_seq_rm(mem, s, p0, p1)
            self._cp = lambda a, b, p0, p1: bindings.llama_memory_seq_cp(mem, a, b, p0, p1)
        else:
            self._rm = lambda s, p0, p1: bindings.llama_kv_self_seq_rm(ctx, s, p0, p1)
            self._cp = lambda a, b, p0, p1: bindings.llama_kv_self_seq_cp(ctx, a, b, p0, p1)

    def remove(self, seq: int, start: int = -1, end: int = -1) -> bool:
        return bool(self._rm(seq, start, end))

    def copy(self, source: int, target: int) -> None:
        self._cp(source, target, -1, -1)


def supported(bindings: Any) -> bool:
    """Whether the bindings have every call this module makes."""
    needed = (
        "llama_batch_init",
        "llama_batch_free",
        "llama_decode",
        "llama_sampler_chain_init",
        "llama_sampler_sample",
        "llama_model_get_vocab",
        "llama_vocab_is_eog",
        "llama_n_seq_max",
    )
    has_memory = hasattr(bindings, "llama_memory_seq_cp") or hasattr(
        bindings, "llama_kv_self_seq_cp"
    )
    return has_memory and all(hasattr(bindings, name) for name in needed)


def _sampler(bindings: Any, draw: Draw) -> Any:
    chain = bindings.llama_sampler_chain_init(bindings.llama_sampler_chain_default_params())
    if draw.temperature <= 0:
        bindings.llama_sampler_chain_add(chain, bindings.llama_sampler_init_greedy())
        return chain
    for sampler in (
        bindings.llama_sampler_init_top_k(TOP_K),
        bindings.llama_sampler_init_top_p(TOP_P, 1),
        bindings.llama_sampler_init_min_p(MIN_P, 1),
        bindings.llama_sampler_init_temp(draw.temperature),
        bindings.llama_sampler_init_dist(draw.seed & 0xFFFFFFFF),
    ):
        bindings.llama_sampler_chain_add(chain, sampler)
    return chain


class _Batch:
    """A llama_batch of up to ``size`` tokens, one sequence each."""

    def __init__(self, bindings: Any, size: int) -> None:
        self.bindings, self.size = bindings, size
        self.raw = bindings.llama_batch_init(size, 0, 1)

    def fill(self, entries: Sequence[tuple[int, int, int, bool]]) -> None:
        """``entries``: (token, position, sequence, logits wanted)."""
        raw = self.raw
        for i, (token, pos, seq, logits) in enumerate(entries):
            raw.token[i] = token
            raw.pos[i] = pos
            raw.n_seq_id[i] = 1
            raw.seq_id[i][0] = seq
            raw.logits[i] = 1 if logits else 0
        raw.n_tokens = len(entries)

    def free(self) -> None:
        self.bindings.llama_batch_free(self.raw)


class DecodeError(RuntimeError):
    """llama.cpp could not decode a batch (its return code in the message)."""


def decode_together(
    llama: Any,
    bindings: Any,
    prompt: Sequence[int],
    draws: Sequence[Draw],
    max_tokens: int,
    *,
    on_token: Callable[[int, Sequence[int]], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[Decoded]:
    """The replies to ``prompt`` (its tokens), one per draw, in order (see the module's text).

    ``llama`` is a loaded ``llama_cpp.Llama`` (its context, its model, its ``n_batch``; the
    caller holds the model's lock). Raises :class:`ValueError` when the prompt does not fit
    the context (as ``Llama`` does) and :class:`DecodeError` when llama.cpp fails."""
    ctx = llama.ctx
    n_ctx = int(bindings.llama_n_ctx(ctx))
    if len(prompt) >= n_ctx:
        raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {n_ctx}")
    if not prompt or not draws:
        return [Decoded((), "length") for _ in draws]
    width = max(1, min(int(bindings.llama_n_seq_max(ctx)), len(draws)))
    memory = Memory(bindings, ctx)
    vocab = bindings.llama_model_get_vocab(llama.model)
    batch = _Batch(bindings, max(width, min(int(llama.n_batch), len(prompt))))
    out: list[Decoded] = []
    try:
        for start in range(0, len(draws), width):
            group = list(draws[start : start + width])
            _read_prompt(llama, bindings, memory, batch, prompt)
            for seq in range(1, len(group)):
                memory.copy(0, seq)
            out.extend(
                _generate(
                    llama,
                    bindings,
                    memory,
                    batch,
                    vocab,
                    prompt,
                    group,
                    max_tokens,
                    n_ctx,
                    start,
                    on_token,
                    stop,
                )
            )
    finally:
        batch.free()
    return out


def _read_prompt(
    llama: Any, bindings: Any, memory: Memory, batch: _Batch, prompt: Sequence[int]
) -> None:
    """Sequence 0 holds ``prompt`` and the context the logits of its last token."""
    held = [int(t) for t in llama._input_ids] if getattr(llama, "n_tokens", 0) else []
    same = 0
    for a, b in zip(held, prompt, strict=False):
        if a != b:
            break
        same += 1
    same = min(same, len(prompt) - 1)  # the last token is read again: its logits are needed
    for seq in range(1, int(bindings.llama_n_seq_max(llama.ctx))):
        memory.remove(seq)
    if not memory.remove(0, same, -1):
        memory.remove(0)
        same = 0
    _told(llama, prompt[:same])
    step = batch.size
    for i in range(same, len(prompt), step):
        chunk = prompt[i : i + step]
        last = i + len(chunk) == len(prompt)
        batch.fill([(t, i + j, 0, last and j == len(chunk) - 1) for j, t in enumerate(chunk)])
        _decode(bindings, llama.ctx, batch)
    _told(llama, prompt)


def _told(llama: Any, tokens: Sequence[int]) -> None:
    """Tells the high-level ``Llama`` what sequence 0 holds (its own prefix cache reads it);
    its last logits are not ones it computed, so its next call decodes again before sampling."""
    n = len(tokens)
    llama.input_ids[:n] = tokens
    llama.n_tokens = n
    if hasattr(llama, "_requires_eval"):
        llama._requires_eval = True


def _decode(bindings: Any, ctx: Any, batch: _Batch) -> int:
    code = int(bindings.llama_decode(ctx, batch.raw))
    if code < 0:
        raise DecodeError(f"llama_decode failed (code {code})")
    return code


def _generate(
    llama: Any,
    bindings: Any,
    memory: Memory,
    batch: _Batch,
    vocab: Any,
    prompt: Sequence[int],
    group: list[Draw],
    max_tokens: int,
    n_ctx: int,
    first_index: int,
    on_token: Callable[[int, Sequence[int]], None] | None,
    stop: Callable[[], bool] | None,
) -> list[Decoded]:
    samplers = [_sampler(bindings, d) for d in group]
    tokens: list[list[int]] = [[] for _ in group]
    finish: list[str | None] = [None] * len(group)
    # the batch index each sequence's logits are at (the prompt's last token: -1 for all)
    where = dict.fromkeys(range(len(group)), -1)
    n = len(prompt)
    try:
        while True:
            for seq, idx in where.items():
                token = int(bindings.llama_sampler_sample(samplers[seq], llama.ctx, idx))
                if bindings.llama_vocab_is_eog(vocab, token):
                    finish[seq] = "stop"
                    continue
                tokens[seq].append(token)
                if on_token is not None:
                    on_token(first_index + seq, tokens[seq])
                if len(tokens[seq]) >= max_tokens or n + len(tokens[seq]) >= n_ctx:
                    finish[seq] = "length"
            live = [s for s in range(len(group)) if finish[s] is None]
            if not live:
                break
            if stop is not None and stop():
                for s in live:
                    finish[s] = "stopped"
                break
            batch.fill([(tokens[s][-1], n + len(tokens[s]) - 1, s, True) for s in live])
            if _decode(bindings, llama.ctx, batch) != 0:  # no room left in the cache
                for s in live:
                    finish[s] = "length"
                break
            where = {s: i for i, s in enumerate(live)}
    finally:
        for sampler in samplers:
            bindings.llama_sampler_free(sampler)
        for seq in range(1, len(group)):
            memory.remove(seq)
        memory.remove(0, n, -1)
        _told(llama, prompt)
    return [Decoded(tuple(t), f or "length") for t, f in zip(tokens, finish, strict=True)]
