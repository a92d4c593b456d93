"""cadet_magic.as_tool: the agent as a LangChain tool, with scripted models (stored replies, not
a real LLM): its one argument, its text (SQL, rows, agreement, warnings; a failure cut to the
sharing level), and a LangChain ReAct agent calling it. The real local model drives such an
agent in tests/llm/test_tool_agent.py."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

import cadet_magic
from cadet_magic.llm import ScriptedModel
from tests.helpers import fake_model, sql_reply

#: A ReAct prompt (the variables LangChain's create_react_agent fills in), in our own words.
REACT_PROMPT = """Answer the question as well as you can. These tools are available:

{tools}

Write in this format:

Question: the question to answer
Thought: what to do next
Action: the tool to use, one of [{tool_names}]
Action Input: what to give the tool
Observation: what the tool returned
... (Thought, Action, Action Input and Observation may repeat)
Thought: I now know the final answer
Final Answer: the answer to the question

Question: {input}
Thought:{agent_scratchpad}"""


@pytest.fixture
def shop():
    con = duckdb.connect()
    con.execute("CREATE TABLE orders (id INT, city VARCHAR, amount DOUBLE)")
    con.execute("INSERT INTO orders VALUES (1, 'Oslo', 10), (2, 'Lyon', 32.5), (3, 'Oslo', 7.5)")
    yield con
    con.close()


def scripted(question: str, *replies: str) -> ScriptedModel:
    return ScriptedModel({question: [sql_reply(r) for r in replies]})


def test_one_question_argument_and_a_description_naming_the_tables(shop):
    tool = cadet_magic.as_tool(shop, model=scripted("q", "SELECT 1"), candidates=1)
    assert tool.name == "ask_database"
    assert list(tool.args) == ["question"]
    assert tool.args["question"]["type"] == "string"
    assert "Tables: orders." in tool.description and "plain language" in tool.description


def test_the_answer_as_text(shop):
    q = "Total per city?"
    sql = "SELECT city, sum(amount) AS total FROM orders GROUP BY city ORDER BY city"
    tool = cadet_magic.as_tool(shop, model=scripted(q, sql), candidates=1)
    text = tool.invoke({"question": q})
    lines = text.splitlines()
    assert lines[0] == f"SQL: {sql}"
    assert lines[1:5] == ["Rows (2):", "city  total", "Lyon  32.5", "Oslo  17.5"]
    assert "scripted stand-in" in lines[-1]


def test_agreement_and_warnings(shop):
    q = "Orders in Paris?"
    replies = [
        "SELECT count(*) AS n FROM orders WHERE city = 'Oslo'",
        "SELECT count(*) AS n FROM orders",
        "SELECT count(*) AS n FROM orders WHERE city = 'Oslo'",
    ]
    text = cadet_magic.as_tool(shop, model=scripted(q, *replies), candidates=3).invoke(
        {"question": q}
    )
    assert "Agreement: 2 of 3 candidate answers gave this answer" in text
    # no clear lead (2 to 1): the text names the readings, the leading one first
    assert "the answer above is the leading reading" in text
    assert "  0: where city = 'Oslo' (2 votes, leading): " + replies[0] in text
    assert "  1: without city = 'Oslo' (1 vote): " + replies[1] in text
    none = scripted("None?", "SELECT id FROM orders WHERE amount > 1000")
    empty = cadet_magic.as_tool(shop, model=none, candidates=1).invoke({"question": "None?"})
    assert "Warning: No row can match amount > 1000: orders.amount ranges from 7.5 to 32.5" in empty
    # the column's range is a figure of the data: the share=stats level's, not share=schema's
    none = scripted("None?", "SELECT id FROM orders WHERE amount > 1000")
    cut = cadet_magic.as_tool(shop, model=none, candidates=1, share="schema").invoke("None?")
    assert "7.5" not in cut and "range is not shared at share=schema" in cut


def test_a_failure_is_cut_to_the_sharing_level(shop):
    """An engine error quoting a stored value (a cast of the city) reaches the text only at
    ``samples``; below it the text names the attempts' categories."""
    q = "City as a number?"
    bad = "SELECT CAST(city AS INTEGER) AS c FROM orders"
    options = {"candidates": 1, "max_attempts": 1, "fallback": False}
    samples = cadet_magic.as_tool(shop, model=scripted(q, bad), **options).invoke(q)
    schema = cadet_magic.as_tool(shop, model=scripted(q, bad), share="schema", **options).invoke(q)
    assert "Oslo" in samples or "Lyon" in samples
    assert "Oslo" not in schema and "Lyon" not in schema
    assert schema.startswith("No answer") and "not shared at share=schema" in schema


def test_frames_and_errors_in_one_line():
    q = "Rows?"
    tool = cadet_magic.as_tool(
        {"t": pd.DataFrame({"x": [1, 2]})}, model=scripted(q, "SELECT count(*) AS n FROM t")
    )
    assert "\nn\n2" in tool.invoke(q) and "Tables: t." in tool.description
    broken = cadet_magic.as_tool({"t": 42}, model=scripted(q, "SELECT 1"))
    said = broken.invoke(q)
    assert said.startswith("No answer: con['t'] is an int") and "\n" not in said
    with pytest.raises(TypeError, match="row_limt"):
        cadet_magic.as_tool(None, row_limt=3)


@pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset:DeprecationWarning")
def test_a_react_agent_calls_the_tool(shop):
    """LangChain's ReAct agent (the style a server that returns tool calls as text needs),
    driven by a scripted chat model: it calls the tool with a question, reads its text and
    answers from it."""
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate

    q = "Which city spent the most?"
    sql = "SELECT city, sum(amount) AS total FROM orders GROUP BY city ORDER BY total DESC LIMIT 1"
    tool = cadet_magic.as_tool(shop, model=scripted(q, sql), candidates=1)
    agent_model = fake_model(
        f"Thought: the database knows.\nAction: ask_database\nAction Input: {q}",
        "Thought: I now know the final answer\nFinal Answer: Lyon, with 32.5.",
    )
    agent = create_react_agent(agent_model, [tool], PromptTemplate.from_template(REACT_PROMPT))
    run = AgentExecutor(agent=agent, tools=[tool], return_intermediate_steps=True)
    out = run.invoke({"input": q})
    (action, observation), *_ = out["intermediate_steps"]
    assert action.tool == "ask_database" and action.tool_input == q
    assert observation.startswith(f"SQL: {sql}") and "Lyon" in observation
    assert out["output"] == "Lyon, with 32.5."
