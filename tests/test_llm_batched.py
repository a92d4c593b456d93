"""Replies decoded together (:mod:`cadet_magic.llm.batched`) over scripted llama.cpp bindings
(scripted tokens, not a real model; the real llama.cpp runs in tests/llm/test_batched.py,
marker ``llm``): the prompt read once into sequence 0 and copied, one token per unfinished
sequence a step, each ending on its own, the sequences cleaned up after, and the high-level
model told what sequence 0 holds so its prefix cache reads only what differs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cadet_magic.llm.batched import Draw, decode_together, supported

EOG = 0


class Bindings:
    """The calls :mod:`cadet_magic.llm.batched` makes, scripted: each sampler's tokens come
    from ``script`` (by its seed; greedy: ``"greedy"``), token 0 ends a reply."""

    def __init__(self, script: dict, n_seq_max: int = 8, n_ctx: int = 64) -> None:
        self.script = {k: list(v) for k, v in script.items()}
        self.n_seq_max, self.n_ctx = n_seq_max, n_ctx
        self.decoded: list[list[tuple]] = []  # each batch: (token, pos, seq, logits)
        self.memory: list[tuple] = []
        self.freed = 0

    # context, memory, vocab
    def llama_n_ctx(self, ctx):
        return self.n_ctx

    def llama_n_seq_max(self, ctx):
        return self.n_seq_max

    def llama_get_memory(self, ctx):
        return "memory"

    def llama_memory_seq_rm(self, mem, seq, p0, p1):
        self.memory.append(("rm", seq, p0, p1))
        return True

    def llama_memory_seq_cp(self, mem, a, b, p0, p1):
        self.memory.append(("cp", a, b))

    def llama_model_get_vocab(self, model):
        return "vocab"

    def llama_vocab_is_eog(self, vocab, token):
        return token == EOG

    # batches
    def llama_batch_init(self, size, embd, n_seq):
        return SimpleNamespace(
            token=[0] * size,
            pos=[0] * size,
            n_seq_id=[0] * size,
            seq_id=[[0] for _ in range(size)],
            logits=[0] * size,
            n_tokens=0,
        )

    def llama_batch_free(self, batch):
        self.freed += 1

    def llama_decode(self, ctx, batch):
        n = batch.n_tokens
        self.decoded.append(
            [(batch.token[i], batch.pos[i], batch.seq_id[i][0], batch.logits[i]) for i in range(n)]
        )
        return 0

    # samplers: a chain is a list of what was added; its tokens come from the script
    def llama_sampler_chain_default_params(self):
        return None

    def llama_sampler_chain_init(self, params):
        return []

    def llama_sampler_chain_add(self, chain, sampler):
        chain.append(sampler)

    def llama_sampler_init_greedy(self):
        return ("greedy",)

    def llama_sampler_init_dist(self, seed):
        return ("dist", seed)

    def llama_sampler_init_top_k(self, k):
        return ("top_k", k)

    def llama_sampler_init_top_p(self, p, keep):
        return ("top_p", p)

    def llama_sampler_init_min_p(self, p, keep):
        return ("min_p", p)

    def llama_sampler_init_temp(self, t):
        return ("temp", t)

    def llama_sampler_sample(self, chain, ctx, idx):
        key = "greedy" if chain[0] == ("greedy",) else chain[-1][1]
        return self.script[key].pop(0)

    def llama_sampler_free(self, chain):
        pass


class Llama:
    """What the decoder reads of the high-level ``llama_cpp.Llama``."""

    def __init__(self, held: list[int] = ()) -> None:
        self.ctx, self.model, self.n_batch = "ctx", "model", 4
        self.input_ids = [0] * 64
        self.input_ids[: len(held)] = held
        self.n_tokens = len(held)
        self._requires_eval = False

    @property
    def _input_ids(self):
        return self.input_ids[: self.n_tokens]


PROMPT = [11, 12, 13, 14, 15, 16]


def test_the_prompt_is_read_once_and_each_reply_ends_on_its_own():
    b = Bindings({"greedy": [5, 6, EOG], 1: [7, 8, 9, 10, 11], 2: [EOG]})
    llama = Llama()
    out = decode_together(llama, b, PROMPT, [Draw(), Draw(0.7, 1), Draw(0.7, 2)], max_tokens=4)
    assert [(d.tokens, d.finish) for d in out] == [
        ((5, 6), "stop"),
        ((7, 8, 9, 10), "length"),
        ((), "stop"),
    ]
    # the prompt in chunks of n_batch (4), sequence 0, logits for its last token only
    assert b.decoded[0] == [(t, i, 0, 0) for i, t in enumerate(PROMPT[:4])]
    assert b.decoded[1] == [(15, 4, 0, 0), (16, 5, 0, 1)]
    assert ("cp", 0, 1) in b.memory and ("cp", 0, 2) in b.memory
    # then one token a step per unfinished sequence, at its own position
    assert b.decoded[2] == [(5, 6, 0, 1), (7, 6, 1, 1)]
    assert b.decoded[3] == [(6, 7, 0, 1), (8, 7, 1, 1)]
    assert b.decoded[4] == [(9, 8, 1, 1)]
    assert len(b.decoded) == 5  # the last token of a reply at its limit is not decoded
    # afterwards: the other sequences gone, sequence 0 back to the prompt, the model told
    assert b.memory[-3:] == [("rm", 1, -1, -1), ("rm", 2, -1, -1), ("rm", 0, 6, -1)]
    assert llama._input_ids == PROMPT and llama._requires_eval and b.freed == 1


def test_a_prompt_held_already_is_read_again_from_its_last_token_only():
    b = Bindings({1: [EOG]})
    llama = Llama(held=PROMPT[:5] + [99, 98])  # an earlier call's prompt and reply
    decode_together(llama, b, PROMPT, [Draw(0.7, 1)], max_tokens=4)
    assert b.decoded[0] == [(16, 5, 0, 1)]
    assert ("rm", 0, 5, -1) in b.memory


def test_the_same_prompt_again_reads_its_last_token_for_the_logits():
    b = Bindings({1: [EOG]})
    decode_together(Llama(held=PROMPT), b, PROMPT, [Draw(0.7, 1)], max_tokens=4)
    assert b.decoded[0] == [(16, 5, 0, 1)]


def test_a_context_of_one_sequence_decodes_the_replies_one_after_the_other():
    b = Bindings({3: [7, EOG], 4: [8, 9, EOG]}, n_seq_max=1)
    llama = Llama()
    out = decode_together(llama, b, PROMPT, [Draw(0.7, 3), Draw(0.7, 4)], max_tokens=8)
    assert [d.tokens for d in out] == [(7,), (8, 9)]
    assert not [m for m in b.memory if m[0] == "cp"]
    # the second reply's prompt: read again from its last token only
    second = [batch for batch in b.decoded if batch[0][1] == 5]
    assert second == [[(16, 5, 0, 1)]]


def test_stop_ends_every_sequence_where_it_got():
    b = Bindings({1: [7, 8, 9, EOG], 2: [5, 6, 4, EOG]})
    steps = iter([False, True])
    out = decode_together(
        Llama(), b, PROMPT, [Draw(0.7, 1), Draw(0.7, 2)], 8, stop=lambda: next(steps)
    )
    assert [(d.tokens, d.finish) for d in out] == [((7, 8), "stopped"), ((5, 6), "stopped")]


def test_each_sampler_has_its_own_seed_and_the_chat_completion_defaults():
    chains: list = []
    b = Bindings({"greedy": [EOG], 9: [EOG]})
    add = b.llama_sampler_chain_add
    b.llama_sampler_chain_add = lambda chain, s: (chains.append(chain), add(chain, s))
    decode_together(Llama(), b, PROMPT, [Draw(), Draw(0.7, 9)], max_tokens=2)
    greedy, sampled = {id(c): c for c in chains}.values()
    assert greedy == [("greedy",)]
    assert sampled == [("top_k", 40), ("top_p", 0.95), ("min_p", 0.05), ("temp", 0.7), ("dist", 9)]


def test_a_prompt_longer_than_the_context_is_refused():
    with pytest.raises(ValueError, match="exceed context window"):
        decode_together(Llama(), Bindings({}, n_ctx=4), PROMPT, [Draw()], max_tokens=2)


def test_the_bindings_needed_are_checked():
    assert supported(Bindings({})) and not supported(SimpleNamespace())
