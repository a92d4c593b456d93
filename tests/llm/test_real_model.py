"""The real local model end to end (marker ``llm``): Qwen2.5-Coder-1.5B-Instruct through
llama-cpp-python's OpenAI-compatible server on 127.0.0.1 (one per session, the ``llm`` fixture),
and the same GGUF file loaded in the process by the ``llamacpp:PATH`` spec.

``ask()`` calls and ``%%ask`` cells on the sample shop, and Spider dev questions on SQLite when
the data is there. Sampling temperature 0. The assertions are what must hold whatever the model
writes: every reply parsed, every attempt recorded with its outcome, category, feedback and
tokens, the panel and the static HTML showing them, the answer compared with gold and the
comparison kept (``test-artifacts/llm/answers.jsonl``); never whether the answer is right.
"""

from __future__ import annotations

import os
import sqlite3

import pytest

from cadet_magic.agent.reply import extract_sql
from cadet_magic.api import ask
from cadet_magic.diagnose.model import Category
from cadet_magic.display.plain_text import attempt_label, render_text, tokens_text
from cadet_magic.display.static import render_html
from cadet_magic.examples.shop import create_shop
from cadet_magic.result import OUTCOMES, AskResult, StopReason
from tests.conftest import need
from tests.llm import gold

pytestmark = [
    pytest.mark.llm,
    pytest.mark.filterwarnings("ignore:Traits should be given as instances:DeprecationWarning"),
]

#: Questions on the sample shop with gold SQL written for it (DuckDB).
SHOP = {
    "count": ("How many customers are there?", "SELECT COUNT(*) FROM customers"),
    "join": (
        "What is the revenue per product category, highest first?",
        "SELECT p.category, SUM(oi.quantity * oi.unit_price) AS revenue FROM order_items oi "
        "JOIN products p ON p.product_id = oi.product_id GROUP BY p.category ORDER BY revenue DESC",
    ),
    "filter": (
        "List the three most expensive products in the Electronics category.",
        "SELECT name, unit_price FROM products WHERE category = 'Electronics' "
        "ORDER BY unit_price DESC LIMIT 3",
    ),
}

#: Spider dev questions (db_id, question index in dev.json), run on their SQLite files.
SPIDER = [("concert_singer", 0), ("pets_1", 0)]


@pytest.fixture(scope="module")
def shop():
    con = create_shop()
    yield con
    con.close()


def check_run(result: AskResult, events: list | None = None, max_attempts: int = 3) -> None:
    """What must hold for any run with a real model, right answer or not."""
    attempts = result.all_attempts
    late = [
        a for a in attempts if a.outcome == "model_error" and "did not answer" in (a.error or "")
    ]
    # A reply later than the tests' model_timeout means a machine too busy to run the model
    # (a shared one, locally): skipped with the load average; under CI it fails.
    need(
        not late,
        f"the local model did not answer within the tests' model_timeout (load average "
        f"{os.getloadavg()[0]:.1f}): the machine is too busy",
    )
    # one call per attempt, except the vote's candidates decoded with another reply (the
    # in-kernel model draws the first with the answer, and a round's together)
    assert attempts and len([a for a in attempts if a.phase != "vote"]) <= result.model_calls
    assert result.model_calls <= len(attempts)
    assert result.stop_reason in {r.value for r in StopReason}
    for phase in ("sql", "fallback"):
        mine = [a for a in attempts if a.phase == phase]
        assert [a.number for a in mine] == list(range(1, len(mine) + 1))
        assert len(mine) <= max_attempts
        # feedback went to the model after every attempt but the phase's last
        assert all(a.feedback for a in mine[:-1]), [a.category for a in mine]
        assert not mine or mine[-1].feedback is None
    for a in attempts:
        assert a.outcome in OUTCOMES and a.outcome != "model_error", a.error
        assert isinstance(a.reply, str), "the model's raw reply is kept (even an empty one)"
        if a.phase == "sql":
            assert a.sql == extract_sql(a.reply)
        if a.outcome != "ok":
            assert a.category in {c.value for c in Category}, (a.outcome, a.error)
        assert a.tokens is not None and a.tokens.input > 0 and a.tokens.output > 0
        assert a.model_seconds is not None and 0 < a.model_seconds <= a.elapsed + 0.01
    assert result.tokens is not None and result.tokens.input == sum(
        a.tokens.input for a in attempts
    )
    if result.ok:
        assert result.columns and result.final_sql
    else:
        assert result.message
    text, page = render_text(result), render_html(result)
    # The vote's candidates are counted in the totals but get no attempt section of their own
    # (their answers show as competing answers), so only the phases' attempts are looked for.
    for a in (a for a in attempts if a.phase != "vote"):
        assert f"{attempt_label(a)}: {a.outcome}" in text
        assert tokens_text(a.tokens) in text and tokens_text(a.tokens) in page
    assert tokens_text(result.tokens) in page.split("Done:", 1)[1]
    if events is not None:
        check_panel(result, events)


def check_panel(result: AskResult, events: list) -> None:
    """The widget panel fed the run's events and result shows every attempt and the totals."""
    pytest.importorskip("anywidget")
    from cadet_magic.display.panel import AskPanel

    panel = AskPanel(result.question, model=result.model)
    for event in events:
        panel.update(event)
    panel.finish(result)
    fallback = result.fallback.attempts if result.fallback is not None else []
    assert panel.shown_attempts() == len(result.attempts) + len(fallback)  # candidates: none
    assert tokens_text(result.tokens) in panel.status.value
    titles = list(panel.attempts.titles)[: len(result.attempts)]
    assert [t.split(":")[0][2:] for t in titles] == [attempt_label(a) for a in result.attempts]
    panel.close()


def compare(name: str, result: AskResult, con, gold_sql: str, dialect: str) -> None:
    """Compares the answer with gold and records the comparison (never asserted)."""
    match = None
    if result.ok:
        match = gold.matches(
            result.rows, gold.gold_rows(con, gold_sql), gold.ordered(gold_sql, dialect)
        )
    gold.record(name, result, gold_sql, match)


@pytest.mark.parametrize("key", list(SHOP))
def test_ask_on_the_sample_shop(llm, shop, key):
    question, gold_sql = SHOP[key]
    events: list = []
    before = shop.execute("SELECT COUNT(*) FROM orders").fetchone()
    result = ask(
        question,
        con=shop,
        model=llm.chat_model(),
        on_event=events.append,
        model_timeout=llm.TIMEOUT,
    )
    assert not result.scripted and result.dialect == "duckdb"
    check_run(result, events)
    compare(f"shop-{key}", result, shop, gold_sql, "duckdb")
    assert shop.execute("SELECT COUNT(*) FROM orders").fetchone() == before


def test_the_vote_with_the_real_model(llm, shop):
    """Candidate answers sampled from the real model (the server ignores ``n``: one request
    each, a seed each), checked and run like attempts; the agreement and the competing answers
    say what they gave. Whether the vote is right is the evaluation's business, not asserted."""
    question, gold_sql = SHOP["join"]
    events: list = []
    result = ask(question, con=shop, model=llm.chat_model(), on_event=events.append,
                 model_timeout=llm.TIMEOUT, candidates=3)  # fmt: skip
    check_run(result, events)
    assert 1 <= len(result.candidates) <= 2 and all(a.phase == "vote" for a in result.candidates)
    if result.ok and result.answered_by == "sql":
        assert result.agreement is not None and result.agreement.of == 1 + len(result.candidates)
        votes = result.agreement.votes + sum(c.votes for c in result.competing)
        assert votes <= result.agreement.of
        # uncertain when the answer carries the vote's warning
        doubts = ("The candidate answers disagree", "No other candidate answer confirmed")
        assert result.uncertain == any(w.startswith(doubts) for w in result.warnings)
        assert not result.competing or result.agreement.votes < result.agreement.of
    compare("shop-vote", result, shop, gold_sql, "duckdb")


def test_ask_cells_in_a_notebook(llm, ipython_shell, tmp_path):
    """``%%ask`` and ``%ask`` in a real IPython shell with jupysql, on the shop in a DuckDB
    file; ``_ask`` holds each run, ``%cadet stats`` sums the model's calls and tokens."""
    path = tmp_path / "shop.duckdb"
    create_shop(path).close()
    ip = ipython_shell
    ip.run_line_magic("sql", f"duckdb:///{path} --alias llmshop")
    ip.run_line_magic("cadet", "reset")
    ip.user_ns["qwen"] = llm.chat_model()
    magic = ip.magics_manager.registry["AskMagic"]
    default_timeout, magic.model_timeout = magic.model_timeout, llm.TIMEOUT
    try:
        ip.run_cell_magic("ask", "--model qwen", "How many orders were cancelled?")
        first = ip.user_ns["_ask"]
        check_run(first)
        ip.run_line_magic("ask", "--model qwen How many products are in each category?")
        second = ip.user_ns["_ask"]
        assert second is not first
        check_run(second)
        stats = magic.metrics.as_dict()  # what %cadet stats shows
        assert stats["model_calls"] == len(first.all_attempts) + len(second.all_attempts)
        assert stats["input_tokens"] == first.tokens.input + second.tokens.input
        assert stats["output_tokens"] == first.tokens.output + second.tokens.output
        assert stats["calls_without_token_count"] == 0
        shown = ip.run_line_magic("cadet", "stats")
        assert f"{stats['input_tokens']:,}" in (getattr(shown, "text", None) or shown.data)
    finally:
        ip.run_line_magic("sql", "--close llmshop")
        magic.model_timeout = default_timeout
        ip.run_line_magic("cadet", "reset")


@pytest.mark.parametrize("db_id, index", SPIDER)
def test_ask_on_spider_dev(llm, shared_data, db_id, index):
    import json

    spider = shared_data / "spider-dev"
    questions = [q for q in json.loads((spider / "dev.json").read_text()) if q["db_id"] == db_id]
    item = questions[index]
    con = sqlite3.connect(spider / "database" / db_id / f"{db_id}.sqlite")
    try:
        events: list = []
        result = ask(
            item["question"],
            con=con,
            model=llm.chat_model(),
            on_event=events.append,
            model_timeout=llm.TIMEOUT,
        )
        assert result.dialect == "sqlite"
        check_run(result, events)
        compare(f"spider-{db_id}-{index}", result, con, item["query"], "sqlite")
    finally:
        con.close()


def test_gguf_file_directly(llm, shop):
    """``llamacpp:PATH``: the same GGUF loaded in this process by llama-cpp-python (no server);
    greedy sampling by default."""
    pytest.importorskip("llama_cpp")
    question, gold_sql = SHOP["count"]
    result = ask(question, con=shop, model=f"llamacpp:{llm.gguf}", model_timeout=llm.TIMEOUT)
    assert result.model == f"llamacpp:{llm.gguf}" and not result.scripted
    check_run(result)
    compare("llamacpp-count", result, shop, gold_sql, "duckdb")


def test_browser_client_on_the_real_server(llm, shop):
    """The standard-library client (the one JupyterLite's kernel uses) against the real
    server: the reply and its ``usage``. Its requests carry the tests' temperature (0) and
    reply length (the server's defaults are 0.8 and the whole context)."""
    import json

    from cadet_magic.llm.browser import BrowserChatModel, endpoint
    from cadet_magic.llm.transport import urllib_transport

    def pinned(method, url, headers, body, timeout):
        data = json.loads(body)
        data.setdefault("temperature", 0.0)
        data.setdefault("max_tokens", llm.MAX_TOKENS)
        return urllib_transport(method, url, headers, json.dumps(data), timeout)

    options = endpoint(llm.spec, base_url=llm.base_url, api_key="local", timeout=llm.TIMEOUT)
    model = BrowserChatModel(options, transport=pinned)
    question, gold_sql = SHOP["filter"]
    result = ask(question, con=shop, model=model, model_timeout=llm.TIMEOUT)
    check_run(result)
    compare("browser-filter", result, shop, gold_sql, "duckdb")
