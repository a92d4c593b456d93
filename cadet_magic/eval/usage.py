"""Model calls, tokens and model time per question: :func:`usage_of` is the one place the
harness reads them, from the result's own records (``AskResult.model_calls``, the attempts'
``Attempt.tokens`` and ``Attempt.model_seconds``).

Example:
    >>> from cadet_magic.result import AskResult, Attempt, Tokens
    >>> r = AskResult("q", model_calls=2, attempts=[
    ...     Attempt(1, tokens=Tokens(120, 8), model_seconds=1.5),
    ...     Attempt(2, tokens=Tokens(140, 9), model_seconds=2.0)])
    >>> usage_of(r)
    Usage(calls=2, input_tokens=260, output_tokens=17, model_seconds=3.5)
    >>> usage_of(None)
    Usage(calls=0, input_tokens=None, output_tokens=None, model_seconds=0.0)
"""

from __future__ import annotations

from dataclasses import dataclass

from cadet_magic.result import AskResult


@dataclass(frozen=True)
class Usage:
    """One question's model calls, tokens (None where the provider reported none) and the
    seconds spent waiting for the model."""

    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    model_seconds: float = 0.0


def usage_of(result: AskResult | None) -> Usage:
    """The calls, tokens and model seconds of one question's result (zero without one)."""
    if result is None:
        return Usage(0, None, None, 0.0)
    tokens = result.tokens
    return Usage(
        calls=result.model_calls,
        input_tokens=tokens.input if tokens is not None else None,
        output_tokens=tokens.output if tokens is not None else None,
        model_seconds=round(result.model_seconds, 3),
    )
