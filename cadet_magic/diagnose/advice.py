"""The advice the feedback templates cite that depends on the mistake: the rewrite of a nested
aggregate (stdlib only; the dialect's own date functions are its Target's facts)."""

from __future__ import annotations

from cadet_magic.diagnose.found import AggregateMistake


def nested_advice(mistake: AggregateMistake) -> str:
    """Which aggregate is inside which, and the rewrite that fits the outer one.

    Example:
        >>> print(nested_advice(AggregateMistake("nested_aggregate", expression="MAX(COUNT(*))",
        ...                                       outer="MAX", inner="COUNT(*)")))
        Aggregates cannot be nested: MAX(COUNT(*)) takes MAX over an aggregate. For the group with the largest value, GROUP BY the group, then ORDER BY COUNT(*) DESC LIMIT 1 (no MAX).
    """
    expr = mistake.expression or "an aggregate of an aggregate"
    outer, inner = mistake.outer, mistake.inner
    if not (outer and inner):
        return (
            f"Aggregates cannot be nested ({expr}). For the largest or smallest group, "
            "GROUP BY, then ORDER BY the aggregate DESC (or ASC) LIMIT 1; or aggregate in a "
            "subquery first: SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM ... GROUP BY ...) AS t."
        )
    # The inner aggregate is named at most twice: model-written ones can be long, and the
    # advice must stay short.
    if inner in expr:  # MAX(COUNT(*)): the expression already shows the inner aggregate
        head = f"Aggregates cannot be nested: {expr} takes {outer} over an aggregate."
    else:  # MAX(n) with n an alias of COUNT(*)
        head = f"Aggregates cannot be nested: {expr} takes {outer} over {inner}, an aggregate."
    if outer.upper() in ("MAX", "MIN"):
        way, order = ("largest", "DESC") if outer.upper() == "MAX" else ("smallest", "ASC")
        return (
            f"{head} For the group with the {way} value, GROUP BY the group, then ORDER BY "
            f"{inner} {order} LIMIT 1 (no {outer.upper()})."
        )
    return (
        f"{head} Compute it per group in a subquery first, then {outer.upper()} over that: "
        f"SELECT {outer.upper()}(n) FROM (SELECT {inner} AS n FROM ... GROUP BY ...) AS t."
    )
