import json
from pathlib import Path

import pytest

from cadet_magic.agent.reply import content_text, extract_sql

CASES = json.loads((Path(__file__).parent / "reply_cases.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_extract_sql(case):
    assert extract_sql(case["reply"]) == case["sql"]


def test_content_blocks_are_joined():
    blocks = [{"type": "text", "text": "```sql\nSELECT 1"}, {"type": "text", "text": "\n```"}]
    assert extract_sql(content_text(blocks)) == "SELECT 1"


FALLBACK = json.loads((Path(__file__).parent / "data" / "fallback_code_replies.json").read_text())


@pytest.mark.parametrize("case", FALLBACK["cases"], ids=[c["id"] for c in FALLBACK["cases"]])
def test_fallback_code_without_imports_of_given_names(case):
    from cadet_magic.agent.reply import extract_code
    from cadet_magic.fallback.code_check import check_code

    code = extract_code(case["reply"])
    assert code == case["code"]
    if "import" not in code:
        assert check_code(code).ok


HOSTILE = json.loads((Path(__file__).parent / "data" / "hostile_replies.json").read_text())


def _hostile(case) -> str:
    return case["head"] + case["unit"] * case["times"] + case["tail"]


@pytest.mark.parametrize("case", HOSTILE["cases"], ids=[c["name"] for c in HOSTILE["cases"]])
def test_a_hostile_reply_is_cut_before_anything_reads_it(case):
    """Through ``ask()`` with a **scripted** model: every attempt (SQL and fallback) keeps at
    most the reply bound of the reply, and the question ends with an answer or its reasons."""
    import sqlite3
    from types import SimpleNamespace

    from cadet_magic.agent.reply import MAX_REPLY_CHARS
    from cadet_magic.api import ask

    class Hostile:
        cadet_scripted = True

        def invoke(self, messages):
            return SimpleNamespace(content=_hostile(case))

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE orders (customer TEXT, amount REAL)")
    r = ask(
        "Who ordered?",
        con=con,
        model=Hostile(),
        candidates=1,
        max_attempts=1,
        fallback=case["fallback"],
    )
    assert r.all_attempts and len(_hostile(case)) > MAX_REPLY_CHARS
    assert all(len(a.reply) <= MAX_REPLY_CHARS for a in r.all_attempts)


class CountingText(str):
    """A text that counts the characters its searches scan (``find`` from ``start``)."""

    scanned = 0

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        found = str.find(self, sub, start, len(self) if end is None else end)
        CountingText.scanned += (len(self) if found < 0 else found + len(sub)) - start
        return found


@pytest.mark.parametrize("case", HOSTILE["cases"], ids=[c["name"] for c in HOSTILE["cases"]])
def test_fenced_blocks_read_a_reply_in_one_pass(case):
    """The fence reader's searches scan each character of the (cut) reply about once: its work
    is the reply's length, whatever the reply (a regular expression made it quadratic)."""
    from cadet_magic.agent.reply import fenced_blocks

    text = CountingText(content_text(_hostile(case)))
    CountingText.scanned = 0
    fenced_blocks(text)
    assert 0 < CountingText.scanned <= 2 * len(text) + 8
