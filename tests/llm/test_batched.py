"""Replies decoded together by the real llama.cpp (marker ``llm``): the installed model loaded in
this process once (the session's ``gguf_model``, replies cut at 64 tokens), the prompt read once
and its cache shared by the sequences (:mod:`cadet_magic.llm.batched`). What must hold whatever
the model writes: the same seeds give the same replies, the greedy reply decoded beside the
candidates is the one decoded alone, each sequence ends on its own, and the model's own
prompt cache stays usable."""

from __future__ import annotations

import pytest

from cadet_magic.api import ask
from cadet_magic.examples.shop import create_shop

pytestmark = [pytest.mark.llm]

PROMPT = [
    ("system", "You write SQLite SQL. Reply with one query in a ```sql block, nothing else."),
    ("human", "Table singer(id, name, country, age). How many singers are from France?"),
]


def test_replies_decoded_together_are_seeded_and_reproducible(gguf_model):
    assert gguf_model.cadet_batched
    first = gguf_model.cadet_sample(PROMPT, count=3, seed=11, temperature=0.7)
    again = gguf_model.cadet_sample(PROMPT, count=3, seed=11, temperature=0.7)
    assert [r.content for r in first] == [r.content for r in again]
    # one seed is one reply, wherever it is drawn: the second seed alone gives its reply
    alone = gguf_model.cadet_sample(PROMPT, count=1, seed=12, temperature=0.7)
    assert alone[0].content == first[1].content
    for r in first:
        assert r.usage is not None and r.usage["prompt_tokens"] > 0
        assert 0 < r.usage["completion_tokens"] <= gguf_model.max_tokens


def test_the_answer_decoded_with_candidates_is_the_greedy_answer(gguf_model):
    alone = gguf_model.invoke(PROMPT).content
    together = gguf_model.cadet_answer_and_sample(PROMPT, count=2, seed=1, temperature=0.7)
    assert len(together) == 3 and together[0].content == alone
    # the high-level model's prompt cache still holds what the context holds: alone again
    assert gguf_model.invoke(PROMPT).content == alone


def test_each_sequence_ends_at_its_own_end(gguf_model):
    long_prompt = [PROMPT[0], ("human", "Count to one hundred in words, one per line.")]
    replies = gguf_model.cadet_answer_and_sample(long_prompt, count=1, seed=3, temperature=0.7)
    short = gguf_model.cadet_sample(PROMPT, count=1, seed=3, temperature=0.7)
    assert replies[0].usage["completion_tokens"] == gguf_model.max_tokens  # cut at the limit
    assert short[0].usage["completion_tokens"] < gguf_model.max_tokens  # its own end


def test_a_vote_on_the_in_kernel_model(gguf_model):
    con = create_shop()
    try:
        r = ask("How many customers are there?", con=con, model=gguf_model, candidates=3,
                model_timeout=600)  # fmt: skip
    finally:
        con.close()
    drawn = [a for a in r.all_attempts if a.phase == "vote"]
    sql = [a for a in r.all_attempts if a.phase == "sql"]
    assert drawn and r.agreement is not None and r.agreement.of == 1 + len(drawn)
    # the first candidate came with the answer: the vote cost at most one call more
    assert r.model_calls <= len(sql) + 1
