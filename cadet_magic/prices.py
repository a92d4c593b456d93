"""The price table of the ``prices`` option: model -> (input, output) price per million
tokens, checked into one shape (stdlib only; the option's check and the session's cost figures
in :mod:`cadet_magic.metrics` read it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cadet_magic.errors import ConfigurationError

#: How a price table is written: model -> (input, output) per million tokens.
PRICES_EXAMPLE = '%config AskMagic.prices = {"openai:gpt-4o-mini": (0.15, 0.60)}'


def check_prices(prices: Any) -> dict[str, tuple[float, float]]:
    """A price table as ``{model: (input, output)}`` per million tokens, or one clear
    :class:`ConfigurationError` line. A price is a pair of numbers, or a mapping with
    ``input`` and ``output``.

    Example:
        >>> check_prices({"openai:gpt-4o-mini": [0.15, 0.6], "qwen": {"input": 0, "output": 0}})
        {'openai:gpt-4o-mini': (0.15, 0.6), 'qwen': (0.0, 0.0)}
        >>> check_prices({"gpt-4o": 2.5})
        Traceback (most recent call last):
        ...
        cadet_magic.errors.ConfigurationError: AskMagic.prices['gpt-4o'] must be (input, output) per million tokens, two numbers of 0 or more (got 2.5), e.g. %config AskMagic.prices = {"openai:gpt-4o-mini": (0.15, 0.60)}.
    """
    if not isinstance(prices, Mapping):
        raise ConfigurationError(
            f"AskMagic.prices must map a model to (input, output) per million tokens (got "
            f"{type(prices).__name__}), e.g. {PRICES_EXAMPLE}."
        )
    table = {}
    for model, price in prices.items():
        pair = (price.get("input"), price.get("output")) if isinstance(price, Mapping) else price
        numbers = (
            isinstance(pair, list | tuple)
            and len(pair) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in pair)
        )
        if not isinstance(model, str) or not numbers:
            raise ConfigurationError(
                f"AskMagic.prices[{model!r}] must be (input, output) per million tokens, two "
                f"numbers of 0 or more (got {price!r}), e.g. {PRICES_EXAMPLE}."
            )
        assert isinstance(pair, list | tuple)  # checked above
        table[model] = (float(pair[0]), float(pair[1]))
    return table
