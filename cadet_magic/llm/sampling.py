"""Several sampled replies to one prompt, from any model spec (edge: LangChain's models here).

The agent's vote draws more candidate answers than the first one: the same prompt, sampled at
a temperature above 0 with a seed per candidate (so an evaluation reruns to the same answers
where the server honours seeds). Each kind of model draws them its own cheapest way:

- LangChain chat models with an ``n`` field (OpenAI and OpenAI-compatible servers): one request
  asking for ``n`` replies; a server that ignores ``n`` (llama-cpp-python's) answers with one,
  which is returned alone: this sampler remembers that the server answers one and asks one by
  one from then on, with the following seeds and the same prompt each time (a server caching
  the prompt's prefix reads it once), so a caller asks only for the replies it still needs;
- other LangChain chat models: one request per candidate, with the temperature and the seed
  on a copy of the model where it has such fields;
- our own clients (``llamacpp:``, the browser's) have a ``cadet_sample`` method of their own;
- scripted stand-ins: their next scripted replies (:func:`sampler_for` gives None: the agent
  calls ``invoke`` once per candidate).

Tested against a scripted OpenAI-compatible server in ``tests/test_llm_sampling.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

#: ``sample(messages, count=, seed=, temperature=)``: up to ``count`` reply objects
#: (``.content``, and the usage the agent reads), the i-th sampled with ``seed + i``; fewer
#: when the server answered one reply to a request for several (ask again for the rest).
Sampler = Callable[..., list[Any]]


def sampler_for(model: Any) -> Sampler | None:
    """How to draw several sampled replies from ``model`` (None: the model draws them itself,
    through ``cadet_sample`` or, for a scripted stand-in, its next replies)."""
    from cadet_magic.llm.spec import is_scripted

    if is_scripted(model) or callable(getattr(model, "cadet_sample", None)):
        return None
    fields = getattr(type(model), "model_fields", None)
    if not isinstance(fields, dict) or not callable(getattr(model, "model_copy", None)):
        return None  # not a LangChain chat model: one invoke per candidate
    return LangChainSampler(model, fields)


class LangChainSampler:
    """Sampled replies from a LangChain chat model (see the module's text)."""

    def __init__(self, model: Any, fields: dict[str, Any]) -> None:
        self.model = model
        self.fields = fields
        #: Whether a request may ask for several replies (False once the server gave one).
        self.batch = "n" in fields

    def _copy(self, temperature: float, seed: int, n: int) -> Any:
        update: dict[str, Any] = {}
        if "temperature" in self.fields:
            update["temperature"] = temperature
        if "seed" in self.fields:
            update["seed"] = seed
        if n > 1:
            update["n"] = n
        return self.model.model_copy(update=update)

    def __call__(
        self, messages: Sequence[Any], *, count: int, seed: int, temperature: float
    ) -> list[Any]:
        from langchain_core.messages import convert_to_messages

        prompt = convert_to_messages(list(messages))
        replies: list[Any] = []
        while len(replies) < count:
            n = count - len(replies) if self.batch else 1
            result = self._copy(temperature, seed + len(replies), n).generate([prompt])
            got = [g.message for g in result.generations[0]][:n]
            replies.extend(got)
            if not got:
                break
            if n > 1 and len(got) < n:
                # the server answers one reply a request: what it gave now, and one request
                # per reply from then on, each asked for only when the caller needs it (a
                # vote that is clear after this one draws no more)
                self.batch = False
                break
        return replies
