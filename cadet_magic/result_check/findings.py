"""What the result check found, and how it says so: one :class:`Finding` per filter (does its
value occur; which close values do), the :class:`ValueCheck` of one attempt (its findings,
its cost, whether it is suspect), and the wording of its warnings and of the feedback the
model gets (:mod:`.result_check` makes them).

Example:
    >>> from cadet_magic.result_check.values import Filter
    >>> f = Finding(Filter("country", None, "name", "France", "="), False, ("france",))
    >>> ValueCheck(attempt=1, findings=(f,)).suspect
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cadet_magic.result_check.values import Filter

#: What each warning says (the displays show ``AskResult.warnings`` as they are).
SUSPECT_WARNING = "The answer may be wrong: {problems}"
ABSENT_WARNING = "{value} does not occur in {column}, so this filter matches nothing."
RANGE_WARNING = "No row can match {comparison}: {column} ranges from {low:g} to {high:g}."
EMPTY_WARNING = (
    "The query returned no rows. Check that the filters match how values are stored, or "
    "rephrase the question."
)
#: The feedback for a suspect attempt (the guidance after the SQL).
FEEDBACK = (
    "Your previous query ran, but a value it filters on does not occur in the data:\n"
    "```sql\n{sql}\n```\n{problems} Compare with the value exactly as stored."
)


#: Added to the feedback when a missing value was written in double quotes.
DOUBLE_QUOTED = (
    "Write text values in single quotes ({value}); double quotes name columns and tables."
)


def quote(value: str) -> str:
    """A value as an SQL string literal, for messages.

    Example:
        >>> quote("O'Hara")
        "'O''Hara'"
    """
    return "'" + value.replace("'", "''") + "'"


# --------------------------------------------------------------------------- the findings


@dataclass(frozen=True)
class Finding:
    """What the check found about one filter: whether its value occurs (None: not known,
    the budget ran out or the query failed) and the close values that do."""

    filter: Filter
    occurs: bool | None
    close: tuple[str, ...] = ()

    @property
    def suspect(self) -> bool:
        return self.occurs is False and bool(self.close)


def value_message(f: Finding) -> str:
    """One missing value in words, naming the real close values.

    Example:
        >>> fl = Filter("t", None, "c", "x", "=")
        >>> value_message(Finding(fl, False))
        "'x' does not occur in t.c."
    """
    head = f"{quote(f.filter.value)} does not occur in {f.filter.where}"
    if not f.close:
        return head + "."
    return head + "; it holds " + ", ".join(quote(v) for v in f.close) + "."


@dataclass(frozen=True)
class ValueCheck:
    """The check of one attempt: its number, its findings, the result's row count, and
    what the check cost (queries run, seconds, whether the budget ran out)."""

    attempt: int
    findings: tuple[Finding, ...] = ()
    rows: int = 0
    queries: int = 0
    seconds: float = 0.0
    out_of_budget: bool = False
    filters: int = field(default=0)
    #: Values the model wrote in double quotes that the engine read as strings.
    double_quoted: tuple[str, ...] = ()
    #: For an empty result: numeric comparisons no stored value can meet, in words.
    out_of_range: tuple[str, ...] = ()

    @property
    def suspect(self) -> bool:
        """A value does not occur while a close one does: worth another attempt."""
        return any(f.suspect for f in self.findings)

    @property
    def missing(self) -> tuple[Finding, ...]:
        """The filters whose value does not occur."""
        return tuple(f for f in self.findings if f.occurs is False)

    @property
    def empty(self) -> bool:
        return self.rows == 0

    def problems(self) -> str:
        """The missing values in words (suspect ones first)."""
        ordered = sorted(self.missing, key=lambda f: not f.suspect)
        return " ".join(value_message(f) for f in ordered)

    def feedback(self, sql: str) -> str:
        """What the model is told about a suspect attempt (with a reminder that strings take
        single quotes when a missing value was written in double quotes)."""
        text = FEEDBACK.format(sql=sql.strip(), problems=self.problems())
        quoted = [f.filter.value for f in self.missing if f.filter.value in self.double_quoted]
        if quoted:
            text += " " + DOUBLE_QUOTED.format(value=quote(quoted[0]))
        return text

    def warnings(self) -> list[str]:
        """What looks wrong with this attempt's answer, for ``AskResult.warnings``."""
        if self.suspect:
            return [SUSPECT_WARNING.format(problems=self.problems())]
        out = [
            ABSENT_WARNING.format(value=quote(f.filter.value), column=f.filter.where)
            for f in self.missing
        ]
        if self.empty and not out:
            out.extend(self.out_of_range or [EMPTY_WARNING])
        return out

    def rank(self) -> tuple[int, int, int]:
        """Lower is better: fewer missing values, then a non-empty result, then later."""
        return (len(self.missing), int(self.empty), -self.attempt)
