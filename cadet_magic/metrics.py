"""Session metrics (seed querypilot-day5 section 7): first-attempt success kept apart
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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cadet_magic.result import AskResult


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
        # every error category met on the way, counted once per question
        for category in dict.fromkeys(a.category for a in sql_attempts if a.category):
            entry = self.by_error.setdefault(category, {"count": 0, "corrected": 0})
            entry["count"] += 1
            entry["corrected"] += int(result.ok and not suspect_answer)

    def reset(self) -> None:
        """Clears every count (the object stays the one the magic holds)."""
        vars(self).update(vars(SessionMetrics()))

    def as_dict(self) -> dict:
        n = self.total
        failed_first = n - self.first_attempt_success
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
        }

    def rows(self) -> list[tuple[str, str]]:
        """The summary as (label, value) rows, in order: the text and the HTML table of
        ``%cadet stats`` are both drawn from them, so a new figure is one more row here."""
        d = self.as_dict()
        return [
            ("Questions asked", f"{d['total_queries']}"),
            (
                "First-attempt success",
                f"{d['first_attempt_success']} ({d['first_attempt_rate']:.0%})",
            ),
            ("Corrected success", f"{d['corrected_success']}"),
            ("Answered by fallback", f"{d['fallback_success']}"),
            ("Final failures", f"{d['final_failures']}"),
            (
                "Suspect results (a filter value not in the data)",
                f"{d['suspect_questions']}, corrected {d['suspect_corrected']}, "
                f"answered with warnings {d['suspect_answers']}",
            ),
            ("Answers with warnings", f"{d['warned_answers']}"),
            ("Average SQL attempts", f"{d['avg_attempts']}"),
            ("Overall success rate", f"{d['overall_success_rate']:.0%}"),
        ]

    #: The columns of :meth:`category_rows`.
    CATEGORY_HEADER = ("error category", "questions that met it", "then answered", "rate")

    def category_rows(self) -> list[tuple[str, str, str, str]]:
        """One row per error category met: questions that met it, how many were answered."""
        return [
            (k, f"{v['count']}", f"{v['corrected']}", f"{v['correction_rate']:.0%}")
            for k, v in self.as_dict()["by_error_type"].items()
        ]

    def to_text(self) -> str:
        if not self.total:
            return "No questions asked yet in this session."
        width = max(len(label) for label, _ in self.rows()) + 2
        lines = [f"{label + ':':<{width}}{value}" for label, value in self.rows()]
        if self.by_error:
            lines.append("By error category (questions that met it / then answered):")
            for k, met, answered, rate in self.category_rows():
                lines.append(f"  {k:<20} {met:>3} / {answered:>3}  ({rate})")
        return "\n".join(lines)


#: The metrics of this Python session.
SESSION = SessionMetrics()
