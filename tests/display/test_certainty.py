"""The answer's certainty in every display: the agreement (how many candidate answers gave it,
of how many) and the competing answers (each with its SQL, the first rows of its result and
its votes); what the model or the data wrote is escaped; ``%cadet stats`` counts uncertain
answers. Results are built here (the vote that fills them is tested in tests/agent)."""

from __future__ import annotations

from cadet_magic.display.plain_text import PREVIEW_ROWS, render_text
from cadet_magic.display.static import render_html
from cadet_magic.display.stats_table import StatsView
from cadet_magic.metrics import SessionMetrics
from cadet_magic.result import AskResult, Attempt
from cadet_magic.vote.answers import Agreement, Competing

SPLIT = Agreement(2, 3)
HOSTILE = "SELECT '<script>alert(1)</script>' AS x"


def result(agreement=SPLIT, competing=(), uncertain=False):
    return AskResult(
        "How many singers?",
        ok=True,
        sql="SELECT COUNT(*) AS n FROM singer",
        columns=["n"],
        rows=[(6,)],
        attempts=[Attempt(1, "SELECT COUNT(*) AS n FROM singer")],
        agreement=agreement,
        competing=list(competing),
        uncertain=uncertain,
    )


def test_the_agreement_and_each_competing_answer_in_text_and_html():
    rows = tuple((i,) for i in range(PREVIEW_ROWS + 3))
    r = result(
        competing=[
            Competing(
                "SELECT singer_id FROM singer", 1, ("singer_id",), rows[:PREVIEW_ROWS], more=True
            )
        ]
    )
    text, html = render_text(r), render_html(r)
    assert "Agreement: 2 of 3 candidate answers gave this answer" in text
    assert "Another answer (1 of 3 candidates):" in text and "SELECT singer_id FROM singer" in text
    assert "... more rows" in text
    assert "2 of 3 candidate answers gave this answer" in html
    assert "Another answer (1 of 3 candidates)" in html and "cadet-competing" in html
    assert "singer_id" in html and "more rows" in html


def test_unanimous_answers_say_so_quietly_and_show_no_competitor():
    r = result(agreement=Agreement(3, 3))
    html = render_html(r)
    assert "3 of 3 candidate answers" in html and "cadet-competing" not in html
    assert "cadet-agreement cadet-muted" in html and not r.uncertain


def test_no_vote_no_line():
    r = result(agreement=None)
    assert "Agreement" not in render_text(r) and "cadet-agreement" not in render_html(r)


def test_what_the_model_and_the_data_wrote_is_escaped():
    r = result(
        competing=[Competing(HOSTILE, 1, ("<b>x</b>",), (("<img src=x onerror=alert(1)>",),))]
    )
    html = render_html(r)
    assert "<script>" not in html and "<img" not in html and "<b>x</b>" not in html
    text = render_text(
        Competing
        and result(competing=[Competing("SELECT '\x1b]0;t\x07'", 1, ("x",), (("\x1b[2J",),))])
    )
    assert "\x1b" not in text


def test_stats_count_uncertain_answers():
    m = SessionMetrics()
    m.record(result(agreement=Agreement(3, 3)))
    other = Competing("SELECT 1", 1, ("n",), ((1,),))
    m.record(result(agreement=Agreement(2, 3), competing=[other], uncertain=True))
    m.record(result(agreement=Agreement(2, 3)))  # the third candidate gave no answer
    m.record(result(agreement=Agreement(3, 4), competing=[other]))  # a clear lead: no doubt
    m.record(result(agreement=None))
    line = next(x for x in StatsView(m).text.splitlines() if x.startswith("Uncertain answers"))
    assert line.split(":", 1)[1].strip() == "1 of 4 voted on"
    assert "Uncertain answers" in StatsView(m).html()
    fresh = SessionMetrics()
    fresh.record(result(agreement=None))
    assert "Uncertain" not in StatsView(fresh).text


def test_readings_in_text_and_html_the_leading_one_marked_and_escaped():
    from cadet_magic.vote.readings import Reading

    hostile = Reading(
        HOSTILE, "where x = '<script>'", 1, (("<img src=x onerror=alert(1)>",),), ("x",)
    )
    lead = Reading("SELECT COUNT(*) AS n FROM singer", "all rows", 2, ((6,),), ("n",), ((6,),))
    import dataclasses

    r = dataclasses.replace(result(uncertain=True), asks=True, readings=(lead, hostile))
    text, html = render_text(r), render_html(r)
    assert "Answer (the leading reading, until you choose: all rows): 1 row(s)" in text
    assert "0: all rows (2 of 3 candidates, leading):" in text
    assert "1: where x = '<script>' (1 of 3 candidates):" in text and "choose(i)" in text
    assert "Which did you mean?" in html and "cadet-readings" in html
    assert "<script>" not in html and "<img" not in html
    assert "Another answer" not in text  # the readings name the competing answers
