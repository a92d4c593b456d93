"""Session metrics: first-attempt success kept apart
from corrected success, so a weak generator is not hidden (stdlib only).

Example:
    >>> from cadet_magic.result import AskResult, Attempt
    >>> m = SessionMetrics()
    >>> m.record(AskResult("q", ok=True, attempts=[Attempt(1)]))
    >>> m.record(AskResult("q2", ok=True, attempts=[
    ...     Attempt(1, outcome="error", category="column_not_found"), Attempt(2)]))
    >>> d = m.as_dict()
    >>> d["first_attempt_success"], d["corrected_success"], d["avg_attempts"]
    (1, 1, 1.5)
    >>> d["by_error_type"]["column_not_found"]
    {'count': 1, 'corrected': 1, 'correction_rate': 1.0}

    A voted answer is uncertain when the vote left it in doubt (``AskResult.uncertain``: it
    carries the vote's warning):

    >>> from cadet_magic.vote.answers import Agreement, Competing
    >>> m.record(AskResult("q3", ok=True, attempts=[Attempt(1)], agreement=Agreement(3, 3)))
    >>> m.record(AskResult("q4", ok=True, attempts=[Attempt(1)], agreement=Agreement(2, 3),
    ...                    competing=[Competing("SELECT 2", votes=1)], uncertain=True))
    >>> m.as_dict()["uncertain_answers"], m.as_dict()["voted_answers"]
    (1, 2)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.prices import check_prices
from cadet_magic.result import AskResult, Tokens


def price_for(model: str, prices: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """The price of ``model`` (a result's model label): the entry of that name, else the entry
    naming the same model without or with its provider (``gpt-4o-mini`` for
    ``openai:gpt-4o-mini``); None without one.

    Example:
        >>> price_for("openai:gpt-4o-mini", {"gpt-4o-mini": (0.15, 0.6)})
        (0.15, 0.6)
        >>> price_for("openai:qwen", {"gpt-4o-mini": (0.15, 0.6)}) is None
        True
    """
    if not prices or not model:
        return None
    table = check_prices(prices)
    if model in table:
        return table[model]
    bare = model.split(":", 1)[-1]
    for name, price in table.items():
        if name.split(":", 1)[-1] == bare:
            return price
    return None


def cost_of(tokens: Tokens | None, price: tuple[float, float] | None) -> float | None:
    """What ``tokens`` cost at ``price`` (input, output per million tokens); None when either
    is unknown (a count the provider did not report counts as 0).

    Example:
        >>> cost_of(Tokens(2_000, 100), (0.15, 0.60))
        0.00036
    """
    if tokens is None or price is None:
        return None
    return round(((tokens.input or 0) * price[0] + (tokens.output or 0) * price[1]) / 1e6, 10)


@dataclass
class SessionMetrics:
    """Counts over the questions asked in this session."""

    total: int = 0
    first_attempt_success: int = 0
    corrected_success: int = 0
    fallback_success: int = 0
    final_failures: int = 0
    attempts: int = 0
    by_error: dict[str, dict[str, int]] = field(default_factory=dict)
    #: The result check: questions with a suspect attempt (a filter value that does not
    #: occur while a close one does), those a later attempt answered cleanly, those answered
    #: with the suspect result, and answers that came with warnings.
    suspect_questions: int = 0
    suspect_corrected: int = 0
    suspect_answers: int = 0
    warned_answers: int = 0
    #: The vote: answers voted on by several candidates, and those it left in doubt
    #: (uncertain: the answer carries the vote's warning).
    voted_answers: int = 0
    uncertain_answers: int = 0
    #: Readings: answers that asked the user to choose one (the vote had no clear lead), and
    #: the readings the user chose (:meth:`chose`).
    asked_readings: int = 0
    chosen_readings: int = 0
    #: The model: calls, the seconds spent waiting for it, and the tokens its provider
    #: reported (``calls_unreported``: calls that reported none), per model label too (for
    #: the cost at ``AskMagic.prices``).
    model_calls: int = 0
    calls_unreported: int = 0
    model_seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_by_model: dict[str, list[int]] = field(default_factory=dict)

    def record(self, result: AskResult) -> None:
        sql_attempts = [a for a in result.attempts if a.phase == "sql"]
        self.total += 1
        self.attempts += len(sql_attempts)
        answered_by_sql = result.ok and bool(sql_attempts) and sql_attempts[-1].outcome == "ok"
        suspect_answer = (
            result.ok and not answered_by_sql and getattr(result, "answered_by", None) == "sql"
        )
        if answered_by_sql and len(sql_attempts) == 1:
            self.first_attempt_success += 1
        elif answered_by_sql:
            self.corrected_success += 1
        elif suspect_answer:
            self.suspect_answers += 1
        elif result.ok:
            self.fallback_success += 1
        else:
            self.final_failures += 1
        if any(a.outcome == "suspect" for a in sql_attempts):
            self.suspect_questions += 1
            self.suspect_corrected += int(answered_by_sql)
        self.warned_answers += int(result.ok and bool(getattr(result, "warnings", None)))
        voted = result.ok and getattr(result, "agreement", None) is not None
        self.voted_answers += int(voted)
        self.uncertain_answers += int(voted and result.uncertain)
        self.asked_readings += int(result.ok and bool(getattr(result, "asks", False)))
        called = [a for a in result.all_attempts if a.model_seconds is not None]
        self.model_calls += result.model_calls or len(called)
        self.calls_unreported += sum(1 for a in called if a.tokens is None)
        self.model_seconds += result.model_seconds
        tokens = result.tokens
        if tokens is not None:
            self.input_tokens += tokens.input or 0
            self.output_tokens += tokens.output or 0
            by_model = self.tokens_by_model.setdefault(result.model, [0, 0])
            by_model[0] += tokens.input or 0
            by_model[1] += tokens.output or 0
        # every error category met on the way, counted once per question
        for category in dict.fromkeys(a.category for a in sql_attempts if a.category):
            entry = self.by_error.setdefault(category, {"count": 0, "corrected": 0})
            entry["count"] += 1
            entry["corrected"] += int(result.ok and not suspect_answer)

    def chose(self, result: AskResult) -> None:
        """Counts a reading the user chose (``result``: the answer with it, from
        :meth:`AskResult.choose`); the question itself was counted when it was answered."""
        self.chosen_readings += int(getattr(result, "chosen", None) is not None)

    def reset(self) -> None:
        """Clears every count (the object stays the one the magic holds)."""
        vars(self).update(vars(SessionMetrics()))

    def cost(self, prices: Mapping[str, Any] | None) -> tuple[float | None, list[str]]:
        """The session's tokens at ``prices`` (``AskMagic.prices``), and the models that used
        tokens without a price there (their tokens are not in the cost)."""
        if not prices:
            return None, sorted(self.tokens_by_model)
        total, unpriced = 0.0, []
        for model, (input_, output) in sorted(self.tokens_by_model.items()):
            cost = cost_of(Tokens(input_, output), price_for(model, prices))
            if cost is None:
                unpriced.append(model)
            else:
                total += cost
        return round(total, 10), unpriced

    def as_dict(self, prices: Mapping[str, Any] | None = None) -> dict:
        n = self.total
        failed_first = n - self.first_attempt_success
        cost, unpriced = self.cost(prices)
        return {
            "total_queries": n,
            "first_attempt_success": self.first_attempt_success,
            "corrected_success": self.corrected_success,
            "fallback_success": self.fallback_success,
            "final_failures": self.final_failures,
            "suspect_questions": self.suspect_questions,
            "suspect_corrected": self.suspect_corrected,
            "suspect_answers": self.suspect_answers,
            "warned_answers": self.warned_answers,
            "voted_answers": self.voted_answers,
            "uncertain_answers": self.uncertain_answers,
            "asked_readings": self.asked_readings,
            "chosen_readings": self.chosen_readings,
            "avg_attempts": round(self.attempts / n, 2) if n else 0.0,
            "first_attempt_rate": round(self.first_attempt_success / n, 3) if n else 0.0,
            "correction_effectiveness": (
                round((self.corrected_success + self.fallback_success) / failed_first, 3)
                if failed_first
                else 0.0
            ),
            "overall_success_rate": (round((n - self.final_failures) / n, 3) if n else 0.0),
            "by_error_type": {
                k: {**v, "correction_rate": round(v["corrected"] / v["count"], 3)}
                for k, v in sorted(self.by_error.items())
            },
            "model_calls": self.model_calls,
            "calls_without_token_count": self.calls_unreported,
            "model_seconds": round(self.model_seconds, 3),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": cost,
            "models_without_price": unpriced if prices else [],
        }

    def rows(self, prices: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
        """The summary as (label, value) rows, in order: the text and the HTML table of
        ``%cadet stats`` are both drawn from them, so a new figure is one more row here."""
        d = self.as_dict(prices)
        return [
            ("Questions asked", f"{d['total_queries']}"),
            (
                "Answered at the first attempt",
                f"{d['first_attempt_success']} ({d['first_attempt_rate']:.0%})",
            ),
            ("Answered after a correction", f"{d['corrected_success']}"),
            ("Answered by fallback", f"{d['fallback_success']}"),
            ("Final failures", f"{d['final_failures']}"),
            (
                "Suspect results (a filter value not in the data)",
                f"{d['suspect_questions']}, corrected {d['suspect_corrected']}, "
                f"answered with warnings {d['suspect_answers']}",
            ),
            ("Answers with warnings", f"{d['warned_answers']}"),
            *(
                [
                    (
                        "Uncertain answers (the candidates disagreed)",
                        f"{d['uncertain_answers']} of {d['voted_answers']} voted on",
                    )
                ]
                if d["voted_answers"]
                else []
            ),
            *(
                [
                    (
                        "Asked which reading was meant",
                        f"{d['asked_readings']}, chosen {d['chosen_readings']}",
                    )
                ]
                if d["asked_readings"] or d["chosen_readings"]
                else []
            ),
            ("Average SQL attempts", f"{d['avg_attempts']}"),
            (
                "Answered",
                f"{d['total_queries'] - d['final_failures']} of {d['total_queries']} "
                f"({d['overall_success_rate']:.0%})",
            ),
            *self._model_rows(d, prices),
        ]

    #: The columns of :meth:`category_rows`.
    CATEGORY_HEADER = ("error category", "questions that met it", "then answered", "rate")

    def category_rows(self) -> list[tuple[str, str, str, str]]:
        """One row per error category met: questions that met it, how many were answered."""
        return [
            (k, f"{v['count']}", f"{v['corrected']}", f"{v['correction_rate']:.0%}")
            for k, v in self.as_dict()["by_error_type"].items()
        ]

    def to_text(self, prices: Mapping[str, Any] | None = None) -> str:
        if not self.total:
            return "No questions asked yet in this session."
        rows = self.rows(prices)
        width = max(len(label) for label, _ in rows) + 2
        lines = [f"{label + ':':<{width}}{value}" for label, value in rows]
        if self.by_error:
            lines.append("By error category (questions that met it / then answered):")
            for k, met, answered, rate in self.category_rows():
                lines.append(f"  {k:<20} {met:>3} / {answered:>3}  ({rate})")
        return "\n".join(lines)

    def _model_rows(self, d: dict, prices: Mapping[str, Any] | None) -> list[tuple[str, str]]:
        """The model's rows of :meth:`rows`: calls, time, tokens, cost (none before a call)."""
        calls, n = d["model_calls"], d["total_queries"]
        if not calls:
            return []
        unreported = d["calls_without_token_count"]
        rows = [
            (
                "Model calls",
                f"{calls}" + (f" ({unreported} without a token count)" if unreported else ""),
            ),
            (
                "Model time",
                f"{d['model_seconds']:.1f} s ({d['model_seconds'] / calls:.1f} s per call)",
            ),
        ]
        if unreported < calls:
            rows.append(
                (
                    "Tokens",
                    f"{d['input_tokens']:,} in / {d['output_tokens']:,} out "
                    f"({d['input_tokens'] // n:,} in / {d['output_tokens'] // n:,} out per question)",
                )
            )
        if prices and d["cost"] is not None:
            missing = d["models_without_price"]
            rows.append(
                (
                    "Cost (AskMagic.prices)",
                    f"{d['cost']:.6g}"
                    + (f"; no price for {', '.join(missing)}" if missing else ""),
                )
            )
        return rows


#: The metrics of this Python session.
SESSION = SessionMetrics()
