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
    from cadet_magic.fallback.check import check_code

    code = extract_code(case["reply"])
    assert code == case["code"]
    if "import" not in code:
        assert check_code(code).ok
