"""The model's time, tokens and cost in every display (text, static HTML, the widget panel) and
in the session metrics; the price table. Models are scripted (langchain-core's fake chat model
with usage metadata)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from cadet_magic.api import ask
from cadet_magic.display.plain_text import render_text
from cadet_magic.display.static import render_html
from cadet_magic.errors import ConfigurationError
from cadet_magic.metrics import SessionMetrics, check_prices, cost_of, price_for
from cadet_magic.result import AskResult, Attempt, Tokens
from tests.display.results import BAD_SQL, CORRECTED, GOOD_SQL, fence, html_text, sqlite_shop
from tests.helpers import counted

pytestmark = pytest.mark.filterwarnings(
    "ignore:Traits should be given as instances:DeprecationWarning"  # ipylab 1.1
)

PRICES = json.loads((Path(__file__).parent / "data" / "price_cases.json").read_text())


def corrected(**options):
    events: list = []
    model = counted((fence(BAD_SQL), 1200, 40), (fence(GOOD_SQL), 1424, 43))
    r = ask(CORRECTED, con=sqlite_shop(), model=model, on_event=events.append, **options)
    return r, events


def test_text_and_static_html_show_tokens_per_attempt_and_in_total():
    r, _ = corrected()
    text = render_text(r)
    assert "tokens 1,200 in / 40 out" in text and "tokens 1,424 in / 43 out" in text
    assert "model " in text and "in 2 call(s)" in text and "tokens 2,624 in / 83 out" in text
    page = html_text(render_html(r))
    assert "tokens 1,200 in / 40 out" in page and "tokens 1,424 in / 43 out" in page
    status = page.split("Done:", 1)[1]
    assert "in 2 call(s)" in status and "tokens 2,624 in / 83 out" in status
    assert "cost" not in page  # no price given
    r = dataclasses.replace(r, cost=cost_of(r.tokens, (0.15, 0.60)))
    assert "cost 0.000443" in html_text(render_html(r)) and "cost 0.000443" in render_text(r)


def test_a_model_without_usage_says_so():
    r = AskResult("q", ok=False, attempts=[Attempt(1, outcome="error", model_seconds=1.5)])
    assert "model 1.5 s in 1 call(s) \u00b7 tokens not reported" in render_text(r)
    r = AskResult("q", ok=False, attempts=[Attempt(1, outcome="error")])
    assert "tokens" not in render_text(r)  # no model call made: nothing to say


def test_live_panel_shows_running_totals_and_the_final_cost():
    pytest.importorskip("anywidget")
    from cadet_magic.display.panel import AskPanel

    r, events = corrected()
    p = AskPanel(CORRECTED)
    shown = []
    for event in events:
        p.update(event)
        shown.append(html_text(p.status.value))
    assert any("tokens 1,200 in / 40 out" in s for s in shown)  # after the first reply
    assert "tokens 2,624 in / 83 out" in shown[-1]
    first = html_text(p.attempts.children[0].value)
    assert "tokens 1,200 in / 40 out" in first
    r = dataclasses.replace(r, cost=0.0004)
    p.finish(r)
    status = html_text(p.status.value)
    assert "Done" in status and "in 2 call(s)" in status and "tokens 2,624 in / 83 out" in status
    assert "cost 0.0004" in status


def test_session_metrics_sum_tokens_and_cost_by_model():
    m = SessionMetrics()
    r, _ = corrected()
    m.record(r)
    m.record(AskResult("q", ok=True, attempts=[Attempt(1, model_seconds=2.0)], model_calls=1))
    d = m.as_dict()
    assert d["model_calls"] == 3 and d["calls_without_token_count"] == 1
    assert (d["input_tokens"], d["output_tokens"]) == (2624, 83)
    assert d["cost"] is None  # no prices
    label = r.model
    d = m.as_dict({label: (0.15, 0.60)})
    assert d["cost"] == pytest.approx(cost_of(Tokens(2624, 83), (0.15, 0.60)))
    text = m.to_text({label: (0.15, 0.60)})
    assert re.search(r"^Tokens: +2,624 in / 83 out", text, re.M)
    assert re.search(r"^Model calls: +3 \(1 without a token count\)$", text, re.M)
    assert re.search(r"^Cost \(AskMagic.prices\): ", text, re.M)
    assert "no price for" in m.to_text({"other:model": (1, 1)})
    assert "Cost" not in m.to_text()


@pytest.mark.parametrize("case", PRICES["invalid"], ids=lambda c: c["name"])
def test_invalid_price_tables_say_what_to_write(case):
    with pytest.raises(ConfigurationError) as e:
        check_prices(case["prices"])
    assert case["says"] in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("case", PRICES["lookup"], ids=lambda c: c["name"])
def test_price_lookup_by_model_label(case):
    price = price_for(case["model"], case["prices"])
    assert (list(price) if price else None) == case["price"]
