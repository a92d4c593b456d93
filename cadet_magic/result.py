"""What one question produced: plain dataclasses, standard library only.

Example:
    >>> a = Attempt(number=1, sql="SELECT 1", outcome=Outcome.ok)
    >>> r = AskResult(question="one?", ok=True, sql="SELECT 1", attempts=[a],
    ...               columns=["1"], rows=[(1,)])
    >>> r.ok, len(r.attempts), r.attempts[0].outcome
    (True, 1, <Outcome.ok: 'ok'>)

Results are frozen: each is built once, from the run's final state and its
:class:`~cadet_magic.agent.inputs.RunInputs`; an edge adds what only it has (the DataFrame, the
cost) to a copy made with :func:`dataclasses.replace`. A result knows no display: the display
package (:mod:`cadet_magic.display`) renders it, registered with IPython when the extension
loads (or when ``ask()`` runs in a shell without it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cadet_magic.diagnose.category import Category
from cadet_magic.kinds import Outcome, Phase, StopReason
from cadet_magic.sql.cell import sql_cell
from cadet_magic.vote.answers import Agreement, Competing
from cadet_magic.vote.readings import Reading

__all__ = [
    "AskResult",
    "Attempt",
    "Category",
    "Fallback",
    "Outcome",
    "Phase",
    "StopReason",
    "Tokens",
]

#: Outcomes an attempt can have.
OUTCOMES = tuple(o.value for o in Outcome)


class Tokens(NamedTuple):
    """Tokens one model call used, as its provider reported them: ``input`` (the prompt) and
    ``output`` (the reply); either is None when the provider does not report it.

    A plain pair: ``tokens.input``, ``tokens.output``, or ``input, output = tokens``; it
    serialises to JSON as ``[input, output]``.

    Example:
        >>> t = Tokens(812, 41)
        >>> t.input, t.output, t.total, list(t)
        (812, 41, 853, [812, 41])
        >>> add_tokens([Tokens(10, 2), None, Tokens(5, None)])
        Tokens(input=15, output=2)
        >>> add_tokens([None, None]) is None
        True
    """

    input: int | None
    output: int | None

    @property
    def total(self) -> int | None:
        """Input plus output (None when neither is known)."""
        if self.input is None and self.output is None:
            return None
        return (self.input or 0) + (self.output or 0)


def add_tokens(counts: Any) -> Tokens | None:
    """The sum of several :class:`Tokens` (None entries: calls without usage are skipped); None
    when no call reported any."""
    known = [t for t in counts if t is not None]
    if not known:
        return None

    def total(values: list[int | None]) -> int | None:
        given = [v for v in values if v is not None]
        return sum(given) if given else None

    return Tokens(total([t.input for t in known]), total([t.output for t in known]))


@dataclass(frozen=True)
class Confirmed:
    """An example the user confirmed (kept after choosing a reading) whose result an answer
    reproduces: the day it was kept (``date``, ``YYYY-MM-DD``) and its ``question``."""

    date: str
    question: str


@dataclass(frozen=True)
class Attempt:
    """One try: the SQL the model wrote, what happened to it, and what we told the model.

    Attributes:
        number: 1-based attempt number within its phase (never above the maximum; the
            fallback's attempts count from 1 again).
        sql: the SQL extracted from the reply (None when the reply had none).
        outcome: what happened to it (an :class:`Outcome`).
        category: the diagnosis category of a failure (a :class:`Category`) or None.
        error: the engine's or the safety check's message, or None.
        feedback: the text sent to the model for the next attempt (None when none followed).
        suggestions: real names the diagnosis proposed.
        diff: readable diff of ``sql`` against the previous attempt's.
        timings: seconds spent per step (``generate``, ``check``, ``execute``, ``diagnose``;
            in the fallback also ``check_code`` and ``run_code``).
        reply: the model's raw reply.
        phase: the :class:`Phase` it belongs to.
        code: the fallback's pandas code (fallback attempts only).
        retryable: whether the diagnosis said another attempt could fix the failure.
        running: True for the provisional record of an attempt still in progress (progress
            events carry one; ``outcome`` and ``error`` say what is known so far).
        tokens: the tokens of the attempt's model call (:class:`Tokens`: ``input``,
            ``output``), from the provider's usage report (LangChain's ``usage_metadata``, the
            OpenAI ``usage`` of the browser client and of a ``llamacpp:`` model); None when the
            provider reports none or no call was made.
        model_seconds: seconds spent in the attempt's model call (waiting for its reply);
            None when no call was made.
    """

    number: int
    sql: str | None = None
    outcome: Outcome = Outcome.ok
    category: Category | None = None
    error: str | None = None
    feedback: str | None = None
    suggestions: list[str] = field(default_factory=list)
    diff: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    reply: str = ""
    phase: Phase = Phase.sql
    code: str | None = None
    retryable: bool = True
    running: bool = False
    tokens: Tokens | None = None
    model_seconds: float | None = None

    @property
    def elapsed(self) -> float:
        return sum(self.timings.values())


@dataclass(frozen=True)
class Fallback:
    """The fallback: a simple SELECT plus pandas code, tried when the SQL attempts ran out.

    Attributes:
        sql: the last fallback attempt's SELECT (the one that answered when ``ok``).
        code: the last fallback attempt's pandas code.
        result: the code's answer as a DataFrame when ``ok``, else None.
        ok: whether the fallback answered.
        attempts: its own attempts (``phase="fallback"``, ``.code`` set, numbered from 1).
        reason: why the SQL phase handed over (a :class:`StopReason`: ``max_attempts``, or at
            once ``engine_lacks`` or ``computation_missing``).
    """

    sql: str | None = None
    code: str | None = None
    result: Any = None
    ok: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    reason: StopReason = StopReason.max_attempts


@dataclass(frozen=True)
class AskResult:
    """The outcome of one question.

    Attributes:
        question: the question asked.
        ok: whether an answer came back.
        sql: the SQL that produced the answer (None when none did); the fallback's simple
            SELECT when the fallback answered.
        df: the answer as a pandas DataFrame where pandas exists (else None; see ``rows``);
            when the fallback answered, its result (cut at the row limit, see ``truncated``).
        columns, rows: the answer as plain data.
        truncated: more rows existed than the row limit (or the byte budget) fetched.
        truncation_note: why the answer was cut, for displays (None when it was not).
        attempts: every SQL attempt, in order (the fallback's are in ``fallback.attempts``).
        fallback: the fallback's record, or None when it did not run.
        answered_by: ``"sql"``, ``"fallback"`` or None (a property: displays mark fallback
            answers with it).
        message: a one-paragraph summary for the user when ``ok`` is False.
        stop_reason: why the loop ended (a :class:`StopReason`).
        model: a label for the model; it says "scripted" for scripted stand-ins.
        scripted: True when the model is a scripted stand-in, not a real LLM.
        dialect: the connection's SQL dialect.
        elapsed: seconds for the whole question.
        model_calls: how many times the model was called.
        warnings: what looks wrong with the answer (a filter value that does not occur, an
            empty result), in words every display shows; empty when nothing does.
        tokens: the tokens of every model call of the question (SQL and fallback attempts),
            summed (a property; None when the provider reported none).
        model_seconds: seconds spent waiting for the model, summed over every attempt (a
            property).
        cost: what :attr:`tokens` cost at the price given for the model
            (``AskMagic.prices``, per million tokens), or None without a price.
        provenance: how the answer was produced, a JSON-serialisable dict (question, SQL,
            model, engine, database fingerprint, attempts with categories, time and tokens,
            sharing level, package version; see :mod:`cadet_magic.provenance`); the displays
            write it into the output's metadata under ``"cadet"``.
        prompts: the exact messages sent to the model, one list per model call, each message
            a ``{"role": ..., "content": ...}`` dict (empty when no model was called).
        candidates: the vote's candidate answers besides the first (``phase="vote"``, each one
            model call: the first prompt sampled), in order; empty when no vote was held.
        agreement: how many candidate answers gave this answer, of how many were drawn
            (:class:`~cadet_magic.vote.answers.Agreement`; None when no vote was held).
        competing: the other answers the candidates gave (each a
            :class:`~cadet_magic.vote.answers.Competing`: its SQL, a preview of its rows, its
            votes), most votes first; empty when they all agreed.
        uncertain: whether the vote left the answer in doubt, and the answer carries the
            vote's warning: another answer competed and the answer's lead over it is not clear
            (by the rule the vote stops on), or the answer was found only after a correction
            and no other candidate gave it.
        readings: the ways the candidates read the question when the vote's answer has no
            clear lead (by the rule the vote stops on) and ``AskMagic.ask_readings`` is on: each
            a :class:`~cadet_magic.vote.readings.Reading` (its ``sql``, what it computes in a
            few words, its ``votes`` and a ``preview`` of its rows), the leading one first (the
            answer shown until the user chooses); empty otherwise.
        asks: whether the answer asks the user to choose a reading (:meth:`choose` answers).
        chosen: the reading the user chose (its place in ``readings``), None before a choice.
        notice: one line the answer says besides its rows: that nothing was changed, for a
            question asking to change data (answered read-only:
            :data:`cadet_magic.agent.read_only.READ_ONLY_NOTE`); None otherwise.
        confirmed: the example the user confirmed whose result this answer reproduces
            (:class:`Confirmed`: when, and its question), None when it reproduces none.
    """

    question: str
    ok: bool = False
    sql: str | None = None
    df: Any = None
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    truncated: bool = False
    truncation_note: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    fallback: Fallback | None = None
    message: str | None = None
    stop_reason: StopReason | None = None
    model: str = ""
    scripted: bool = False
    dialect: str | None = None
    connection: str = ""
    elapsed: float = 0.0
    model_calls: int = 0
    warnings: list[str] = field(default_factory=list)
    cost: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    prompts: list[list[dict[str, str]]] = field(default_factory=list)
    candidates: list[Attempt] = field(default_factory=list)
    agreement: Agreement | None = None
    competing: list[Competing] = field(default_factory=list)
    uncertain: bool = False
    readings: tuple[Reading, ...] = ()
    asks: bool = False
    chosen: int | None = None
    confirmed: Confirmed | None = None
    notice: str | None = None

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def all_attempts(self) -> list[Attempt]:
        """The SQL attempts, the vote's candidates, then the fallback's."""
        fallback = self.fallback.attempts if self.fallback is not None else ()
        return [*self.attempts, *self.candidates, *fallback]

    @property
    def tokens(self) -> Tokens | None:
        """Every model call's tokens summed (None when no call reported usage).

        Example:
            >>> r = AskResult("q", attempts=[Attempt(1, tokens=Tokens(100, 9)),
            ...                              Attempt(2, tokens=Tokens(120, 11))])
            >>> r.tokens
            Tokens(input=220, output=20)
        """
        return add_tokens(a.tokens for a in self.all_attempts)

    @property
    def model_seconds(self) -> float:
        """Seconds spent waiting for the model over every attempt."""
        return sum(a.model_seconds or 0.0 for a in self.all_attempts)

    @property
    def answered_by(self) -> str | None:
        """``"fallback"`` when the simple SELECT + pandas answered, ``"sql"`` when SQL did,
        None without an answer."""
        if not self.ok:
            return None
        return "fallback" if self.fallback is not None and self.fallback.ok else "sql"

    @property
    def final_sql(self) -> str | None:
        """The SQL offered for reuse: the answer's SQL, else the fallback's SELECT."""
        if self.sql:
            return self.sql
        if self.fallback is not None and self.fallback.ok and self.fallback.sql:
            return self.fallback.sql
        return None

    def sql_cell(self) -> str | None:
        """Exactly the text the panel's "Insert %%sql cell below" button inserts: a jupysql
        ``%%sql`` cell that runs :attr:`final_sql` as written, never evaluating a template
        expression it contains (see :func:`sql_cell`); None without SQL to offer."""
        final = self.final_sql
        return sql_cell(final) if final else None

    def _recorded_columns(self, picked: Reading) -> tuple[str, ...]:
        """``picked``'s columns as the provenance may keep them at the answer's sharing level:
        below ``samples`` (or when the record does not say), only the names the answer's own
        record already shows (the schema's and those its SQL gave) and the names the reading's
        SQL gives by position; any other, such as a ``PIVOT``'s columns named after stored
        values, as ``(column N)``."""
        from cadet_magic.provenance import shareable_columns
        from cadet_magic.sql.target import Target

        columns = [str(c) for c in picked.columns]
        if self.provenance.get("share") == "samples":
            return tuple(columns)
        shown = (str(c) for c in self.provenance.get("columns", ()))
        known = {c for c in shown if not (c.startswith("(column ") and c.endswith(")"))}
        read = Target.named(self.dialect).dialect
        listed = shareable_columns(columns, None, picked.sql, read, None)
        return tuple(c if c in known else s for c, s in zip(columns, listed, strict=True))

    def choose(self, i: int) -> AskResult:
        """The result with reading ``i`` as its answer (no model call, no query run: the reading
        holds its rows): its SQL, rows and own warnings, the agreement its votes give, the
        other readings as the competing answers, ``chosen`` set, ``asks`` off, and the
        provenance saying which reading the user chose.

        Raises:
            ValueError: the answer has no readings, or ``i`` is not one of them.

        Example:
            >>> from cadet_magic.vote.readings import Reading
            >>> r = AskResult("n?", ok=True, sql="SELECT 1", rows=[(1,)], asks=True,
            ...               agreement=Agreement(3, 5), readings=(
            ...     Reading("SELECT 1", "top 1", 3, ((1,),), ("n",), ((1,),)),
            ...     Reading("SELECT n FROM t", "all rows", 2, ((1,), (2,)), ("n",), ((1,), (2,)))))
            >>> c = r.choose(1)
            >>> c.sql, c.rows, str(c.agreement), c.asks, c.chosen, c.provenance["chosen"]["reading"]
            ('SELECT n FROM t', [(1,), (2,)], '2 of 5', False, 1, 1)
        """
        if not self.readings:
            raise ValueError("This answer has no readings to choose from.")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.readings):
            raise ValueError(
                f"No reading {i!r}: choose one of 0 to {len(self.readings) - 1} "
                f"({len(self.readings)} readings)."
            )
        picked = self.readings[i]
        drawn = (
            self.agreement.of if self.agreement is not None else sum(r.votes for r in self.readings)
        )
        others = [
            Competing(r.sql, r.votes, r.columns, r.preview, r.more)
            for j, r in enumerate(self.readings)
            if j != i
        ]
        chosen = {"reading": i, "summary": picked.summary, "votes": picked.votes}
        provenance = {**self.provenance, "sql": picked.sql, "rows": len(picked.rows),
                      "columns": list(self._recorded_columns(picked)), "chosen": chosen}  # fmt: skip
        result = dataclasses.replace(
            self,
            sql=picked.sql,
            columns=list(picked.columns),
            rows=[tuple(r) for r in picked.rows],
            truncated=picked.truncated,
            truncation_note=self.truncation_note if picked.truncated else None,
            df=None,
            warnings=list(picked.warnings),
            agreement=Agreement(picked.votes, drawn),
            competing=others,
            uncertain=False,
            asks=False,
            chosen=i,
            provenance=provenance,
        )
        # the answer's DataFrame, of the type the result held (none without one: no pandas)
        frame = type(self.df) if self.df is not None and self.ok else None
        from_records = getattr(frame, "from_records", None)
        if from_records is None:
            return result
        return dataclasses.replace(result, df=from_records(result.rows, columns=result.columns))

    def __repr__(self) -> str:
        state = "ok" if self.ok else "failed"
        if self.answered_by == "fallback":
            state = "ok (fallback)"
        return (
            f"<AskResult {state}: {len(self.attempts)} attempt(s), {self.row_count} row(s)"
            f"{' (scripted model)' if self.scripted else ''}>"
        )
