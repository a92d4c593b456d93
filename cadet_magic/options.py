"""Every option of a question, and its default, in one frozen object.

The magic builds an :class:`AskOptions` from its configuration and flags, :func:`cadet_magic.ask`
from its keyword arguments; the agent reads the same object down to each node. Change one with
:meth:`AskOptions.replace`, which returns a new object (the original is never changed).

Standard library only (the portable core reads it).

Example:
    >>> o = AskOptions()
    >>> o.max_attempts, o.row_limit, o.timeout, o.schema_budget
    (3, 1000, 30.0, 6000)
    >>> o.replace(row_limit=10).row_limit, o.row_limit
    (10, 1000)
    >>> o.replace(row_limit=0).check()
    Traceback (most recent call last):
    ...
    cadet_magic.errors.ConfigurationError: row_limit must be above 0 (got 0), e.g. %config AskMagic.row_limit = 1000.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.errors import ConfigurationError

#: Bytes of result values fetched at most by default (64 MiB).
RESULT_BYTES = 64 * 2**20

#: The range ``max_attempts`` must lie in.
MAX_ATTEMPTS_RANGE = (1, 10)

#: What a retry may tell the model (:attr:`AskOptions.feedback`).
FEEDBACK_MODES = ("targeted", "raw")


@dataclass(frozen=True)
class AskOptions:
    """The options of one question (each documented once, here).

    Attributes:
        model: a chat model, an ``init_chat_model`` spec such as ``"openai:gpt-4o-mini"``,
            ``"scripted:PATH"``, a notebook variable name, or None for ``CADET_MODEL``.
        max_attempts: SQL attempts at most (each retry gets targeted feedback); 1 to 10.
        row_limit: rows fetched at most; ``result.truncated`` says whether more existed.
        result_bytes: bytes of values fetched at most (64 MiB); past it the answer is cut.
        timeout: seconds a query (and the fallback's pandas code) may run.
        model_timeout: seconds each model call may take (None: no limit of ours).
        fallback: whether to fall back to a simple SELECT plus pandas when SQL keeps failing.
        fallback_row_limit: rows the fallback's SELECT may fetch.
        fallback_memory: bytes the fallback's pandas code may allocate in its worker (2 GiB).
        fallback_unconfined: run the fallback's code even where the confinement it needs is
            not available (a Linux kernel without Landlock, macOS, Windows); off by default,
            so there the fallback's code does not run and the answer says so.
        schema_budget: characters of schema in the prompt (None: the whole schema).
        live: whether the magic shows the live attempts panel where widgets work.
        api_key, base_url: for a model given by spec (default: the provider's environment
            variables); ``base_url`` names any OpenAI-compatible server.
        temperature: the sampling temperature a model given by spec is loaded with (None: the
            provider's default; 0 makes replies repeatable).
        feedback: what a retry tells the model: ``"targeted"`` (the diagnosis: the error, its
            cause and the fix, real names, JOIN paths) or ``"raw"`` (only the error text the
            attempt failed with, the common baseline the evaluation compares against).
    """

    model: Any = None
    max_attempts: int = 3
    row_limit: int = 1000
    result_bytes: int = RESULT_BYTES
    timeout: float = 30.0
    model_timeout: float | None = 120.0
    fallback: bool = True
    fallback_row_limit: int = 100_000
    fallback_memory: int = 2 << 30
    fallback_unconfined: bool = False
    schema_budget: int | None = 6000
    live: bool = True
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    temperature: float | None = None
    feedback: str = "targeted"

    def replace(self, **changes: Any) -> AskOptions:
        """A copy with ``changes`` applied (unknown names raise ``TypeError``).

        Example:
            >>> AskOptions().replace(fallback=False).fallback
            False
        """
        return dataclasses.replace(self, **changes)

    def check(self) -> AskOptions:
        """Raises :class:`ConfigurationError` (one line saying what to do) for an option out of
        range, else returns the options; see :func:`check_options`.

        Example:
            >>> AskOptions(max_attempts=2).check().max_attempts
            2
        """
        check_options(
            max_attempts=self.max_attempts,
            row_limit=self.row_limit,
            timeout=self.timeout,
            model_timeout=self.model_timeout,
            schema_budget=self.schema_budget,
            temperature=self.temperature,
            feedback=self.feedback,
        )
        return self

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in order.

        Example:
            >>> AskOptions.names()[:3]
            ('model', 'max_attempts', 'row_limit')
        """
        return tuple(f.name for f in dataclasses.fields(cls))


#: The defaults, for code that needs one value (``DEFAULTS.row_limit``).
DEFAULTS = AskOptions()


def check_options(**options: Any) -> None:
    """Raises :class:`ConfigurationError` (one line saying what to do) for an option out of range:
    ``max_attempts`` outside 1..10; ``row_limit``, ``timeout``, ``model_timeout`` or
    ``schema_budget`` zero or negative (None is allowed for the last two); ``temperature``
    outside 0..2 (None allowed); ``feedback`` not one of :data:`FEEDBACK_MODES`.

    Example:
        >>> check_options(max_attempts=3, row_limit=10, timeout=1.5)
        >>> check_options(max_attempts=0)
        Traceback (most recent call last):
        ...
        cadet_magic.errors.ConfigurationError: max_attempts must be a whole number from 1 to 10 (got 0), e.g. --max-attempts 3.
    """
    low, high = MAX_ATTEMPTS_RANGE
    for name, value in options.items():
        if value is None and name in ("model_timeout", "schema_budget", "temperature"):
            continue
        if name == "feedback":
            if value not in FEEDBACK_MODES:
                raise ConfigurationError(
                    f"feedback must be one of {', '.join(FEEDBACK_MODES)} (got {value!r})."
                )
            continue
        if name == "temperature":
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not 0 <= value <= 2:
                raise ConfigurationError(
                    f"temperature must be from 0 to 2 (got {value!r}), e.g. temperature=0."
                )
            continue
        if name == "max_attempts":
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigurationError(
                    f"max_attempts must be a whole number from {low} to {high} (got {value!r}), "
                    f"e.g. --max-attempts {DEFAULTS.max_attempts}."
                )
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or value != value or value <= 0:
            example = getattr(DEFAULTS, name, None)
            example = 1 if example is None else example
            if isinstance(example, float) and example.is_integer():
                example = int(example)
            raise ConfigurationError(
                f"{name} must be above 0 (got {value!r}), e.g. %config AskMagic.{name} = {example}."
            )
