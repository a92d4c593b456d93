"""The static text/html + text/plain account: everything the panel shows, without widgets."""

from __future__ import annotations

import dataclasses

import pytest

from cadet_magic.display.plain_text import answered_by_fallback, first_line, render_text
from cadet_magic.display.static import mimebundle, render_html
from tests.display.results import (
    CORRECTED,
    FALLBACK,
    MANY,
    REFUSED,
    SIMPLE,
    duckdb_shop,
    html_text,
    run,
    squash,
    with_fallback,
)


@pytest.fixture(scope="module", params=["sqlite", "duckdb"])
def corrected(request):
    con = duckdb_shop() if request.param == "duckdb" else None
    result, _ = run(CORRECTED, con=con)
    assert [a.outcome for a in result.attempts] == ["error", "ok"]
    yield result
    if con is not None:
        con.close()


def test_every_attempt_detail_is_in_html_and_text(corrected):
    bundle = mimebundle(corrected)
    html, text = html_text(bundle["text/html"]), bundle["text/plain"]
    flat = squash(text)
    for a in corrected.attempts:
        assert squash(a.sql) in html and squash(a.sql) in flat
        assert f"Attempt {a.number}" in html and f"Attempt {a.number}" in text
        assert "Safety check: passed" in html and "safety check: passed" in text
    bad, good = corrected.attempts
    assert first_line(bad.error) in html and first_line(bad.error) in text
    assert "column_not_found" in html and "[column_not_found]" in text
    assert "Feedback sent to the model:" in html and squash(bad.feedback) in html
    assert squash(bad.feedback)[:300] in flat
    assert good.diff and good.diff in html and good.diff in text
    for a in corrected.attempts:
        for step in a.timings:
            assert f"{step} " in html and f"{step} " in text
    assert "total" in html and "ms" in html
    assert "Answer: 3 row(s)" in html and "Answer: 3 row(s)" in text
    assert "Cleo" in html and "Cleo" in text
    assert corrected.question in html and corrected.question in text
    assert corrected.connection in html and corrected.dialect in html


def test_scripted_model_is_labelled(corrected):
    bundle = mimebundle(corrected)
    assert "Scripted stand-in model" in bundle["text/html"]
    assert "SCRIPTED" in bundle["text/plain"]
    assert "scripted" in html_text(bundle["text/html"]).split("Model:")[1][:80].lower()


def test_earlier_attempts_collapsed_last_open(corrected):
    html = render_html(corrected)
    assert html.count("<details class='cadet-attempt") == 2
    assert html.count("<details class='cadet-attempt' open>") == 1
    # the messages sent to the model: one collapsed section
    assert html.count("<details class='cadet-sent'>") == 1
    assert html.index("<details class='cadet-attempt'>") < html.index("open>")


def test_truncation_note():
    result, _ = run(MANY, row_limit=2)
    assert result.truncated
    bundle = mimebundle(result)
    assert "truncated at the row limit" in bundle["text/html"]
    assert "truncated at the row limit" in bundle["text/plain"]


def test_refusal_and_failure_summary_without_traceback():
    result, _ = run(REFUSED)
    assert not result.ok and result.attempts[0].outcome == "refused"
    bundle = mimebundle(result)
    html, text = html_text(bundle["text/html"]), bundle["text/plain"]
    assert "Safety check: refused: Only read-only queries may run" in html
    assert "safety check: refused" in text
    assert "No answer" in html and "No answer" in text
    assert "DELETE FROM orders" in html
    for out in (bundle["text/html"], text):
        assert "Traceback" not in out and 'File "' not in out


def test_engine_errors_are_one_line():
    con = duckdb_shop()
    result, _ = run(CORRECTED, con=con)
    con.close()
    error = result.attempts[0].error
    html = html_text(render_html(result))
    assert first_line(error) in html
    for extra in error.splitlines()[1:]:  # DuckDB's caret lines are not shown
        if extra.strip() and extra.strip() not in first_line(error):
            assert extra.strip() not in html.split("Feedback sent")[0]


def test_fallback_is_clearly_marked():
    result, _ = run(CORRECTED)
    result = with_fallback(result)
    assert answered_by_fallback(result)
    bundle = mimebundle(result)
    html, text = html_text(bundle["text/html"]), bundle["text/plain"]
    for out in (html, text):
        assert "Answer from the fallback: simple SELECT + pandas" in out
        assert "df.groupby('name')['amount'].sum().reset_index()" in out
        assert "SELECT name, amount FROM customers JOIN orders USING (customer_id)" in out
        assert "Attempt 1 (fallback)" in out
    assert "Answer from the fallback (simple SELECT + pandas): 2 row(s)" in html
    assert "Answer (from the FALLBACK: simple SELECT + pandas): 2 row(s)" in text
    # the SQL attempts are collapsed, the fallback's attempt open
    raw = bundle["text/html"]
    assert raw.count("<details class='cadet-attempt' open>") == 1
    assert raw.index("open>") > raw.index("cadet-fallback-banner")


def test_real_fallback_run(model_writes_select):
    result, _ = run(FALLBACK, fallback=True)
    assert result.answered_by == "fallback" and len(result.attempts) == 3
    bundle = mimebundle(result)
    html, text = html_text(bundle["text/html"]), bundle["text/plain"]
    for out in (html, squash(text)):
        assert "Answer from the fallback: simple SELECT + pandas" in out
        assert SIMPLE in out and "sort_values" in out
        assert "Attempt 3" in out and "Attempt 1 (fallback)" in out
        assert "run_code" in out  # the fallback's own timings
    assert "Fallback result: a DataFrame of 1 row(s)" in html
    assert "answered by the fallback after 3 SQL attempt(s)" in html


def test_failed_fallback_says_so():
    result, _ = run(CORRECTED)
    result = with_fallback(result)
    assert result.fallback is not None
    result = dataclasses.replace(
        result,
        fallback=dataclasses.replace(result.fallback, ok=False),
        ok=False,
        message="No answer: all 2 attempt(s) failed.",
    )
    assert not answered_by_fallback(result)
    text = render_text(result)
    assert "no answer either" in text and "Answer from the fallback" not in text
