"""A plain-text account of a result (stdlib only).

Example:
    >>> from cadet_magic.result import AskResult, Attempt
    >>> a = Attempt(number=1, sql="SELECT 1 AS n", timings={"generate": 0.01})
    >>> r = AskResult(question="n?", ok=True, sql=a.sql, columns=["n"], rows=[(1,)], attempts=[a])
    >>> print(render_text(r).splitlines()[3])
    Attempt 1: ok
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cadet_magic.kinds import Outcome, Phase, StepName
from cadet_magic.result import AskResult, Attempt, Tokens, add_tokens
from cadet_magic.text import first_line, printable
from cadet_magic.vote.answers import Competing

SCRIPTED_NOTE = (
    "Scripted stand-in model: these replies were stored in advance, not written by a real LLM."
)
# The one home of the wording every display shows (the text, the static HTML, the live panel).
FALLBACK_BANNER = "Answer from the fallback: simple SELECT + pandas"
#: The fallback ran and did not answer (the HTML displays; the text says it more briefly).
FALLBACK_FAILED_BANNER = (
    "Fallback (simple SELECT + pandas) ran after SQL kept failing: no answer either"
)
FALLBACK_FAILED_TEXT = "Fallback (simple SELECT + pandas): no answer either"
#: The fallback is running (the live panel).
FALLBACK_RUNNING_BANNER = (
    "Fallback: SQL kept failing, so a simple SELECT is fetched and pandas computes the answer"
)
#: What the safety check said of SQL that passed, and of SQL plus pandas code that passed.
SQL_PASSED = "passed (one read-only query over known tables)"
BOTH_PASSED = (
    "passed (one read-only query over known tables; pandas code within the allowed operations)"
)
#: A running attempt before the model replied.
WAITING = "Waiting for the model\u2026"
#: The label before each of an answer's warnings (``AskResult.warnings``).
WARNING_LABEL = "Warning"
#: Rows of a competing answer shown (``AskResult.competing``).
PREVIEW_ROWS = 5
#: What an answer that asks the user to choose a reading says (``AskResult.asks``).
READINGS_QUESTION = "The candidate answers read the question in different ways. Which did you mean?"
#: How to choose outside the panel.
CHOOSE_HINT = (
    "Choose with result.choose(i) (in the notebook: _ask.choose(i), or a button of the panel)."
)
#: The answer's label while it asks, after a choice, and when it reproduces a confirmed example.
LEADING_LABEL = "the leading reading, until you choose: {summary}"
CHOSEN_LABEL = "the reading you chose: {summary}"
CONFIRMED_NOTE = (
    "As you confirmed on {date}: this is the result of the reading you chose for {question!r}."
)

#: What the live status line says after each step of the agent.
STEP_TEXT = {
    StepName.read_schema: "schema read; asking the model",
    StepName.generate: "the model replied; checking the SQL",
    StepName.check: "safety check done",
    StepName.execute: "query ran",
    StepName.diagnose: "error diagnosed; writing feedback",
    StepName.next_attempt: "feedback sent; asking the model again",
    StepName.check_code: "pandas code checked",
    StepName.run_code: "pandas code ran",
    StepName.hand_over: "SQL attempts used up; falling back to a simple SELECT + pandas",
    StepName.tally: "candidate answer counted",
    StepName.finish: "finishing",
}
#: What the status line says after a step of the vote (else :data:`STEP_TEXT`).
VOTE_STEP_TEXT = {
    StepName.hand_over: "drawing more candidate answers",
    StepName.generate: "a candidate answer came; checking its SQL",
    StepName.next_attempt: "the candidates disagree so far; drawing another",
}


def attempt_label(a: Attempt) -> str:
    """``Attempt N``, marked ``(fallback)`` in the fallback phase.

    Example:
        >>> attempt_label(Attempt(number=2, phase="fallback"))
        'Attempt 2 (fallback)'
    """
    return f"Attempt {a.number}" + (" (fallback)" if a.phase == Phase.fallback else "")


def attempt_title(a: Attempt) -> str:
    """A one-line title: number, outcome, category and time; a running attempt says so.

    Example:
        >>> attempt_title(Attempt(number=1, running=True))
        '\u25cf Attempt 1: running'
    """
    if a.running:
        return f"\u25cf {attempt_label(a)}: running"
    mark = "\u2713" if a.outcome == "ok" else "\u2717"
    what = a.outcome + (f" \u00b7 {a.category}" if a.category else "")
    return f"{mark} {attempt_label(a)}: {what} \u00b7 {a.elapsed * 1000:.0f} ms"


def progress_text(
    step: StepName, phase: Phase, number: int, max_attempts: int | None = None
) -> str:
    """The live status line after an agent step.

    Example:
        >>> progress_text(StepName.execute, Phase.sql, 2, 3)
        'attempt 2 of 3: query ran'
        >>> progress_text(StepName.run_code, Phase.fallback, 1, 3)
        'fallback attempt 1: pandas code ran'
        >>> progress_text(StepName.tally, Phase.vote, 1, 4)
        'candidate answer 2 of 5: candidate answer counted'
    """
    if phase == Phase.vote:  # the first answer is the SQL phase's: candidates count from 2
        where = f"candidate answer {number + 1}" + (
            f" of {max_attempts + 1}" if max_attempts else ""
        )
        return f"{where}: {VOTE_STEP_TEXT.get(step) or STEP_TEXT.get(step, step)}"
    where = f"fallback attempt {number}" if phase == Phase.fallback else f"attempt {number}"
    if phase != Phase.fallback and max_attempts:
        where += f" of {max_attempts}"
    return f"{where}: {STEP_TEXT.get(step, step)}"


def done_text(result: AskResult) -> str:
    """How the run ended and how many SQL attempts it took (the status lines).

    Example:
        >>> done_text(AskResult(question="q", ok=False, attempts=[Attempt(number=1)]))
        'no answer after 1 SQL attempt(s)'
    """
    if result.ok:
        how = "answered by the fallback" if answered_by_fallback(result) else "answered"
    else:
        how = "no answer"
    drawn = len(getattr(result, "candidates", None) or ())
    more = f" and {drawn} more candidate answer(s)" if drawn else ""
    return f"{how} after {len(result.attempts)} SQL attempt(s){more}"


def answered_by_fallback(result: AskResult) -> bool:
    """Whether the answer came from the fallback (simple SELECT + pandas), not from SQL alone."""
    by = getattr(result, "answered_by", None)
    if isinstance(by, str) or by is None and hasattr(type(result), "answered_by"):
        return by == "fallback"
    return bool(result.ok and result.fallback is not None and result.fallback.ok)


def verdict(a: Attempt) -> str:
    """What the safety check said about an attempt's SQL (or pandas code); ``pending`` for a
    running attempt the check has not seen yet."""
    if a.outcome == Outcome.refused:
        return f"refused: {first_line(a.error) or 'not a single read-only query'}"
    if a.running and StepName.check not in a.timings and StepName.check_code not in a.timings:
        return "pending"
    if a.running and a.code and StepName.check_code not in a.timings:
        return SQL_PASSED
    if a.outcome == Outcome.model_error:
        return "not reached (the model call failed)"
    if not a.sql and not a.code:
        return "not reached (the reply held no SQL)"
    if a.code:
        return BOTH_PASSED
    return SQL_PASSED


def timing_text(timings: Mapping[str, float]) -> str:
    """Seconds per step as milliseconds, with the total."""
    parts = [f"{k} {v * 1000:.0f} ms" for k, v in timings.items()]
    total = sum(timings.values())
    return " \u00b7 ".join([*parts, f"total {total * 1000:.0f} ms"]) if parts else ""


def tokens_text(tokens: Tokens | None) -> str:
    """Tokens in and out, or that the provider reported none.

    Example:
        >>> tokens_text(Tokens(1624, 83)), tokens_text(Tokens(None, 83)), tokens_text(None)
        ('tokens 1,624 in / 83 out', 'tokens ? in / 83 out', 'tokens not reported')
    """
    if tokens is None:
        return "tokens not reported"
    shown = ["?" if n is None else f"{n:,}" for n in tokens]
    return f"tokens {shown[0]} in / {shown[1]} out"


def cost_text(cost: float) -> str:
    """A cost at the configured prices (their currency), with the digits that matter.

    Example:
        >>> cost_text(0.0123456), cost_text(0.0000421), cost_text(2.5)
        ('cost 0.0123', 'cost 0.0000421', 'cost 2.50')
    """
    if cost >= 1 or cost <= 0:
        return f"cost {cost:.2f}" if cost else "cost 0"
    from math import floor, log10

    return f"cost {cost:.{2 - floor(log10(cost))}f}".rstrip("0")


def usage_text(attempts: Sequence[Attempt], cost: float | None = None, total: bool = False) -> str:
    """The model's time and tokens over ``attempts`` (one attempt's, or a run's total with
    ``total``), and the cost when a price is given; '' when no model call was made.

    Example:
        >>> a = [Attempt(1, tokens=Tokens(800, 40), model_seconds=3.2),
        ...      Attempt(2, tokens=Tokens(824, 43), model_seconds=4.0)]
        >>> usage_text(a[:1])
        'model 3.2 s \u00b7 tokens 800 in / 40 out'
        >>> usage_text(a, cost=0.0004, total=True)
        'model 7.2 s in 2 call(s) \u00b7 tokens 1,624 in / 83 out \u00b7 cost 0.0004'
    """
    called = [a for a in attempts if a.model_seconds is not None]
    if not called:
        return ""
    seconds = sum(a.model_seconds or 0.0 for a in called)
    parts = [f"model {seconds:.1f} s" + (f" in {len(called)} call(s)" if total else "")]
    parts.append(tokens_text(add_tokens(a.tokens for a in called)))
    if cost is not None:
        parts.append(cost_text(cost))
    return " \u00b7 ".join(parts)


def attempt_text(a: Attempt) -> list[str]:
    """An attempt as indented lines: SQL or code, verdict, error, feedback, diff, timings."""
    head = f"{attempt_label(a)}: {a.outcome}" + (f" [{a.category}]" if a.category else "")
    lines = [head]
    if a.sql:
        lines += ["    " + line for line in a.sql.strip().splitlines()]
    if a.code:
        lines += ["    pandas: " + line for line in a.code.strip().splitlines()]
    lines.append(f"    safety check: {verdict(a)}")
    if a.error and a.outcome != "refused":
        lines.append(f"    error: {first_line(a.error)}")
    if a.feedback:
        lines.append(f"    feedback sent: {' '.join(a.feedback.split())[:400]}")
    if a.diff:
        lines += ["    diff: " + line for line in a.diff.strip().splitlines()]
    if a.timings:
        lines.append(f"    timings: {timing_text(a.timings)}")
    if a.model_seconds is not None:
        lines.append(f"    {usage_text([a])}")
    return lines


def table_text(columns: Sequence[str], rows: Sequence[tuple], max_rows: int = 20) -> list[str]:
    """Rows as aligned text columns (the first ``max_rows``)."""
    if not columns:
        return ["(no columns)"]
    # Each value on one line, with control characters shown escaped (see render_text).
    shown = [["NULL" if v is None else printable(v, keep="") for v in r] for r in rows[:max_rows]]
    columns = [printable(c, keep="") for c in columns]
    widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(columns)]
    widths = [min(w, 40) for w in widths]
    lines = ["  ".join(c[:w].ljust(w) for c, w in zip(columns, widths, strict=False))]
    lines += ["  ".join(v[:w].ljust(w) for v, w in zip(r, widths, strict=False)) for r in shown]
    if len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more row(s)")
    return lines


def fallback_text(result: AskResult) -> list[str]:
    """The fallback's block, clearly marked."""
    fb = result.fallback
    if fb is None:
        return []
    banner = FALLBACK_BANNER if fb.ok else FALLBACK_FAILED_TEXT
    lines = [f"== {banner} =="]
    if fb.sql and not fb.attempts:
        lines += ["  fallback SQL:"] + ["    " + line for line in fb.sql.strip().splitlines()]
    if fb.code and not fb.attempts:
        lines += ["  pandas code:"] + ["    " + line for line in fb.code.strip().splitlines()]
    for a in fb.attempts:
        lines += ["  " + line for line in attempt_text(a)]
    return lines


def agreement_text(result: AskResult) -> str | None:
    """How many candidate answers gave the answer (None without a vote).

    Example:
        >>> from cadet_magic.vote.answers import Agreement
        >>> agreement_text(AskResult("q", ok=True, agreement=Agreement(2, 3)))
        '2 of 3 candidate answers gave this answer'
    """
    a = result.agreement
    return None if a is None else f"{a} candidate answers gave this answer"


def competing_title(c: Competing, result: AskResult) -> str:
    """``"Another answer (1 of 3 candidates)"``."""
    of = result.agreement.of if result.agreement is not None else c.votes
    return f"Another answer ({c.votes} of {of} candidate{'s' if of != 1 else ''})"


def reading_title(result: AskResult, i: int) -> str:
    """``"0: top 1 (3 of 5 candidates, leading)"``."""
    r = result.readings[i]
    of = result.agreement.of if result.agreement is not None else r.votes
    lead = ", leading" if i == 0 else ""
    return f"{i}: {r.summary} ({r.votes} of {of} candidate{'s' if of != 1 else ''}{lead})"


def answer_label(result: AskResult) -> str:
    """What the answer is when the vote had readings: the leading one until a choice, then the
    chosen one ('' without readings).

    Example:
        >>> from cadet_magic.vote.readings import Reading
        >>> r = AskResult("q", ok=True, asks=True, readings=(Reading("SELECT 1", "top 1", 2),))
        >>> answer_label(r)
        'the leading reading, until you choose: top 1'
    """
    readings = getattr(result, "readings", ()) or ()
    chosen = getattr(result, "chosen", None)
    if chosen is not None and 0 <= chosen < len(readings):
        return CHOSEN_LABEL.format(summary=readings[chosen].summary)
    if getattr(result, "asks", False) and readings:
        return LEADING_LABEL.format(summary=readings[0].summary)
    return ""


def confirmed_text(result: AskResult) -> str | None:
    """The line of an answer reproducing the result of an example the user confirmed."""
    confirmed = getattr(result, "confirmed", None)
    if confirmed is None:
        return None
    return CONFIRMED_NOTE.format(date=confirmed.date, question=confirmed.question)


def readings_text(result: AskResult) -> list[str]:
    """The question an answer without a clear lead asks, each reading with its SQL and first
    rows (none when it does not ask)."""
    if not getattr(result, "asks", False):
        return []
    lines = [READINGS_QUESTION]
    for i, r in enumerate(result.readings):
        lines.append("  " + reading_title(result, i) + ":")
        lines += ["    " + line for line in r.sql.strip().splitlines()]
        lines += ["    " + line for line in table_text(r.columns, r.preview, PREVIEW_ROWS)]
        if r.more:
            lines.append("    ... more rows")
    lines.append(CHOOSE_HINT)
    return lines


def certainty_text(result: AskResult) -> list[str]:
    """The agreement and each competing answer (its SQL and first rows), as lines.

    Example:
        >>> from cadet_magic.vote.answers import Agreement, Competing
        >>> r = AskResult("q", ok=True, agreement=Agreement(2, 3),
        ...               competing=[Competing("SELECT 2", 1, ("n",), ((2,),))])
        >>> print("\\n".join(certainty_text(r)))
        Agreement: 2 of 3 candidate answers gave this answer
        Another answer (1 of 3 candidates):
          SELECT 2
          n
          2
    """
    said = agreement_text(result)
    lines = [f"Agreement: {said}"] if said else []
    if getattr(result, "asks", False):
        return lines + readings_text(result)  # the readings name every competing answer
    for c in result.competing:
        lines.append(competing_title(c, result) + ":")
        lines += ["  " + line for line in c.sql.strip().splitlines()]
        lines += ["  " + line for line in table_text(c.columns, c.rows, PREVIEW_ROWS)]
        if c.more and len(c.rows) <= PREVIEW_ROWS:
            lines.append("  ... more rows")
    return lines


def render_text(result: AskResult) -> str:
    """Question, model, every attempt, the fallback, then the answer or the failure summary.

    Everything shown comes from the model, the database or its data, so every line passes
    through :func:`cadet_magic.text.printable`: an escape sequence stored in a value (OSC 52
    setting the clipboard, a window title, a carriage return hiding text) is shown escaped,
    never sent to the terminal.

    Example:
        >>> r = AskResult(question="q", ok=True, columns=["v"], rows=[("\x1b]0;pwned\x07",)])
        >>> render_text(r).splitlines()[-2]
        '\\\\x1b]0;pwned\\\\x07'
    """
    lines = [
        f"Question: {result.question}",
        f"Model: {result.model}",
        f"Connection: {result.connection} ({result.dialect})",
    ]
    if result.scripted:
        lines.append(f"NOTE: SCRIPTED. {SCRIPTED_NOTE}")
    from cadet_magic.display.answer_context import context_lines

    lines += context_lines(result)
    for a in result.attempts:
        lines += attempt_text(a)
    lines += fallback_text(result)
    if result.ok:
        source = (
            " (from the FALLBACK: simple SELECT + pandas)" if answered_by_fallback(result) else ""
        )
        note = result.truncation_note or "truncated at the row limit: more rows exist"
        more = f" ({note})" if result.truncated else ""
        label = answer_label(result)
        reading = f" ({label})" if label else ""
        lines.append(f"Answer{source}{reading}: {result.row_count} row(s){more}")
        notice = getattr(result, "notice", None)
        lines += [notice] if notice else []
        confirmed = confirmed_text(result)
        lines += [confirmed] if confirmed else []
        lines += [f"{WARNING_LABEL}: {w}" for w in getattr(result, "warnings", None) or ()]
        lines += table_text(result.columns, result.rows)
        lines += certainty_text(result)
    else:
        lines.append(result.message or "No answer.")
    usage = usage_text(result.all_attempts, getattr(result, "cost", None), total=True)
    lines.append(
        f"({len(result.attempts)} SQL attempt(s), {result.elapsed:.2f} s"
        + (f"; {usage})" if usage else ")")
    )
    return "\n".join(printable(line, keep="\t") for text in lines for line in text.split("\n"))
