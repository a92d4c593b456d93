"""Every option of a question, its default, its help and its range, in one frozen object.

:class:`AskOptions` is the one place an option is declared: the ``%%ask`` magic's
configurable traits and :func:`cadet_magic.ask`'s keywords are generated from its fields, and
:func:`check_option` (run when an :class:`AskOptions` is made, and by the magic when a trait is
set) is the one check of each value. The agent keeps the object whole in its state and reads
it down to each step. Change one with :meth:`AskOptions.replace`, which returns a new, checked
object (the original is never changed).

Standard library only (the portable core reads it).

Example:
    >>> o = AskOptions()
    >>> o.max_attempts, o.row_limit, o.timeout, o.schema_budget
    (3, 1000, 30.0, 6000)
    >>> o.replace(row_limit=10).row_limit, o.row_limit
    (10, 1000)
    >>> o.replace(row_limit=0)
    Traceback (most recent call last):
    ...
    cadet_magic.errors.ConfigurationError: row_limit must be above 0 (got 0), e.g. %config AskMagic.row_limit = 1000.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cadet_magic.errors import ConfigurationError
from cadet_magic.prices import PRICES_EXAMPLE, check_prices  # noqa: F401 - importable here

#: Bytes of result values fetched at most by default (64 MiB).
RESULT_BYTES = 64 * 2**20
#: Seconds all the result check's queries of one run may take together.
CHECK_BUDGET = 0.2

#: The range ``max_attempts`` must lie in.
MAX_ATTEMPTS_RANGE = (1, 10)

#: The range ``candidates`` must lie in.
CANDIDATES_RANGE = (1, 10)

#: What a retry may tell the model (:attr:`AskOptions.feedback`).
FEEDBACK_MODES = ("targeted", "raw")

#: What of the database the model may see (:attr:`AskOptions.share`), least first.
SHARE_LEVELS = ("schema", "stats", "samples")

#: Candidate answers at most by default (measured: docs/benchmarks-history.md, "the vote's settings": on the
#: tuning set the vote at most 5 gained the most within the time allowed).
CANDIDATES_DEFAULT = 5

#: Where kept answers are stored by default, relative to the notebook's folder.
EXAMPLES_PATH = ".cadet/examples.jsonl"


def option(
    default: Any,
    help: str,
    *,
    kind: type = object,
    check: str | None = None,
    nullable: bool = False,
    secret: bool = False,
) -> Any:
    """A field of :class:`AskOptions` with what the magic and the check need to know of it:
    ``help`` (the trait's help), ``kind`` (``int``, ``float``, ``bool``, ``str``, ``dict``,
    ``tuple`` of names; ``object``
    for an option the magic does not configure as such), ``check`` (``"positive"``,
    ``"attempts"``, ``"candidates"``, ``"temperature"``, ``"feedback"``, ``"share"``, ``"prices"``
    or ``"functions"``), ``nullable`` (None
    allowed) and ``secret`` (never shown)."""
    meta = {"help": help, "kind": kind, "check": check, "nullable": nullable, "secret": secret}
    return dataclasses.field(default=default, metadata=meta, repr=not secret)


@dataclass(frozen=True)
class AskOptions:
    """The options of one question (each documented once, here, in its ``help``).

    Attributes:
        model: a chat model, an ``init_chat_model`` spec such as ``"openai:gpt-4o-mini"``,
            ``"scripted:PATH"``, a notebook variable name, or None for ``CADET_MODEL``.
        max_attempts: SQL attempts at most (each retry gets targeted feedback); 1 to 10.
        candidates: answers at most that vote on the answer, the first one included (1: no
            vote); more are sampled only while the agreement is not clear; 1 to 10.
        row_limit: rows fetched at most; ``result.truncated`` says whether more existed.
        result_bytes: bytes of values fetched at most (64 MiB); past it the answer is cut.
        timeout: seconds a query (and the fallback's pandas code) may run.
        check_budget: seconds the result check's queries of one run may take together (None:
            no total limit; each check query still stops at ``timeout``).
        model_timeout: seconds each model call may take (None: no limit of ours); a model that
            runs in this process (``local``, ``llamacpp:``) is waited for.
        fallback: whether to fall back to a simple SELECT plus pandas when SQL keeps failing.
        fallback_row_limit: rows the fallback's SELECT may fetch.
        fallback_memory: bytes the fallback's pandas code may allocate in its worker (2 GiB).
        fallback_unconfined: run the fallback's code even where the confinement it needs is
            not available (a Linux kernel without Landlock, macOS, Windows); off by default,
            so there the fallback's code does not run and the answer says so.
        schema_budget: characters of schema in the prompt (None: the whole schema).
        live: whether the magic shows the live attempts panel where widgets work.
        ask_readings: when the vote's answer has no clear lead, the answer names the readings
            (``AskResult.readings``) and asks the user to choose one (``AskResult.asks``); off
            (batch use, callers who never choose) the leading answer comes with the vote's
            warning only.
        api_key, base_url: for a model given by spec (default: the provider's environment
            variables); ``base_url`` names any OpenAI-compatible server.
        temperature: the sampling temperature a model given by spec is loaded with (None: the
            provider's default; 0 makes replies repeatable).
        prices: price per million tokens by model, ``{model: (input, output)}``: the result's
            ``cost`` is what its reported tokens cost (None: no cost).
        feedback: what a retry tells the model: ``"targeted"`` (the diagnosis: the error, its
            cause and the fix, real names, JOIN paths) or ``"raw"`` (only the error text the
            attempt failed with, the common baseline the evaluation compares against).
        share: what of the database the model sees: ``"schema"`` (names, types, keys),
            ``"stats"`` (plus row counts and value ranges) or ``"samples"`` (plus sample
            values); below ``samples`` an engine error's text is cut to its category.
        rerun: re-execute each question's recorded SQL (the notebook's record) instead of
            calling the model (``CADET_RERUN=1`` sets it); no model call is made.
        examples_path: the JSON-lines file of kept answers (``%cadet keep``), relative to
            the notebook's folder; None: no kept examples in the prompt.
        allow_functions: names of functions the database itself defines (macros, functions
            of its own schemas, functions registered on the connection) that queries may call;
            none by default (they are code that came with the database, not the engine's).
    """

    model: Any = option(
        None,
        "Default model: an init_chat_model spec ('openai:gpt-4o-mini'), 'local' (the model "
        "python -m cadet_magic.local install installs), 'scripted:PATH', or a notebook variable "
        "name. Falls back to the CADET_MODEL environment variable, then to the local model when "
        "it is installed.",
        kind=str,
        nullable=True,
    )
    max_attempts: int = option(3, "SQL attempts at most per question.", kind=int, check="attempts")
    candidates: int | None = option(
        None,
        "Candidate answers at most that vote on the answer, the first included (1: no vote); "
        "more are drawn only while they disagree. None: "
        f"{CANDIDATES_DEFAULT} with a model that samples, 1 with a scripted stand-in (its "
        "replies are a script, not samples) and in JupyterLite (not measured there).",
        kind=int,
        check="candidates",
        nullable=True,
    )
    row_limit: int = option(1000, "Rows fetched at most per answer.", kind=int, check="positive")
    result_bytes: int = option(
        RESULT_BYTES,
        "Bytes of values fetched at most per answer (64 MiB).",
        kind=int,
        check="positive",
    )
    timeout: float = option(
        30.0, "Seconds a query may run before it is cancelled.", kind=float, check="positive"
    )
    check_budget: float | None = option(
        CHECK_BUDGET,
        "Seconds the result check's queries of one answer may take together (None: no total "
        "limit; each check query still stops at the query timeout).",
        kind=float,
        check="positive",
        nullable=True,
    )
    model_timeout: float | None = option(
        120.0,
        "Seconds each model call may take before it is abandoned (a model running in the kernel, "
        "local or llamacpp:, is waited for: its calls always end).",
        kind=float,
        check="positive",
        nullable=True,
    )
    fallback: bool = option(True, "Fall back to a simple SELECT plus pandas.", kind=bool)
    fallback_row_limit: int = option(
        100_000, "Rows the fallback's simple SELECT may fetch.", kind=int, check="positive"
    )
    fallback_memory: int = option(
        2 << 30,
        "Bytes the fallback's pandas code may allocate in its isolated worker (2 GiB).",
        kind=int,
        check="positive",
    )
    fallback_unconfined: bool = option(
        False,
        "Run the fallback's pandas code even where it cannot be confined (no Landlock, "
        "macOS, Windows): off by default.",
        kind=bool,
    )
    schema_budget: int | None = option(
        6000,
        "Characters of schema context in the prompt.",
        kind=int,
        check="positive",
        nullable=True,
    )
    live: bool = option(True, "Show the live attempts panel where widgets work.", kind=bool)
    ask_readings: bool = option(
        True,
        "When the candidate answers disagree without a clear lead, name the readings (what each "
        "computes, its rows, its votes) and ask which was meant; off: answer with the leading "
        "one and the vote's warning only.",
        kind=bool,
    )
    api_key: str | None = option(
        None,
        "API key for a model given by spec (default: the provider's environment variable, "
        "e.g. OPENAI_API_KEY). Set it in the session; never store it in the notebook.",
        kind=str,
        nullable=True,
        secret=True,
    )
    base_url: str | None = option(
        None,
        "Base URL of an OpenAI-compatible server (…/v1) for a model given by spec "
        "(default: the provider's own, or OPENAI_BASE_URL / OLLAMA_HOST).",
        kind=str,
        nullable=True,
    )
    temperature: float | None = option(
        None,
        "Sampling temperature of a model given by spec, 0 to 2 (default: the provider's; 0 "
        "makes replies repeatable).",
        kind=float,
        check="temperature",
        nullable=True,
    )
    feedback: str = option(
        "targeted",
        "What a retry tells the model: 'targeted' (the diagnosis: error, cause, fix, real "
        "names, JOIN paths) or 'raw' (only the error text, the evaluation's baseline).",
        kind=str,
        check="feedback",
    )
    prices: Mapping[str, Any] | None = option(
        None,
        "Price per million tokens by model, (input, output), e.g. "
        '{"openai:gpt-4o-mini": (0.15, 0.60)}: the panel and %cadet stats show the cost of '
        "the tokens the provider reported.",
        kind=dict,
        check="prices",
        nullable=True,
    )

    share: str = option(
        "samples",
        "What of the database the model sees: 'schema' (names, types, keys), 'stats' (plus "
        "row counts and value ranges) or 'samples' (plus sample values).",
        kind=str,
        check="share",
    )
    rerun: bool = option(
        False,
        "Re-execute each %%ask cell's recorded SQL instead of calling the model (also "
        "CADET_RERUN=1): a notebook rerun makes no model call.",
        kind=bool,
    )
    examples_path: str | None = option(
        EXAMPLES_PATH,
        "JSON-lines file of kept answers (%cadet keep), relative to the notebook's folder; "
        "the most similar ones go into the prompt as examples.",
        kind=str,
        nullable=True,
    )
    allow_functions: tuple[str, ...] = option(
        (),
        "Functions the database itself defines (a DuckDB file's macros, a PostgreSQL function "
        "of its own schemas, a function registered on the connection) that queries may call, "
        "by name, e.g. ['fiscal_year']. None by default: such a function is code that came "
        "with the database, not the engine's own.",
        kind=tuple,
        check="functions",
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check_option(f.name, getattr(self, f.name))
            object.__setattr__(self, f.name, _normal(f, getattr(self, f.name)))

    def replace(self, **changes: Any) -> AskOptions:
        """A checked copy with ``changes`` applied (unknown names raise ``TypeError``).

        Example:
            >>> AskOptions().replace(fallback=False).fallback
            False
        """
        unknown = [k for k in changes if k not in self.names()]
        if unknown:
            return dataclasses.replace(self, **changes)  # the dataclass's own TypeError
        for name, value in changes.items():
            check_option(name, value)
        new = copy.copy(self)  # the fields not changed were checked when ``self`` was made
        for name, value in changes.items():
            object.__setattr__(new, name, _normal(_field(name), value))
        return new

    def check(self) -> AskOptions:
        """The options themselves: every :class:`AskOptions` is checked when it is made.

        Example:
            >>> AskOptions(max_attempts=2).check().max_attempts
            2
        """
        return self

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in order.

        Example:
            >>> AskOptions.names()[:3]
            ('model', 'max_attempts', 'candidates')
        """
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def fields(cls) -> tuple[dataclasses.Field, ...]:
        """The option fields, each with its ``metadata`` (help, kind, check, nullable, secret).

        Example:
            >>> f = AskOptions.fields()[3]
            >>> f.name, f.default, f.metadata["kind"].__name__, f.metadata["check"]
            ('row_limit', 1000, 'int', 'positive')
        """
        return dataclasses.fields(cls)


def _field(name: str) -> dataclasses.Field | None:
    return next((f for f in dataclasses.fields(AskOptions) if f.name == name), None)


def _normal(f: dataclasses.Field | None, value: Any) -> Any:
    """A value as the option holds it: a ``tuple`` option's names as a tuple of strings."""
    if f is not None and f.metadata.get("kind") is tuple and value is not None:
        return (value,) if isinstance(value, str) else tuple(value)
    return value


def check_option(name: str, value: Any) -> None:
    """Raises :class:`ConfigurationError` (one line saying what to do) for a value an option
    cannot take: ``max_attempts`` outside 1..10; a positive option (``row_limit``,
    ``timeout`` ...) zero, negative or not a number; ``temperature`` outside 0..2;
    ``feedback`` not one of :data:`FEEDBACK_MODES`; None where the option does not allow it
    (``model_timeout``, ``schema_budget`` and ``temperature`` do: no limit, the default).

    Example:
        >>> check_option("row_limit", 10)
        >>> check_option("max_attempts", 0)
        Traceback (most recent call last):
        ...
        cadet_magic.errors.ConfigurationError: max_attempts must be a whole number from 1 to 10 (got 0), e.g. --max-attempts 3.
    """
    f = _field(name)
    meta = f.metadata if f is not None else {}
    rule = meta.get("check")
    if rule is None or (value is None and meta.get("nullable")):
        return
    if rule == "prices":
        check_prices(value)
        return
    if rule == "functions":
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list | tuple) or not all(
            isinstance(n, str) and n.strip() for n in names
        ):
            raise ConfigurationError(
                f"allow_functions must be a list of function names (got {value!r}), e.g. "
                "%config AskMagic.allow_functions = ['fiscal_year']."
            )
        return
    if rule == "share":
        if value not in SHARE_LEVELS:
            raise ConfigurationError(
                f"share must be one of {', '.join(SHARE_LEVELS)} (got {value!r}), e.g. "
                "%config AskMagic.share = 'schema'."
            )
        return
    if rule == "feedback":
        if value not in FEEDBACK_MODES:
            raise ConfigurationError(
                f"feedback must be one of {', '.join(FEEDBACK_MODES)} (got {value!r})."
            )
        return
    if rule == "temperature":
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not 0 <= value <= 2:
            raise ConfigurationError(
                f"temperature must be from 0 to 2 (got {value!r}), e.g. temperature=0."
            )
        return
    if rule in ("attempts", "candidates"):
        low, high = MAX_ATTEMPTS_RANGE if rule == "attempts" else CANDIDATES_RANGE
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            flag = name.replace("_", "-")
            raise ConfigurationError(
                f"{name} must be a whole number from {low} to {high} (got {value!r}), "
                f"e.g. --{flag} {f.default if f is not None else 3}."
            )
        return
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or value != value or value <= 0:
        example = f.default if f is not None and f.default is not None else 1
        if isinstance(example, float) and example.is_integer():
            example = int(example)
        raise ConfigurationError(
            f"{name} must be above 0 (got {value!r}), e.g. %config AskMagic.{name} = {example}."
        )


def check_options(**options: Any) -> None:
    """:func:`check_option` for each of ``options``.

    Example:
        >>> check_options(max_attempts=3, row_limit=10, timeout=1.5)
    """
    for name, value in options.items():
        check_option(name, value)


def merged(options: AskOptions | None, **changes: Any) -> AskOptions:
    """``options`` (default: the defaults) with ``changes`` applied, skipping the values that
    are :data:`UNSET` (an option keyword that was not given); an unknown name is a
    ``TypeError``, as for any keyword a function does not take.

    Example:
        >>> merged(None, row_limit=5, timeout=UNSET).row_limit
        5
        >>> merged(None, row_limt=5)
        Traceback (most recent call last):
        ...
        TypeError: unexpected option 'row_limt'; the options are: model, max_attempts, candidates, row_limit, result_bytes, timeout, check_budget, model_timeout, fallback, fallback_row_limit, fallback_memory, fallback_unconfined, schema_budget, live, ask_readings, api_key, base_url, temperature, feedback, prices, share, rerun, examples_path, allow_functions
    """
    given = {k: v for k, v in changes.items() if v is not UNSET}
    unknown = [k for k in given if k not in AskOptions.names()]
    if unknown:
        raise TypeError(
            f"unexpected option {unknown[0]!r}; the options are: {', '.join(AskOptions.names())}"
        )
    return (options or DEFAULTS).replace(**given)


class _Unset:
    """The default of an option keyword: "take it from the options object"."""

    def __repr__(self) -> str:
        return "<from options>"


#: Marks an option keyword that was not given.
UNSET: Any = _Unset()

#: The defaults, for code that needs one value (``DEFAULTS.row_limit``).
DEFAULTS = AskOptions()
