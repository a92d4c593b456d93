"""%%ask's tokens and cost: ``AskMagic.prices`` (checked when set), ``_ask.cost``, and the
model rows of ``%cadet stats``. Real IPython shell with jupysql, a scripted model (langchain-core's
fake chat model with LangChain usage metadata)."""

from __future__ import annotations

import re

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from cadet_magic.result import Tokens
from tests.helpers import sql_reply

ORDERS = (
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer VARCHAR, amount DOUBLE);"
    "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5), (3, 'ann', 7.5);"
)


@pytest.fixture
def ip(sql_duckdb):
    shell = sql_duckdb("usage", ORDERS)
    shell.run_line_magic("cadet", "reset")
    yield shell
    shell.run_line_magic("config", "AskMagic.prices = {}")
    shell.run_line_magic("cadet", "reset")


def ask(ip, question="Total spent per customer?"):
    ip.user_ns["counted"] = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    content=sql_reply(
                        "SELECT customer, SUM(amount) AS spent FROM orders GROUP BY 1"
                    ),
                    usage_metadata={
                        "input_tokens": 2000,
                        "output_tokens": 100,
                        "total_tokens": 2100,
                    },
                )
            ]
        )
    )
    ip.run_cell_magic("ask", "--model counted", question)
    return ip.user_ns["_ask"]


def test_prices_turn_tokens_into_cost(ip):
    r = ask(ip)
    assert r.tokens == Tokens(2000, 100) and r.cost is None  # no price set
    ip.run_line_magic("config", f"AskMagic.prices = {{{r.model!r}: (0.15, 0.60)}}")
    r = ask(ip)
    assert r.cost == pytest.approx((2000 * 0.15 + 100 * 0.60) / 1e6)
    view = ip.run_line_magic("cadet", "stats")
    rows = dict(view.metrics.rows(view.prices))
    assert rows["Model calls"] == "2"
    assert rows["Tokens"] == "4,000 in / 200 out (2,000 in / 100 out per question)"
    assert rows["Cost (AskMagic.prices)"] == "0.00072"
    # The text and the HTML table are drawn from the same rows.
    assert re.search(r"^Cost \(AskMagic.prices\): +0.00072$", view.text, re.M)
    assert "<th scope='row'>Cost (AskMagic.prices)</th><td>0.00072</td>" in view.html()


def test_a_bad_price_table_is_refused_with_one_line(ip):
    from traitlets import TraitError

    magic = ip.magics_manager.registry["AskMagic"]
    with pytest.raises(TraitError) as e:
        magic.prices = {"openai:gpt-4o-mini": 0.15}
    assert "(input, output) per million tokens" in str(e.value)
    assert magic.prices == {}
