"""The kinds of a run's records, as enums (standard library only): what happened to an attempt
(:class:`Outcome`), the phase it belongs to (:class:`Phase`) and why a run ended
(:class:`StopReason`). The result records (:mod:`cadet_magic.result`) and the diagnosis
(:mod:`cadet_magic.diagnose`) both use them, so they import neither each other nor the rest.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """What happened to an attempt (a ``str``: compares equal to its value).

    Example:
        >>> Outcome.refused == "refused", f"{Outcome.no_sql}"
        (True, 'no_sql')
    """

    ok = "ok"
    refused = "refused"
    error = "error"
    timeout = "timeout"
    no_sql = "no_sql"
    model_error = "model_error"
    #: The SQL ran, but the result check found a filter value that does not occur.
    suspect = "suspect"

    def __str__(self) -> str:
        return self.value


class Phase(StrEnum):
    """Which phase an attempt belongs to: the SQL phase, the vote's candidate answers, then the
    simple SELECT + pandas one.

    Example:
        >>> [str(p) for p in Phase]
        ['sql', 'vote', 'fallback']
    """

    sql = "sql"
    vote = "vote"
    fallback = "fallback"

    def __str__(self) -> str:
        return self.value


class StopReason(StrEnum):
    """Why a run ended (``AskResult.stop_reason``; also why the SQL phase handed over).

    Example:
        >>> StopReason("max_attempts") is StopReason.max_attempts
        True
    """

    success = "success"
    max_attempts = "max_attempts"
    unchanged_sql = "unchanged_sql"
    not_retryable = "not_retryable"
    model_error = "model_error"
    #: The SQL phase handed over to the fallback at once: its query called a function, or used
    #: a construct, the engine lacks (``MEDIAN`` on SQLite), which rewriting cannot give it.
    engine_lacks = "engine_lacks"
    #: The SQL phase handed over to the fallback at once: its query ran but does not compute
    #: what the question names (a median answered by ``AVG``).
    computation_missing = "computation_missing"

    def __str__(self) -> str:
        return self.value


class StepName(StrEnum):
    """The steps of a run, by name: the phases' declared steps (``generate``, ``check``,
    ``execute``, ``check_result``, ``tally``, ``check_code``, ``run_code``), reading the schema
    and the control steps every phase shares (``diagnose``, ``next_attempt``, ``hand_over``,
    ``finish``); ``end`` is where the routes lead once the run is over (no step runs).

    Example:
        >>> StepName("check_code") is StepName.check_code, StepName.tally == "tally"
        (True, True)
    """

    read_schema = "read_schema"
    generate = "generate"
    check = "check"
    check_code = "check_code"
    execute = "execute"
    run_code = "run_code"
    check_result = "check_result"
    tally = "tally"
    diagnose = "diagnose"
    next_attempt = "next_attempt"
    hand_over = "hand_over"
    finish = "finish"
    end = "end"

    def __str__(self) -> str:
        return self.value
