"""Several sampled replies to one prompt, from any model spec (edge: LangChain's models here).

The agent's vote draws more candidate answers than the first one: the same prompt, sampled at
a temperature above 0 with a seed per candidate (so an evaluation reruns to the same answers
where the server honours seeds). Each kind of model draws them its own cheapest way:

- LangChain chat models with an ``n`` field (OpenAI and OpenAI-compatible servers): one request
  asking for ``n`` replies; a server that ignores ``n`` (llama-cpp-python's) answers with one,
  which is returned alone: this sampler remembers that the server answers one and asks one by
  one from then on, with the following seeds and the same prompt each time (a server caching
  the prompt's prefix reads it once), so a caller asks only for the replies it still needs.
  A sampler made with ``parallel=None`` sends the rest of such a round's requests side by side
  instead (a server with parallel slots answers them together) until it sees them answered one
  after the other (the last waits for all the others); off by default (:class:`LangChainSampler`);
- other LangChain chat models: one request per candidate, with the temperature and the seed
  on a copy of the model where it has such fields;
- our own clients (``llamacpp:``, the browser's) have a ``cadet_sample`` method of their own;
- scripted stand-ins: their next scripted replies (:func:`sampler_for` gives None: the agent
  calls ``invoke`` once per candidate).

Tested against a scripted OpenAI-compatible server in ``tests/test_llm_sampling.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

#: Seconds by which the last of requests sent together must come back after the first, and
#: 1.5 times as late, for the server to count as answering one request at a time.
SERIAL_WAIT = 0.5

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

    def __init__(self, model: Any, fields: dict[str, Any], parallel: bool | None = False) -> None:
        self.model = model
        self.fields = fields
        #: Whether a request may ask for several replies (False once the server gave one).
        self.batch = "n" in fields
        #: Whether the server answers requests side by side (None: not seen yet, so try; False:
        #: one request at a time, the default, and once requests sent together came back one
        #: after the other). Off by default: llama-cpp-python's server, the one this project
        #: serves its model with, answers one request at a time, and a round sent side by side
        #: there costs every candidate of the round where the vote may have stopped at the first.
        self.parallel = parallel

    @property
    def together(self) -> bool:
        """Whether several replies cost about one request's time here (one request for
        several, or requests answered side by side)."""
        return self.batch or self.parallel is not False

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
        if self.batch:
            n = count
            result = self._copy(temperature, seed, n).generate([prompt])
            replies = [g.message for g in result.generations[0]][:n]
            if not replies or len(replies) >= n:
                return replies
            self.batch = False  # the server answers one reply a request
            if self.parallel is False:
                # and one request at a time: what it gave now, the rest asked for only when
                # the caller needs them (a vote that is clear after this one draws no more)
                return replies
        jobs = [
            functools.partial(self._one, prompt, temperature, seed + k)
            for k in range(len(replies), count)
        ]
        return replies + [reply for reply, _ in self._side_by_side(jobs)]

    def _one(self, prompt: Any, temperature: float, seed: int) -> Any:
        result = self._copy(temperature, seed, 1).generate([prompt])
        return result.generations[0][0].message

    def _side_by_side(self, jobs: Sequence[Callable[[], Any]]) -> list[tuple[Any, float]]:
        """Each job's result and seconds, run together while the server is not known to
        answer one at a time (else one after the other). Requests it answers one after the
        other show as ever longer waits: the last one waits for all the others."""
        import concurrent.futures
        import time

        def timed(job: Callable[[], Any]) -> tuple[Any, float]:
            t0 = time.perf_counter()
            return job(), time.perf_counter() - t0

        if len(jobs) < 2 or self.parallel is False:
            return [timed(job) for job in jobs]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            done = list(pool.map(timed, jobs))
        seconds = [s for _, s in done]
        waited = max(seconds) - min(seconds)
        self.parallel = not (waited > SERIAL_WAIT and max(seconds) >= 1.5 * min(seconds))
        return done
