"""The integration pages' examples run as written: every fenced ``python`` block of each page,
in order, as the cells of one notebook (a real IPython shell with the extension loaded), with
the model chosen the way the pages say (``CADET_MODEL``), here scripted replies
(``tests/doc_example_replies.json``, not a real LLM), in a fresh working folder."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.conftest import need

ROOT = Path(__file__).resolve().parents[1]
REPLIES = Path(__file__).parent / "doc_example_replies.json"
#: The pages whose examples run here.
PAGES = ("dataframes.md", "langgraph.md", "langchain-tool.md", "mcp.md")

BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def blocks(page: str) -> list[str]:
    return BLOCK.findall((ROOT / "docs" / page).read_text())


@pytest.mark.parametrize("page", PAGES)
def test_the_page_examples_run_as_written(page, ipython_shell, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CADET_MODEL", f"scripted:{REPLIES}")
    if page == "mcp.md":  # the server it starts imports this checkout (the SDK passes on only
        # a few variables: PATH, HOME, ...)
        need(find_spec("mcp") is not None, "the MCP SDK is not installed (pip install -e '.[mcp]')")
        import mcp.client.stdio as stdio

        inherited = stdio.get_default_environment
        monkeypatch.setattr(
            stdio, "get_default_environment", lambda: {**inherited(), "PYTHONPATH": str(ROOT)}
        )
    from cadet_magic.result import AskResult

    cells = blocks(page)
    assert cells, page
    ns = ipython_shell.user_ns
    earlier = {id(v) for v in ns.values() if isinstance(v, AskResult)}
    for cell in cells:
        outcome = ipython_shell.run_cell(cell)
        assert outcome.success, (cell, outcome.error_in_exec or outcome.error_before_exec)
    answers = [v for v in ns.values() if isinstance(v, AskResult) and id(v) not in earlier]
    assert all(a.ok and a.scripted for a in answers), [a.message for a in answers]
    if not answers:  # a tool's or a server's answer is its text
        printed = capfd.readouterr().out
        assert "SQL: " in printed and "No answer" not in printed, printed
