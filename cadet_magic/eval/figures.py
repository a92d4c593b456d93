"""The figures of one feedback mode, counted from its results lines (the Markdown summary in
:mod:`cadet_magic.eval.report` and the chart in :mod:`cadet_magic.eval.chart` show them).

Figures (questions that could not run are counted apart, never as wrong):

- execution accuracy of the first attempt, after self-correction (the SQL phase's answer),
  after the vote (the answer most candidates gave; the same when no vote was held) and with the
  fallback (the answer the user got), each with its 95% Wilson interval;
- the gains (after correction − first; after the vote − after correction; with fallback −
  after the vote) with a 95% paired
  bootstrap interval, the questions gained and lost, and McNemar's exact p-value; between
  modes, the same on the questions both ran;
- where answers are lost: first attempts that ran but were wrong (nothing for the loop to
  see), failures by the first attempt's category and what became of them, answers that were
  right at first and wrong in the end, answers with warnings and how many were wrong (the
  shares of wrong and of right answers that carry one), answers the candidates disagreed on;
- readings: the questions whose answer asked the user to choose a reading (``asks``), right
  without choosing (the leading reading as the answer: the final accuracy) and right after
  choosing (:func:`right_after_choosing`: the reading whose result is the gold query's, as a
  user who knows what was meant chooses it), wrong answers that carry neither a warning nor a
  question (:func:`silent_wrong`, of all questions run), right answers that carry a warning or
  ask;
- calls, tokens and seconds per question (median, p90).

Example:
    >>> rec = lambda first, final, fb=False, cat=None: {
    ...     "first_match": first, "final_match": final, "fallback": fb, "final_sql": "SELECT 1",
    ...     "attempts": [{"category": cat, "outcome": "ok" if cat is None else "error"}],
    ...     "warnings": [], "calls": 1, "input_tokens": 100, "output_tokens": 9, "seconds": 2.0,
    ...     "error": None}
    >>> f = figures([rec(True, True), rec(False, True, cat="column_not_found"), rec(False, False)])
    >>> f.n, f.first.k, f.corrected.k, f.final.k, f.ran_wrong
    (3, 1, 2, 2, 1)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from cadet_magic.eval.significance import Gain, gain, percentile, wilson

#: The three accuracies, in order, with their labels.
LEVELS = (
    ("first", "first attempt"),
    ("corrected", "after self-correction"),
    ("voted", "after the vote"),
    ("final", "with the fallback"),
)
#: How a first attempt that ran but was wrong is named in the category table.
RAN_WRONG = "ran, wrong answer"


@dataclass(frozen=True)
class Accuracy:
    k: int
    n: int

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    def text(self) -> str:
        """E.g. ``45.0% [39.5–50.6] (135/300)``."""
        if not self.n:
            return "–"
        lo, hi = self.interval
        return f"{100 * self.rate:.1f}% [{100 * lo:.1f}–{100 * hi:.1f}] ({self.k}/{self.n})"


@dataclass
class Figures:
    """One mode's figures (see the module's description)."""

    n: int
    errors: Counter
    first: Accuracy
    corrected: Accuracy
    voted: Accuracy
    final: Accuracy
    correction_gain: Gain
    vote_gain: Gain
    fallback_gain: Gain
    answered: int
    warned: int
    warned_wrong: int
    ran_wrong: int
    made_worse: int
    #: Answers given that were wrong (the warnings' share of them, and of the right ones).
    answered_wrong: int = 0
    #: Answers voted on, those the candidates did not all give, and how many were wrong.
    voted_on: int = 0
    uncertain: int = 0
    uncertain_wrong: int = 0
    #: Readings: answers that asked the user to choose, questions right after choosing,
    #: wrong answers with neither a warning nor a question, right answers warning or asking.
    asked: int = 0
    after_choosing: Accuracy = Accuracy(0, 0)
    silent_wrong: int = 0
    right_flagged: int = 0
    #: Why the runs that ended with a wrong answer stopped (``stop_reason``), by count.
    wrong_stops: Counter = field(default_factory=Counter)
    by_category: dict[str, Counter] = field(default_factory=dict)
    #: How the fallback ended, by count, on the lines that record its attempts.
    fallback_ends: Counter = field(default_factory=Counter)
    cost: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)


def valid(records: Sequence[dict]) -> list[dict]:
    """The lines of questions that ran (no ``error``)."""
    return [r for r in records if not r.get("error")]


def corrected(r: dict) -> bool:
    """Right after self-correction: the SQL phase answered right, before any vote (no
    fallback ran)."""
    if r.get("sql_match") is not None:
        return bool(r["sql_match"]) and not r.get("fallback")
    return voted(r)


def voted(r: dict) -> bool:
    """Right after the vote (the SQL phase's answer when no vote was held; no fallback ran)."""
    return bool(r.get("final_match")) and not r.get("fallback")


def uncertain(r: dict) -> bool:
    """The candidates drawn did not all give the answer (another answer, or none): the
    report's "candidates disagreed" row, wider than ``AskResult.uncertain`` (the answer carries
    the vote's warning), which a results line keeps as ``uncertain``."""
    a = r.get("agreement")
    return a is not None and a[0] < a[1]


def asks(r: dict) -> bool:
    """Whether the answer asked the user to choose a reading."""
    return bool(r.get("asks")) and r.get("final_sql") is not None


def right_after_choosing(r: dict) -> bool:
    """Right once the user chose: the answer when it did not ask, else whether one of its
    readings' results is the gold query's (a user who knows what was meant chooses it).

    >>> right_after_choosing({"final_match": False, "final_sql": "x", "asks": True,
    ...                       "readings": [{"match": False}, {"match": True}]})
    True
    """
    if asks(r):
        return any(bool(x.get("match")) for x in r.get("readings") or ())
    return bool(r.get("final_match"))


def silent_wrong(r: dict) -> bool:
    """An answer given, wrong, carrying neither a warning nor a question: wrong and looking
    right."""
    answered = r.get("final_sql") is not None
    return answered and not r.get("final_match") and not r.get("warnings") and not asks(r)


def _first_kind(r: dict) -> str:
    attempts = r.get("attempts") or []
    if not attempts:
        return "no attempt"
    first = attempts[0]
    if first.get("outcome") == "ok":
        return RAN_WRONG
    return str(first.get("category") or first.get("outcome") or "unknown")


def fallback_end(r: dict) -> str | None:
    """How the fallback ended on one results line (None: it did not run, or the line predates
    ``fallback_attempts``): answered right or wrong, else its last attempt's outcome and category.

    >>> fallback_end({"final_match": False, "fallback_attempts": [
    ...     {"outcome": "refused", "category": "not_simple"}]})
    'refused (not_simple)'
    >>> fallback_end({"final_match": True, "fallback_attempts": [
    ...     {"outcome": "error", "category": "python_error"}, {"outcome": "ok"}]})
    'answered right'
    """
    attempts = r.get("fallback_attempts") or []
    if not attempts:
        return None
    last = attempts[-1]
    if last.get("outcome") == "ok":
        return "answered right" if r.get("final_match") else "answered wrong"
    return f"{last.get('outcome')} ({last.get('category') or 'no category'})"


def _reason(error: str) -> str:
    return error.split(":", 1)[0].strip()


def figures(records: Sequence[dict], seed: int = 0) -> Figures:
    """The figures of one mode's results lines."""
    ok = valid(records)
    errors = Counter(_reason(str(r["error"])) for r in records if r.get("error"))
    first = [bool(r.get("first_match")) for r in ok]
    corr = [corrected(r) for r in ok]
    vote = [voted(r) for r in ok]
    final = [bool(r.get("final_match")) for r in ok]
    by_category: dict[str, Counter] = {}
    for r in ok:
        if r.get("first_match"):
            continue
        kind = _first_kind(r)
        c = by_category.setdefault(kind, Counter())
        c["questions"] += 1
        if corrected(r):
            c["fixed by correction"] += 1
        elif voted(r):
            c["fixed by the vote"] += 1
        elif r.get("final_match"):
            c["fixed by the fallback"] += 1
        else:
            c["not fixed"] += 1
    answered = [r for r in ok if r.get("final_sql") is not None]
    warned = [r for r in answered if r.get("warnings")]
    polled = [r for r in answered if r.get("agreement")]
    cost = {}
    for key in ("calls", "input_tokens", "output_tokens", "seconds", "model_seconds"):
        values = [r[key] for r in ok if isinstance(r.get(key), int | float)]
        cost[key] = (percentile(values, 50), percentile(values, 90))
    return Figures(
        n=len(ok),
        errors=errors,
        first=Accuracy(sum(first), len(ok)),
        corrected=Accuracy(sum(corr), len(ok)),
        voted=Accuracy(sum(vote), len(ok)),
        final=Accuracy(sum(final), len(ok)),
        correction_gain=gain(first, corr, seed=seed),
        vote_gain=gain(corr, vote, seed=seed),
        fallback_gain=gain(vote, final, seed=seed),
        answered=len(answered),
        warned=len(warned),
        warned_wrong=sum(1 for r in warned if not r.get("final_match")),
        answered_wrong=sum(1 for r in answered if not r.get("final_match")),
        voted_on=len(polled),
        uncertain=sum(1 for r in polled if uncertain(r)),
        uncertain_wrong=sum(1 for r in polled if uncertain(r) and not r.get("final_match")),
        ran_wrong=sum(1 for r in ok if _first_kind(r) == RAN_WRONG and not r.get("first_match")),
        made_worse=sum(1 for r in ok if r.get("first_match") and not r.get("final_match")),
        by_category=by_category,
        wrong_stops=Counter(
            str(r["stop_reason"]) for r in ok if not r.get("final_match") and r.get("stop_reason")
        ),
        fallback_ends=Counter(e for e in map(fallback_end, ok) if e is not None),
        cost=cost,
        asked=sum(1 for r in ok if asks(r)),
        after_choosing=Accuracy(sum(1 for r in ok if right_after_choosing(r)), len(ok)),
        silent_wrong=sum(1 for r in ok if silent_wrong(r)),
        right_flagged=sum(1 for r in ok if r.get("final_match") and (r.get("warnings") or asks(r))),
    )


def paired(a: Sequence[dict], b: Sequence[dict], level: str, seed: int = 0) -> Gain:
    """The gain of mode ``a`` over mode ``b`` at ``level`` (``corrected``, ``voted`` or
    ``final``) on the questions both ran."""
    key = lambda r: (r["db_id"], r["question"], r["gold"])  # noqa: E731
    picks = {"corrected": corrected, "voted": voted}
    pick = picks.get(level) or (lambda r: bool(r.get(f"{level}_match")))
    other = {key(r): r for r in valid(b)}
    both = [(pick(other[key(r)]), pick(r)) for r in valid(a) if key(r) in other]
    return gain([x for x, _ in both], [y for _, y in both], seed=seed)
