"""A LangChain agent on the real local model uses cadet_magic's tool (marker ``llm``).

The model server returns a tool call as text, not as a tool call, so the agent is LangChain's
ReAct agent (``langchain_classic``: the thought, the action and its input written out, the
tool's text read back as the observation), as ``benchmarks/peers_langchain.py`` runs
LangChain's own SQL agent on this model. The same local model writes the tool's SQL. What must
hold whatever the model writes: the agent calls ``ask_database`` with a question in plain
language, the tool answers it through ``ask()`` (its text: the SQL and rows, or why there is no
answer), and the run ends; never whether the final answer is right.
"""

from __future__ import annotations

import pytest

import cadet_magic
from cadet_magic.examples.shop import create_shop
from tests.test_tool import REACT_PROMPT

pytestmark = [
    pytest.mark.llm,
    pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset:DeprecationWarning"),
]


def test_a_react_agent_on_the_local_model_uses_the_tool(llm):
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate

    shop = create_shop()
    tool = cadet_magic.as_tool(
        shop, model=llm.chat_model(), candidates=1, model_timeout=llm.TIMEOUT
    )
    agent = create_react_agent(llm.chat_model(), [tool], PromptTemplate.from_template(REACT_PROMPT))
    run = AgentExecutor(
        agent=agent,
        tools=[tool],
        return_intermediate_steps=True,
        handle_parsing_errors=True,
        max_iterations=4,
    )
    out = run.invoke({"input": "How many customers are there?"})
    calls = [(a, o) for a, o in out["intermediate_steps"] if a.tool == "ask_database"]
    assert calls, out["intermediate_steps"]
    action, observation = calls[0]
    assert isinstance(action.tool_input, str) and action.tool_input.strip()
    assert observation.startswith(("SQL: ", "No answer")), observation
    assert isinstance(out["output"], str)
    shop.close()
