"""The code check: every hostile program refused, every ordinary pandas program accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cadet_magic.fallback.code_check import CodeCheck, check_code

HERE = Path(__file__).parent
HOSTILE = json.loads((HERE / "hostile.json").read_text())
LEGIT = json.loads((HERE / "legit.json").read_text())


@pytest.mark.parametrize("case", HOSTILE, ids=[c["why"] for c in HOSTILE])
def test_hostile_programs_are_refused(case):
    verdict = check_code(case["code"])
    assert isinstance(verdict, CodeCheck)
    assert not verdict.ok, case["code"]
    assert verdict.issues and verdict.message.startswith("Refused:")
    assert "\n" not in verdict.message


@pytest.mark.parametrize("case", LEGIT, ids=[c["why"] for c in LEGIT])
def test_ordinary_pandas_programs_are_accepted(case):
    verdict = check_code(case["code"])
    assert verdict.ok, verdict.message
    assert verdict.issues == [] and verdict.message == "ok"


def test_the_corpus_covers_every_banned_item():
    codes = "\n".join(c["code"] for c in HOSTILE)
    for item in (
        "import ",
        "from ",
        "__import__",
        "__builtins__",
        "open(",
        "exec(",
        "eval(",
        "compile(",
        "globals(",
        "locals(",
        "vars(",
        "getattr(",
        "setattr(",
        "delattr(",
        "breakpoint(",
        "input(",
        "__globals__",
        "__code__",
        "__class__",
        ".mro()",
        "read_csv",
        "to_csv",
        "to_pickle",
        "to_sql",
        "to_clipboard",
        "style.to_html",
        "pd.io",
        "np.load",
        "np.save",
        "df.query(",
        "df.eval(",
        "sys.",
        "os.",
    ):
        assert item in codes, item
    assert len(HOSTILE) >= 60


def test_issues_carry_lines_and_readable_messages():
    verdict = check_code("a = df.copy()\nimport os\nresult = df.to_csv('x')")
    assert [(i.line, i.code) for i in verdict.issues] == [(2, "import"), (3, "io")]
    assert "line 2" in verdict.message and "line 3" in verdict.message
    assert "to_csv" in str(verdict.issues[1])


def test_syntax_errors_name_their_line():
    verdict = check_code("x = 1\nresult = (")
    assert not verdict.ok and verdict.issues[0].code == "syntax"
    assert verdict.issues[0].line in (2, 3)


def test_query_strings_are_checked_inside():
    assert check_code("result = df.query('amount > 10 and customer == \"ann\"')").ok
    inner = check_code("result = df.eval('amount.to_pickle(\"x\")')")
    assert not inner.ok and "in the `.eval()` string" in inner.issues[0].message
    assert inner.issues[0].line == 1


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        (
            "code_check.py",
            [
                "from __future__ import annotations",
                "import ast",
                "import re",
                "from dataclasses import dataclass, field",
                "from cadet_magic.fallback.code_bindings import Bindings, format_problem, root_name",
                "from cadet_magic.fallback.code_rules import (  # noqa: F401 - the tables stay "
                "importable here",
            ],
        ),
        ("code_bindings.py", ["from __future__ import annotations", "import ast", "import string"]),
        ("code_rules.py", ["from __future__ import annotations"]),
    ],
)
def test_the_check_is_standard_library_only(module, expected):
    source = (Path(__file__).resolve().parents[2] / "cadet_magic" / "fallback" / module).read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports == expected
