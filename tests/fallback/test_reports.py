"""Every number the fallback's child reports is bounded to what the code can have: the child
runs whatever the model wrote (the syntax-tree check is not the boundary), so a line number
outside the code's own lines, or its exit status, is data it chose, not a place. Forged
status frames written straight to the result pipe by code that escaped its namespace, and
plain pandas whose MemoryError line depends on the data; through the worker and through
``ask()`` with a scripted hostile model (labelled scripted) at every sharing level."""

from __future__ import annotations

import json
import sqlite3
import sys

import pandas as pd
import pytest

from cadet_magic.api import ask
from cadet_magic.fallback import worker
from tests.conftest import need
from tests.helpers import fake_model, sql_reply

#: A whole column of the data as one number (what the probe sent as a 1,346-digit line).
SSNS = [f"{n:09d}" for n in range(123456789, 123456789 + 40)]
DIGITS = "".join(SSNS)

#: Code that escaped its namespace writes a forged status straight to its result pipe.
FORGED_STATUS = """im = np.ma.extras.ma.inspect.importlib.import_module
o = im('o' + 's')
st = im('str' + 'uct')
get = im('oper' + 'ator').attrgetter
head = get('du' + 'mps')(im('js' + 'on'))({status}).encode()
frame = st.pack('>I', len(head)) + head + st.pack('>Q', 0)
for fd in range(3, 32):
    try:
        o.write(fd, frame)
    except Exception:
        pass
get('_ex' + 'it')(o)({exit})
"""


def forged(line, exit_code: int = 0, kind: str = "memory") -> str:
    """``line``: a value, or Python text computing it in the child (a ``str`` starting ``=``)."""
    shown = line[1:] if isinstance(line, str) and line.startswith("=") else repr(line)
    status = (
        f"{{'ok': False, 'kind': {kind!r}, 'type': 'MemoryError', 'message': 'x', 'line': {shown}}}"
    )
    return FORGED_STATUS.format(status=status, exit=exit_code)


#: The whole column, computed in the child from the data (never written in the code).
FROM_THE_DATA = "=int(''.join(df['ssn']))"


@pytest.fixture(autouse=True)
def linux():
    need(sys.platform.startswith("linux"), "the worker forks its confined child on Linux")


#: (what the child reports as the line, what the kernel keeps): only a line the code has.
LINES = [
    (int(DIGITS), None),
    (10**1000, None),
    (-3, None),
    (0, None),
    (True, None),
    (3.0, None),
    ("2", None),
    (2, 2),
]


@pytest.mark.parametrize(("reported", "kept"), LINES, ids=[str(c[0])[:12] for c in LINES])
def test_a_line_outside_the_code_is_not_kept(reported, kept):
    r = worker.execute_isolated(forged(reported), pd.DataFrame({"a": [1]}), timeout=20)
    assert not r.ok and r.error.kind == "memory"
    assert r.error.line == kept


def test_the_exit_status_a_child_chooses_is_never_reported():
    code = forged(None, exit_code=173).split("head =")[0] + "get('_ex' + 'it')(o)(173)\n"
    r = worker.execute_isolated(code, pd.DataFrame({"a": [1]}), timeout=20)
    assert not r.ok and r.error.kind == "crashed" and "173" not in str(r.error)


def _ssn_db() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE people (name TEXT, ssn TEXT)")
    con.executemany("INSERT INTO people VALUES (?, ?)", [(f"p{i}", s) for i, s in enumerate(SSNS)])
    con.commit()
    return con


def _fallback(sql: str, code: str) -> str:
    return f"```sql\n{sql}\n```\n```python\n{code}\n```"


#: Code that passes the check: the line a MemoryError is raised on is chosen from the data
#: (the first digit of the first SSN picks one of ten lines).
CHOSEN_LINE = (
    "d = int(df['ssn'][0][0])\n"
    + "".join(f"if d == {i}:\n    x = np.ones(10**15)\n" for i in range(10))
    + "result = df\n"
)


@pytest.mark.parametrize("share", ["schema", "stats", "samples"])
def test_no_number_the_child_chooses_reaches_the_model(share):
    replies = [
        *[sql_reply(f"SELECT ssn{'n' * i} FROM people") for i in range(1, 4)],
        _fallback("SELECT ssn FROM people", forged(FROM_THE_DATA)),
        _fallback("SELECT ssn FROM people", CHOSEN_LINE),
        _fallback("SELECT ssn FROM people", "result = df.head(1)"),
    ]
    r = ask("SSNs?", con=_ssn_db(), model=fake_model(*replies), share=share, max_attempts=3)
    sent = json.dumps(r.prompts)
    assert DIGITS[:12] not in sent
    memory = [a for a in r.fallback.attempts if a.category == "code_memory"]
    assert len(memory) == 2
    lines = CHOSEN_LINE.count("\n") + 1
    assert all(a.error is None or DIGITS[:12] not in a.error for a in memory)
    assert "line 1346" not in sent and all(f"line {n}" not in sent for n in range(lines + 1, 60))


#: A forged status whose free-form fields (the exception's type name and message) carry the data.
FREE_FORM = FORGED_STATUS.format(
    status="{'ok': False, 'kind': 'error', 'type': 'X' + ''.join(df['ssn']).replace('-', '_'), "
    "'message': ' '.join(df['ssn']), 'line': 1}",
    exit=0,
)
BAD_RESULT = FORGED_STATUS.format(
    status="{'ok': False, 'kind': 'bad_result', 'type': 'TypeError', "
    "'message': ' '.join(df['ssn']), 'line': None}",
    exit=0,
)


@pytest.mark.parametrize("share", ["schema", "stats", "samples"])
@pytest.mark.parametrize("code", [FREE_FORM, BAD_RESULT], ids=["error", "bad_result"])
def test_no_free_form_field_of_the_child_reaches_the_model_below_samples(share, code):
    replies = [
        *[sql_reply(f"SELECT ssn{'n' * i} FROM people") for i in range(1, 4)],
        _fallback("SELECT ssn FROM people", code),
        _fallback("SELECT ssn FROM people", "result = df.head(1)"),
    ]
    r = ask("SSNs?", con=_ssn_db(), model=fake_model(*replies), share=share, max_attempts=3)
    first = r.fallback.attempts[0]
    assert SSNS[0] in (first.error or "")  # the user sees what the child said
    sent = json.dumps(r.prompts)
    if share == "samples":
        assert SSNS[0] in sent  # the positive control: at samples the child's words are sent
    else:
        assert not any(s in sent for s in SSNS) and "X123" not in sent
        assert not any(s.replace("-", "_") in sent for s in SSNS)
