"""Follow-ups, reruns without a model, kept answers and provenance, through a real IPython
shell with jupysql on real DuckDB, with scripted models (labelled as such)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from IPython.core.error import UsageError

import cadet_magic
from cadet_magic.display import mimebundle, render_text
from tests.helpers import CountingModel, fake_model, sql_reply, usage_error

ORDERS = (
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer VARCHAR, status VARCHAR, "
    "amount DOUBLE, year INTEGER);"
    "INSERT INTO orders VALUES (1, 'ann', 'paid', 10, 2024), (2, 'bob', 'paid', 32.5, 2025),"
    " (3, 'ann', 'cancelled', 7.5, 2025);"
)
PER_STATUS = "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status"
ONLY_2025 = (
    "SELECT status, count(*) AS n FROM orders WHERE year = 2025 GROUP BY status ORDER BY status"
)


@pytest.fixture
def ip(sql_duckdb, tmp_path, monkeypatch):
    shell = sql_duckdb("convo", ORDERS)
    magics = shell.magics_manager.registry["AskMagic"]
    saved = (magics.examples_path, magics.rerun, magics.live, magics.share)
    monkeypatch.chdir(tmp_path)  # the examples file goes beside "the notebook"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the user's key here
    monkeypatch.delenv("CADET_RERUN", raising=False)
    yield shell
    magics.examples_path, magics.rerun, magics.live, magics.share = saved


def ask(ip, *replies, options="", question="Orders per status?"):
    model = CountingModel(fake_model(*(sql_reply(r) for r in replies)))
    ip.user_ns["model"] = model
    ip.run_cell_magic("ask", f"--model model {options}", question)
    return ip.user_ns["_ask"], model


def human(messages) -> str:
    return messages[-1][1]


def test_follow_sends_the_previous_question_sql_and_columns_never_rows(ip):
    first, _ = ask(ip, PER_STATUS)
    assert first.ok and first.provenance["number"] >= 1
    second, model = ask(ip, ONLY_2025, options="--follow", question="only for 2025")
    prompt = human(model.prompts[0])
    assert prompt.startswith("Question: only for 2025")
    assert "Orders per status?" in prompt and PER_STATUS in prompt and "status, n" in prompt
    assert "cancelled" not in prompt.split("<previous-answer>")[1]  # no rows of the answer
    assert second.rows == [("cancelled", 1), ("paid", 1)]
    followed = second.provenance["followed"]
    assert followed["number"] == first.provenance["number"] and followed["sql"] == PER_STATUS
    text = render_text(second)
    assert f"Followed answer {followed['number']}: 'Orders per status?'" in text
    assert "Followed answer" in mimebundle(second)["text/html"]


def test_follow_n_picks_an_earlier_answer_and_the_line_magic_keeps_its_words(ip):
    first, _ = ask(ip, PER_STATUS)
    ask(ip, "SELECT sum(amount) AS total FROM orders", question="Total amount?")
    n = first.provenance["number"]
    model = CountingModel(fake_model(sql_reply(ONLY_2025)))
    ip.user_ns["model"] = model
    ip.run_line_magic("ask", f"--model model -f {n} only for 2025")
    r = ip.user_ns["_ask"]
    assert r.question == "only for 2025" and r.provenance["followed"]["number"] == n
    assert PER_STATUS in human(model.prompts[0]) and "Total amount?" not in human(model.prompts[0])
    ip.run_line_magic("ask", "--model model --follow only for 2025 again")
    assert ip.user_ns["_ask"].question == "only for 2025 again"


def test_follow_errors_are_one_line(ip):
    assert "--follow 999: this session has answers 1 to" in usage_error(
        ip, "ask", "--model model --follow 999", "only for 2025"
    )
    assert "give the number of an earlier answer" in usage_error(
        ip, "ask", "--model model --follow=x", "only for 2025"
    )


FOLLOW_CASES = json.loads((Path(__file__).parent / "follow_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", FOLLOW_CASES, ids=[c["name"] for c in FOLLOW_CASES])
def test_a_number_after_follow_is_read_as_a_user_means_it(ip, case):
    from cadet_magic.conversation import History

    ip.magics_manager.registry["AskMagic"].history = History()  # answers 1 and 2 only
    ask(ip, PER_STATUS)
    ask(ip, "SELECT sum(amount) AS total FROM orders", question="Total amount?")
    magic, cell = "ask", case["cell"]
    line = f"--model model {case['line']}"
    ip.user_ns["model"] = model = CountingModel(fake_model(sql_reply(ONLY_2025)))
    if "error" in case:
        assert case["error"] in usage_error(ip, magic, line, cell)
        assert model.prompts == []
        return
    if cell is None:
        ip.run_line_magic(magic, line)
    else:
        ip.run_cell_magic(magic, line, cell)
    r = ip.user_ns["_ask"]
    assert r.ok, r.message
    assert r.question == case["question"]
    assert r.provenance["followed"]["number"] == case["followed"]
    followed = (PER_STATUS, "Orders per status?") if case["followed"] == 1 else ("total",)
    assert all(text in human(model.prompts[0]) for text in followed)


def test_follow_after_a_fallback_answer_follows_its_simple_select(ip, model_writes_select):
    fallback_reply = (
        "```sql\nSELECT status, amount FROM orders\n```\n"
        "```python\nresult = df.groupby('status', as_index=False)['amount'].sum()\n```"
    )
    bad = [sql_reply("SELECT nope1 FROM orders"), sql_reply("SELECT nope2 FROM orders")]
    model = CountingModel(fake_model(*bad, fallback_reply))
    ip.user_ns["model"] = model
    ip.run_cell_magic("ask", "--model model --max-attempts 2", "Amount per status?")
    first = ip.user_ns["_ask"]
    if first.answered_by != "fallback":
        pytest.skip(f"the fallback did not answer here: {first.message}")
    # the follow-up's SQL fails twice: its fallback prompt carries the previous answer too
    model = CountingModel(fake_model(*bad, fallback_reply))
    ip.user_ns["model"] = model
    ip.run_cell_magic("ask", "--model model --max-attempts 2 --follow", "only the paid ones")
    assert "SELECT status, amount FROM orders" in human(model.prompts[-1])
    assert "```python" in model.prompts[-1][0][1]  # that was the fallback's prompt
    n = first.provenance["number"]
    second, follow_model = ask(ip, ONLY_2025, options=f"--follow {n}", question="only for 2025")
    prompt = human(follow_model.prompts[0])
    assert "SELECT status, amount FROM orders" in prompt and "Amount per status?" in prompt
    assert second.provenance["followed"]["sql"] == "SELECT status, amount FROM orders"


def test_rerun_of_a_fallback_answer_runs_its_select_and_code_without_a_model(ip):
    fallback_reply = (
        "```sql\nSELECT status, amount FROM orders\n```\n"
        "```python\nresult = df.groupby('status', as_index=False)['amount'].sum()\n```"
    )
    bad = [sql_reply("SELECT nope1 FROM orders"), sql_reply("SELECT nope2 FROM orders")]
    ip.user_ns["model"] = CountingModel(fake_model(*bad, fallback_reply))
    ip.run_cell_magic("ask", "--model model --max-attempts 2", "Amount per status, fallback?")
    first = ip.user_ns["_ask"]
    if first.answered_by != "fallback":
        pytest.skip(f"the fallback did not answer here: {first.message}")
    assert "groupby" in first.provenance["code"]
    model = CountingModel(fake_model())
    ip.user_ns["model"] = model
    ip.run_cell_magic("ask", "--model model --rerun", "Amount per status, fallback?")
    again = ip.user_ns["_ask"]
    assert model.prompts == [] and again.model_calls == 0
    assert again.answered_by == "fallback" and again.rows == first.rows
    assert again.fallback.code == first.fallback.code


def test_rerun_makes_no_model_call_and_gives_the_same_answer(ip):
    first, _ = ask(ip, PER_STATUS)
    model = CountingModel(fake_model(sql_reply("SELECT 'must not be called'")))
    ip.user_ns["model"] = model
    ip.run_cell_magic("ask", "--model model --rerun", "Orders per status?")
    again = ip.user_ns["_ask"]
    assert model.prompts == [] and again.model_calls == 0 and again.prompts == []
    assert again.ok and again.rows == first.rows and again.sql == first.sql
    assert again.provenance["rerun_of"]["created"] == first.provenance["created"]
    assert "no model call" in render_text(again)
    # the whole notebook: CADET_RERUN=1, and %config AskMagic.rerun = True
    for switch in ("env", "config"):
        if switch == "env":
            ip.run_line_magic("config", "AskMagic.rerun = False")
            import os

            os.environ["CADET_RERUN"] = "1"
        else:
            import os

            os.environ.pop("CADET_RERUN", None)
            ip.run_line_magic("config", "AskMagic.rerun = True")
        ip.run_cell_magic("ask", "--model model", "Orders per status?")
        assert model.prompts == [] and ip.user_ns["_ask"].rows == first.rows
    import os

    os.environ.pop("CADET_RERUN", None)


def test_rerun_without_a_record_and_after_a_schema_change_are_one_line(ip):
    line = usage_error(ip, "ask", "--rerun", "A question never asked?")
    assert "no SQL is recorded for this question" in line and "without --rerun" in line
    ask(
        ip,
        "SELECT customer, sum(amount) AS total FROM orders GROUP BY customer",
        question="Spent per customer?",
    )
    ip.run_cell_magic("sql", "", "ALTER TABLE orders ADD COLUMN note VARCHAR")
    try:  # the schema changed, the SQL still runs: answered, with a warning
        ip.run_cell_magic("ask", "--model model --rerun", "Spent per customer?")
        r = ip.user_ns["_ask"]
        assert r.ok and any("schema changed" in w for w in r.warnings)
    finally:
        ip.run_cell_magic("sql", "", "ALTER TABLE orders DROP COLUMN note")
    ip.run_cell_magic("sql", "", "ALTER TABLE orders RENAME COLUMN customer TO client")
    try:
        model = CountingModel(fake_model())
        ip.user_ns["model"] = model
        ip.run_cell_magic("ask", "--model model --rerun", "Spent per customer?")
        r = ip.user_ns["_ask"]
        assert not r.ok and model.prompts == [] and "\n" not in r.message
        assert r.message.startswith("The recorded SQL no longer runs here (the schema changed")
        assert "Run %%ask without --rerun" in r.message
    finally:
        ip.run_cell_magic("sql", "", "ALTER TABLE orders RENAME COLUMN client TO customer")


def test_result_rerun_on_a_connection(ip):
    import duckdb

    con = duckdb.connect()
    con.execute(ORDERS)
    first, _ = ask(ip, PER_STATUS)
    again = cadet_magic.rerun(first, con)
    assert again.ok and again.rows == first.rows and again.model_calls == 0


def test_provenance_is_json_and_holds_no_secret(ip):
    ip.run_line_magic("config", "AskMagic.api_key = 'sk-very-secret-123'")
    try:
        r, _ = ask(ip, PER_STATUS)
    finally:
        ip.run_line_magic("config", "AskMagic.api_key = ''")
    p = r.provenance
    text = json.dumps(p)
    assert "sk-very-secret-123" not in text and "cancelled" not in text  # no key, no rows
    assert p["question"] == "Orders per status?" and p["sql"] == PER_STATUS
    assert p["engine"] == "duckdb" and p["database"]["schema_fingerprint"]
    assert p["attempts"][0]["outcome"] == "ok" and p["version"] and p["share"] == "samples"
    # IPython's display formatter writes it as the output's metadata
    data, meta = ip.display_formatter.format(r)
    assert meta["cadet"] == p and "text/html" in data


def test_keep_and_examples_in_later_prompts(ip, tmp_path):
    first, _ = ask(ip, PER_STATUS)
    out = ip.run_line_magic("cadet", "keep")
    assert "Kept: 'Orders per status?'" in repr(out)
    lines = (tmp_path / ".cadet" / "examples.jsonl").read_text().splitlines()
    pair = json.loads(lines[-1])
    assert (
        pair["sql"] == PER_STATUS
        and pair["database"] == first.provenance["database"]["fingerprint"]
    )
    r, model = ask(ip, ONLY_2025, question="Orders per status in 2025?")
    prompt = human(model.prompts[0])
    assert "<examples>" in prompt and PER_STATUS in prompt
    assert r.provenance["examples"]["used"] == ["Orders per status?"]
    assert "Kept examples used (1): 'Orders per status?'" in render_text(r)
    listing = repr(ip.run_line_magic("cadet", "examples"))
    assert "1 kept answer(s)" in listing and PER_STATUS in listing
    # an unrelated question gets none
    _, model = ask(ip, "SELECT max(amount) AS m FROM orders", question="Largest amount ever?")
    assert "<examples>" not in human(model.prompts[0])


def test_bad_lines_of_the_examples_file_one_warning_nothing_lost(ip, tmp_path, caplog):
    ask(ip, PER_STATUS)
    ip.run_line_magic("cadet", "keep")
    path = tmp_path / ".cadet" / "examples.jsonl"
    good = path.read_text()
    path.write_text("not json\n" + good + '{"question": 3}\n')
    with caplog.at_level("WARNING", logger="cadet_magic"):
        r, model = ask(ip, ONLY_2025, question="Orders per status in 2025?")
    warnings = [rec.getMessage() for rec in caplog.records if "examples.jsonl" in rec.getMessage()]
    assert len(warnings) == 1 and "2 line(s)" in warnings[0] and "line 1, 3" in warnings[0]
    assert PER_STATUS in human(model.prompts[0])  # the good line is still used
    ip.run_line_magic("cadet", "keep")
    text = path.read_text()
    assert text.startswith("not json\n" + good + '{"question": 3}\n')  # nothing lost
    assert "line(s) are not kept answers" in repr(ip.run_line_magic("cadet", "examples"))


def test_a_kept_answer_that_no_longer_passes_the_check_is_dropped_with_a_note(ip, tmp_path):
    from cadet_magic.kept_answers import signature, user_key

    first, _ = ask(ip, PER_STATUS)
    path = tmp_path / ".cadet" / "examples.jsonl"
    path.parent.mkdir(exist_ok=True)
    fingerprint = first.provenance["database"]["fingerprint"]
    bad = {
        "question": "Orders per status, deleted?",
        "sql": "DELETE FROM orders",
        "database": fingerprint,
    }
    bad["signature"] = signature(user_key(), path, bad)  # kept by this user, in this folder
    path.write_text(json.dumps(bad) + "\n")
    r, model = ask(ip, ONLY_2025, question="Orders per status in 2025?")
    assert "DELETE" not in human(model.prompts[0])
    assert "dropped: its SQL no longer passes the check" in r.provenance["examples"]["dropped"][0]
    assert "dropped" in render_text(r)


def test_keep_without_an_answer_is_one_line(ip):
    magics = ip.magics_manager.registry["AskMagic"]
    saved = magics.last
    magics.last = None
    try:
        assert "nothing to keep yet" in usage_error(ip, "cadet", "keep")
    finally:
        magics.last = saved


def test_a_rerun_is_not_counted_in_the_session_metrics(ip):
    ask(ip, PER_STATUS)
    metrics = ip.magics_manager.registry["AskMagic"].metrics
    before = json.dumps(metrics.rows(), default=str)
    ip.run_cell_magic("ask", "--rerun", "Orders per status?")
    assert ip.user_ns["_ask"].ok
    assert json.dumps(metrics.rows(), default=str) == before


def write_notebook(path, cell: str, sql: str) -> None:
    """A saved notebook whose one ``%%ask`` cell recorded ``sql`` for its question."""
    question = cell.split("\n", 1)[1]
    output = {
        "output_type": "display_data",
        "data": {"text/plain": "answer"},
        "metadata": {"cadet": {"question": question, "sql": sql}},
    }
    nb = {
        "cells": [{"cell_type": "code", "source": cell, "outputs": [output], "metadata": {}}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


#: Where a rerun may find its SQL: (the kernel's own notebook file or None, the other notebook's
#: cell, the rerunning cell, the notebook the SQL comes from or None).
WHERE_RECORDED = [
    ("told its file: only that file", "own.ipynb", "%%ask --con con\nOrders?", None),
    ("not told: never the same cell beside it", None, "%%ask --con con\nOrders?", None),
    ("not told: never the same words beside it", None, "%%ask --con db2\nOrders?", None),
]


@pytest.mark.parametrize("case", WHERE_RECORDED, ids=[c[0] for c in WHERE_RECORDED])
def test_a_rerun_takes_only_the_notebooks_own_record(ip, tmp_path, monkeypatch, case):
    from cadet_magic.conversation import recorded_sql

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    _, own, other_cell, source = case
    write_notebook(tmp_path / "other.ipynb", other_cell, PER_STATUS)
    namespace = {}
    if own:
        write_notebook(tmp_path / own, "%%ask --con con\nSomething else?", ONLY_2025)
        namespace["__session__"] = str(tmp_path / own)
    found = recorded_sql("Orders?", namespace=namespace, cell="%%ask --con con --rerun\nOrders?")
    if source is None:
        assert found is None
    else:
        assert found[0] == PER_STATUS and found[1]["source"].endswith(source)
    if not own:  # through the magic too: one line saying why, no model asked
        ip.user_ns["con"] = None  # (None: %sql's connection)
        result = ip.run_cell("%%ask --con con --rerun\nOrders?", store_history=True)
        assert "cannot tell which notebook it runs" in str(result.error_in_exec)


def test_not_told_its_file_a_rerun_uses_this_sessions_answer_or_says_it_cannot_tell(
    ip, tmp_path, monkeypatch
):
    """As after a JupyterLite reload: a new session, the kernel not told its notebook, a saved
    notebook beside it with the very same cell: it is not read (it may have come from someone
    else); `%env JPY_SESSION_NAME` names the notebook, whose record then reruns."""
    from cadet_magic.conversation import History

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    ip.magics_manager.registry["AskMagic"].history = History()
    write_notebook(tmp_path / "saved.ipynb", "%%ask\nOrders per status?", PER_STATUS)
    result = ip.run_cell("%%ask --rerun\nOrders per status?", store_history=True)
    assert isinstance(result.error_in_exec, UsageError)
    assert "cannot tell which notebook it runs" in str(result.error_in_exec)
    assert "JPY_SESSION_NAME" in str(result.error_in_exec)
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "saved.ipynb"))
    result = ip.run_cell("%%ask --rerun\nOrders per status?", store_history=True)
    assert result.success, result.error_in_exec
    r = ip.user_ns["_ask"]
    assert r.ok and r.model_calls == 0 and r.sql == PER_STATUS
    assert r.provenance["rerun_of"]["source"].endswith("saved.ipynb")


#: Notebook files that are not notebooks: each gives no record at once (never blocks, never
#: reads without end).
NOT_A_NOTEBOOK = ["fifo", "dev_zero_link", "folder", "not_json", "too_large"]


@pytest.mark.parametrize("kind", NOT_A_NOTEBOOK)
def test_a_rerun_never_blocks_on_what_the_notebook_path_names(ip, tmp_path, monkeypatch, kind):
    import os
    import threading

    from cadet_magic import conversation

    path = tmp_path / "nb.ipynb"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero_link":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "not_json":
        path.write_text("{not json")
    else:
        monkeypatch.setattr(conversation, "NOTEBOOK_BYTES", 100)
        write_notebook(path, "%%ask\nOrders per status?", PER_STATUS + " " * 200)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    found = []

    def read() -> None:
        found.append(conversation.notebook_records(path))
        found.append(conversation.recorded_sql("Orders per status?", namespace={}))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(60)  # a blocked open of a FIFO would never return (not a timing figure)
    assert not reader.is_alive() and found == [[], None]


#: Answers whose result columns are named after values (an honest DuckDB PIVOT; fallback pandas
#: code steered to name a column after every SSN): below samples neither a follow-up's prompt
#: nor the provenance carries those names.
SSNS = [f"{n}-45-67{n % 100:02d}" for n in range(301, 331)]
PIVOT = "PIVOT (SELECT customer, status, amount FROM orders) ON status USING sum(amount)"
SSN_CODE = "result = pd.DataFrame({' '.join(df['ssn']): [1]})"


def _ssn_con():
    import duckdb

    con = duckdb.connect()
    con.execute(ORDERS)
    con.execute("CREATE TABLE people (name VARCHAR, ssn VARCHAR)")
    con.executemany("INSERT INTO people VALUES (?, ?)", [(f"p{i}", s) for i, s in enumerate(SSNS)])
    return con


@pytest.mark.parametrize("share", ["schema", "stats", "samples"])
def test_follow_up_column_names_from_values_are_not_sent_below_samples(share):
    from cadet_magic.api import ask as ask_api

    con = _ssn_con()
    fallback = f"```sql\nSELECT ssn FROM people\n```\n```python\n{SSN_CODE}\n```"
    first = ask_api(
        "Per customer and status?", con=con, share=share, model=fake_model(sql_reply(PIVOT))
    )
    assert first.ok and "cancelled" in first.columns  # a value, as a column name
    steered = ask_api(
        "People?",
        con=con,
        share=share,
        max_attempts=1,
        model=fake_model(sql_reply("SELECT ssnn FROM people"), fallback),
    )
    assert steered.ok and steered.answered_by == "fallback" and SSNS[0] in steered.columns[0]
    for earlier, values in ((first, ["cancelled", "paid"]), (steered, SSNS)):
        model = CountingModel(fake_model(sql_reply("SELECT 1 AS n")))
        later = ask_api("only some", con=con, share=share, model=model, follow=earlier)
        sent = json.dumps(later.prompts) + json.dumps([earlier.provenance, later.provenance])
        if share == "samples":
            assert all(v in json.dumps(later.prompts) for v in values[:1])
            continue
        assert not any(v in sent for v in values), share
        assert "(column " in json.dumps(later.prompts)
    # names of the schema and names written in the query stay
    named = ask_api(
        "Per status?",
        con=con,
        share=share,
        model=fake_model(sql_reply("SELECT status, count(*) AS n FROM orders GROUP BY 1")),
    )
    assert named.provenance["columns"] == ["status", "n"]
