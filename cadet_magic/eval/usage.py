"""Model calls and tokens per question.

:func:`usage_of` is the one place the harness reads them: from the attempts' own token
records when the result carries them (``Attempt.tokens``), otherwise from
:class:`CountingModel`, a thin wrapper of the chat model that counts calls and adds up the
provider's ``usage_metadata`` (LangChain's ``input_tokens``/``output_tokens``) of each reply.

Example:
    >>> class Reply:
    ...     content = "SELECT 1"
    ...     usage_metadata = {"input_tokens": 120, "output_tokens": 8, "total_tokens": 128}
    >>> class Model:
    ...     def invoke(self, messages):
    ...         return Reply()
    >>> m = CountingModel(Model())
    >>> _ = m.invoke([("human", "q")]); _ = m.invoke([("human", "q")])
    >>> m.take()
    Usage(calls=2, input_tokens=240, output_tokens=16)
    >>> m.take()
    Usage(calls=0, input_tokens=0, output_tokens=0)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cadet_magic.llm import is_scripted
from cadet_magic.result import AskResult


@dataclass(frozen=True)
class Usage:
    """Model calls and tokens (None where the provider reported none)."""

    calls: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0


def _tokens(usage: Any) -> tuple[int, int] | None:
    """(input, output) from a provider's usage record (a mapping or an object), or None."""
    if usage is None:
        return None
    get = usage.get if isinstance(usage, Mapping) else lambda k: getattr(usage, k, None)
    pairs = (("input_tokens", "output_tokens"), ("input", "output"))
    for a, b in pairs:
        i, o = get(a), get(b)
        if isinstance(i, int) and isinstance(o, int):
            return i, o
    if isinstance(usage, tuple | list) and len(usage) == 2 and all(isinstance(x, int) for x in usage):
        return int(usage[0]), int(usage[1])
    return None


class CountingModel:
    """A chat model that counts its calls and the tokens its provider reports.

    Everything else is the wrapped model's (a scripted model stays labelled scripted).
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self._lock = threading.Lock()
        self._calls = 0
        self._input = 0
        self._output = 0
        self._unreported = 0

    @property
    def cadet_scripted(self) -> bool:
        return is_scripted(self.model)

    @property
    def name(self) -> str:
        return str(getattr(self.model, "name", None) or type(self.model).__name__)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["model"], name)

    def invoke(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        reply = self.model.invoke(messages, *args, **kwargs)
        tokens = _tokens(getattr(reply, "usage_metadata", None))
        with self._lock:
            self._calls += 1
            if tokens is None:
                self._unreported += 1
            else:
                self._input += tokens[0]
                self._output += tokens[1]
        return reply

    def take(self) -> Usage:
        """The calls and tokens since the last ``take()`` (tokens None when a call reported
        none), and starts counting afresh."""
        with self._lock:
            known = self._unreported == 0
            usage = Usage(
                self._calls,
                self._input if known else None,
                self._output if known else None,
            )
            self._calls = self._input = self._output = self._unreported = 0
        return usage


def usage_of(result: AskResult, counted: Usage) -> Usage:
    """One question's calls and tokens: the attempts' own token records when every attempt has
    one, else what the :class:`CountingModel` counted; calls from the result's count."""
    attempts = [*result.attempts, *(result.fallback.attempts if result.fallback else [])]
    own = [_tokens(getattr(a, "tokens", None)) for a in attempts]
    calls = result.model_calls or counted.calls
    if attempts and all(t is not None for t in own):
        return Usage(calls, sum(t[0] for t in own if t), sum(t[1] for t in own if t))
    return Usage(calls, counted.input_tokens, counted.output_tokens)
