"""The fallback phase's prompts: both blocks asked for, the failed SQL shown briefly, and on a
retry the earlier fallback attempts with what to fix."""

import doctest

import cadet_magic.agent.fallback_prompts as prompts
from cadet_magic.result import Attempt
from cadet_magic.sql.target import Target


def test_doctests():
    assert doctest.testmod(prompts).failed == 0


def test_the_first_prompt_shows_the_failed_sql_and_asks_for_both_blocks():
    long_sql = "SELECT " + ", ".join(f"c{i}" for i in range(200)) + " FROM t"
    failed = [
        Attempt(1, sql=long_sql, outcome="error", error="no such column: c7\nsecond line"),
        Attempt(2, sql=None, outcome="error", category="no_sql"),
    ]
    system, human = prompts.build_fallback_messages(
        "Top?", Target.named("sqlite"), "t(a)", failed, []
    )
    assert "SQLite SQL and pandas" in system[1] and "```python" in system[1]
    assert "t(a)" in system[1]
    assert "Attempt 1:" in human[1] and "no such column: c7" in human[1]
    assert "second line" not in human[1] and "..." in human[1]  # shortened
    assert "(no SQL in the reply)" in human[1]
    assert "Previous fallback attempts" not in human[1]


def test_a_retry_shows_the_earlier_fallback_attempts_and_the_feedback():
    earlier = [
        Attempt(
            1,
            sql="SELECT a FROM t",
            code="result = df['b']",
            outcome="error",
            error="KeyError: 'b'",
            feedback="df holds the columns of your SELECT: a.",
            phase="fallback",
        )
    ]
    _, human = prompts.build_fallback_messages("Top?", Target.named("duckdb"), "t(a)", [], earlier)
    text = human[1]
    assert "Fallback attempt 1:" in text and "result = df['b']" in text
    assert "What to fix now:\ndf holds the columns of your SELECT: a." in text
