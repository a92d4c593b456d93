"""Writes the LangGraph graph's drawing into docs/langgraph.md, so the page cannot drift.

The drawing is ``build_graph(...).get_graph().draw_mermaid()``: the pipeline's steps as nodes,
its routes as edges. ``tests/test_langgraph.py`` fails when the page's drawing and the graph's
differ.

    python scripts/langgraph_page.py           # rewrite the drawing in docs/langgraph.md
    python scripts/langgraph_page.py --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "langgraph.md"
BLOCK = re.compile(r"^```mermaid\n.*?^```$", re.S | re.M)


def drawing() -> str:
    """The graph's Mermaid drawing (no connection or model is needed to draw it)."""
    from cadet_magic.langgraph import build_graph

    return build_graph(None, model="scripted:unused.json").get_graph().draw_mermaid()


def render(page: str) -> str:
    """``page`` with its mermaid block replaced by the graph's drawing."""
    block = "```mermaid\n" + drawing().rstrip() + "\n```"
    if not BLOCK.search(page):
        raise SystemExit(f"{PAGE} has no ```mermaid block to write the drawing into")
    return BLOCK.sub(lambda _: block, page, count=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is out of date")
    args = parser.parse_args()
    page = PAGE.read_text()
    new = render(page)
    if args.check:
        return int(new != page)
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
