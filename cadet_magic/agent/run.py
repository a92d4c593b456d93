"""The loop: run the nodes, follow the routes, emit an event per step.

Example (a scripted model and stdlib sqlite3):
    >>> import sqlite3
    >>> from cadet_magic.db.sqlite import SQLiteRunner
    >>> con = sqlite3.connect(":memory:")
    >>> _ = con.execute("CREATE TABLE t (x INTEGER)"); _ = con.execute("INSERT INTO t VALUES (1), (2)")
    >>> class Model:
    ...     def invoke(self, messages):
    ...         return type("Reply", (), {"content": "```sql\\nSELECT sum(x) AS s FROM t\\n```"})()
    >>> r = run_agent("What is the total?", model=Model(), runner=SQLiteRunner(con))
    >>> r.ok, r.rows, len(r.attempts)
    (True, [(3,)], 1)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cadet_magic.agent import nodes, routes
from cadet_magic.agent.state import AskState, initial_state
from cadet_magic.db.base import Runner
from cadet_magic.result import AskResult
from cadet_magic.schema.model import Schema

#: node name -> the function that runs it
NODES: dict[str, Callable[[AskState, nodes.Context], dict]] = {
    "read_schema": nodes.read_schema,
    "generate": nodes.generate,
    "check": nodes.check,
    "execute": nodes.execute,
    "diagnose": nodes.diagnose,
    "next_attempt": nodes.next_attempt,
    "finish": nodes.finish,
}

#: node name -> where to go next (a fixed edge or a route_* function)
EDGES: dict[str, str | Callable[[AskState], str]] = {
    "read_schema": "generate",
    "generate": routes.route_after_generate,
    "check": routes.route_after_check,
    "execute": routes.route_after_execute,
    "diagnose": routes.route_after_diagnose,
    "next_attempt": "generate",
    "finish": "end",
}


@dataclass(frozen=True)
class Event:
    """One finished step: its node name, the update it returned and the state after it."""

    step: str
    update: dict
    state: AskState
    elapsed: float


def run_agent(
    question: str,
    *,
    model: Any,
    runner: Runner,
    max_attempts: int = 3,
    row_limit: int = 1000,
    timeout: float = 30.0,
    fallback: bool = True,
    schema: Schema | None = None,
    schema_budget: int | None = 6000,
    on_event: Callable[[Event], None] | None = None,
    model_label: str = "",
    scripted: bool = False,
) -> AskResult:
    """Answers ``question`` with SQL on ``runner``, retrying with feedback up to ``max_attempts``."""
    ctx = nodes.Context(model=model, runner=runner, schema=schema, schema_budget=schema_budget)
    state = initial_state(
        question,
        dialect=runner.dialect,
        max_attempts=max_attempts,
        row_limit=row_limit,
        timeout=timeout,
        fallback=fallback,
    )
    start = time.perf_counter()
    step = "read_schema"
    max_steps = 10 * (max_attempts + 2)
    for _ in range(max_steps):
        update = NODES[step](state, ctx)
        state = AskState(**{**state, **update})
        if on_event is not None:
            on_event(Event(step, update, state, time.perf_counter() - start))
        edge = EDGES[step]
        step = edge(state) if callable(edge) else edge
        if step == "end":
            break
    else:  # pragma: no cover - the routes guarantee termination
        raise RuntimeError("agent did not terminate")
    return to_result(state, ctx, time.perf_counter() - start, model_label, scripted)


def to_result(
    state: AskState, ctx: nodes.Context, elapsed: float, model_label: str, scripted: bool
) -> AskResult:
    """The final state as an :class:`AskResult` (rows as plain tuples; the edge adds a DataFrame)."""
    execution = state.get("execution")
    attempts = list(state["attempts"])
    ok = execution is not None
    result = AskResult(
        question=state["question"],
        ok=ok,
        sql=attempts[-1].sql if ok else None,
        columns=list(execution.columns) if ok else [],
        rows=list(execution.rows) if ok else [],
        truncated=bool(execution.truncated) if ok else False,
        attempts=attempts,
        stop_reason=state.get("stop_reason"),
        model=model_label,
        scripted=scripted,
        dialect=state["dialect"],
        connection=getattr(ctx.runner, "label", ""),
        elapsed=elapsed,
        model_calls=ctx.model_calls,
    )
    if not ok:
        result.message = failure_message(result)
    return result


_REASONS = {
    "max_attempts": "all {n} attempt(s) failed",
    "unchanged_sql": "the model wrote the same SQL again, so retrying would not help",
    "not_retryable": "the error cannot be fixed by rewriting the query",
    "model_error": "the model could not be called",
}


def failure_message(result: AskResult) -> str:
    """The ask-for-clarification summary: what was tried, why it failed, what to do."""
    last = result.attempts[-1] if result.attempts else None
    if result.stop_reason == "model_error" and last is not None:
        return last.error or "The model call failed."
    reason = _REASONS.get(result.stop_reason or "", "the question could not be answered")
    lines = [f"No answer: {reason.format(n=len(result.attempts))}."]
    for a in result.attempts:
        what = a.category or a.outcome
        lines.append(
            f"  Attempt {a.number}: {what}: {(a.error or '').splitlines()[0][:200] if a.error else ''}".rstrip(
                ": "
            )
        )
    if last is not None and last.suggestions:
        lines.append(f"Closest real names: {', '.join(last.suggestions[:5])}.")
    if (
        result.stop_reason == "not_retryable"
        and last is not None
        and last.category == "connection_error"
    ):
        lines.append("Check that the database is reachable, reconnect with %sql, then ask again.")
    elif result.stop_reason == "not_retryable":
        lines.append("Check the connection's permissions, then ask again.")
    else:
        lines.append(
            "Try rephrasing the question with the table or column names you mean, "
            "or narrow it down (a time range, a specific table)."
        )
    return "\n".join(lines)
