"""Running the fallback's pandas code: fresh namespace, results, errors, the time limit."""

from __future__ import annotations

import sys
import threading
import time

import pandas as pd
import pytest

from cadet_magic.fallback import in_process
from cadet_magic.fallback.in_process import CodeRun, run_code, to_frame
from tests.helpers import TIME_SLACK

#: An abandoned run returns within this many seconds, well before its 3 s sleep would end.
ABANDONED_BEFORE = 1.5


@pytest.fixture
def df():
    return pd.DataFrame(
        {
            "customer": ["ann", "bob", "ann", "cid"],
            "amount": [10.0, 32.5, 7.5, 3.0],
            "status": ["shipped", "shipped", "cancelled", "completed"],
        }
    )


@pytest.fixture(params=[True, False], ids=["threads", "no-threads (emscripten path)"])
def threads(request, monkeypatch):
    monkeypatch.setattr(in_process, "USE_THREADS", request.param)
    return request.param


def test_the_answer_is_what_result_holds(df, threads):
    r = run_code("result = df.groupby('customer')['amount'].sum().nlargest(2)", df, timeout=5)
    assert isinstance(r, CodeRun) and r.ok and r.error is None
    assert r.result.values.tolist() == [["bob", 32.5], ["ann", 17.5]]
    assert list(r.result.columns) == ["customer", "amount"]


def test_the_namespace_is_fresh(df, threads):
    secret = "user data"  # noqa: F841 - must stay invisible to the code
    sys.modules["__main__"].__dict__["leak_me"] = 1
    try:
        r = run_code("result = leak_me", df, timeout=5)
        assert not r.ok and r.error.type == "NameError" and "leak_me" in r.error.message
        r = run_code("result = secret", df, timeout=5)
        assert not r.ok and r.error.type == "NameError"
    finally:
        del sys.modules["__main__"].__dict__["leak_me"]
    r = run_code("result = sorted(k for k in ['df', 'pd', 'np'])", df, timeout=5)
    assert r.ok


def test_builtins_are_restricted(df, threads):
    for name in ("open", "getattr", "type", "exec", "globals"):
        # The check refuses these by name; at run time they are not there either.
        assert name not in in_process.safe_builtins()
    assert {"len", "sum", "sorted", "print", "ValueError"} <= set(in_process.safe_builtins())


def test_the_code_works_on_a_copy(df, threads):
    r = run_code("df['amount'] = 0\nresult = df['amount'].sum()", df, timeout=5)
    assert r.ok and r.result.values.tolist() == [[0.0]]
    assert df["amount"].sum() == 53.0


def test_a_refused_program_never_runs(df, threads, tmp_path):
    target = tmp_path / "out.csv"
    r = run_code(f"df.to_csv({str(target)!r})\nresult = 1", df, timeout=5)
    assert not r.ok and r.error.kind == "refused" and r.check is not None and not r.check.ok
    assert not target.exists()


@pytest.mark.parametrize(
    ("code", "etype", "line", "words"),
    [
        ("x = 1\nresult = df['amout'].sum()", "KeyError", 2, "amout"),
        ("result = 1 / 0", "ZeroDivisionError", 1, "division"),
        ("a = 1\nb = 2\nresult = df.groupby('nope').sum()", "KeyError", 3, "nope"),
        ("f = lambda r: r['x']\nresult = df.apply(f, axis=1)", "KeyError", 1, "x"),
        ("result = int('abc')", "ValueError", 1, "invalid literal"),
    ],
)
def test_python_errors_come_back_with_type_message_and_line(df, threads, code, etype, line, words):
    r = run_code(code, df, timeout=5)
    assert not r.ok and r.error.kind == "error"
    assert r.error.type == etype and r.error.line == line and words in r.error.message
    assert "Traceback" not in str(r.error) and "\n" not in str(r.error)
    assert str(r.error).startswith(f"{etype} at line {line}: ")


def test_missing_result(df, threads):
    r = run_code("total = df['amount'].sum()", df, timeout=5)
    assert not r.ok and r.error.kind == "no_result" and "result" in r.error.message


def test_unusable_result(df, threads):
    r = run_code("result = lambda: 1", df, timeout=5)
    assert not r.ok and r.error.kind == "bad_result"


def test_the_time_limit_stops_an_infinite_python_loop(df, threads):
    t0 = time.monotonic()
    r = run_code("i = 0\nwhile True:\n    i += 1", df, timeout=0.5)
    elapsed = time.monotonic() - t0
    assert not r.ok and r.error.kind == "timeout" and r.error.line in (2, 3)
    assert elapsed < 0.5 + in_process.GRACE + TIME_SLACK
    assert sys.gettrace() is None or not threads  # nothing left behind in this thread


def test_the_time_limit_stops_a_loop_inside_a_callback(df, threads):
    r = run_code(
        "def slow(r):\n    while True:\n        pass\nresult = df.apply(slow, axis=1)",
        df,
        timeout=0.5,
    )
    assert not r.ok and r.error.kind == "timeout"


def test_except_exception_cannot_swallow_the_time_limit(df, threads):
    code = "while True:\n    try:\n        x = 1\n    except Exception:\n        pass"
    r = run_code(code, df, timeout=0.5)
    assert not r.ok and r.error.kind == "timeout"


def test_the_no_thread_path_starts_no_thread(df, monkeypatch):
    monkeypatch.setattr(in_process, "USE_THREADS", False)
    before = threading.active_count()
    previous = sys.gettrace()
    r = run_code("i = 0\nwhile True:\n    i += 1", df, timeout=0.3)
    assert r.error.kind == "timeout" and threading.active_count() == before
    assert sys.gettrace() is previous  # the kernel's tracer (a debugger) is given back


def test_a_long_single_call_is_abandoned_on_cpython(df, monkeypatch):
    """With threads, a long call the tracer cannot interrupt (one that releases the GIL, as
    many numpy/pandas kernels do; a stand-in sleep here) still gives control back."""
    monkeypatch.setattr(in_process, "USE_THREADS", True)
    monkeypatch.setattr(in_process, "GRACE", 0.2)
    plain = in_process.safe_builtins
    monkeypatch.setattr(in_process, "safe_builtins", lambda: {**plain(), "pause": time.sleep})
    t0 = time.monotonic()
    r = run_code("pause(3)\nresult = 1", df, timeout=0.2)
    assert not r.ok and r.error.kind == "timeout" and "abandoned" in r.error.message
    assert time.monotonic() - t0 < ABANDONED_BEFORE  # the sleep alone would take 3 s


def test_emscripten_means_no_threads():
    assert in_process.USE_THREADS == (sys.platform != "emscripten")


def test_the_audit_hook_blocks_files_even_past_the_check(df, threads, tmp_path, monkeypatch):
    """Defence in depth: if a write slipped past the check, the run-time hook refuses it."""
    monkeypatch.setattr(in_process, "check_code", lambda code: in_process.CodeCheck(True))
    target = tmp_path / "x.csv"
    r = run_code(f"df.to_csv({str(target)!r})\nresult = 1", df, timeout=5)
    assert not r.ok and r.error.type == "PermissionError" and not target.exists()
    with open(target, "w") as f:  # outside the fallback, files work as usual
        f.write("ok")


def test_pandas_missing_is_a_clear_error(df, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    r = run_code("result = 1", df, timeout=5)
    assert not r.ok and r.error.kind == "unavailable" and "pandas" in r.error.message


@pytest.mark.parametrize(
    ("value", "columns", "rows"),
    [
        (3, ["result"], [[3]]),
        ("x", ["result"], [["x"]]),
        (None, ["result"], [[None]]),
        ([1, 2], ["result"], [[1], [2]]),
        ({"n": 1, "m": 2}, ["n", "m"], [[1, 2]]),
        (pd.Series([1, 2], index=["a", "b"], name="n"), ["index", "n"], [["a", 1], ["b", 2]]),
        (pd.Series([5, 6]), ["result"], [[5], [6]]),
        (pd.DataFrame({"a": [1, 2]}, index=[7, 9]), ["a"], [[1], [2]]),
    ],
)
def test_results_become_tables(value, columns, rows):
    frame = to_frame(value)
    assert list(frame.columns) == columns and frame.values.tolist() == rows


def test_grouped_results_keep_their_keys_as_columns():
    df = pd.DataFrame({"k": ["a", "a", "b"], "v": [1, 2, 3]})
    frame = to_frame(df.groupby("k").agg({"v": ["sum", "max"]}))
    assert list(frame.columns) == ["k", "v_sum", "v_max"]
    assert frame.values.tolist() == [["a", 3, 2], ["b", 3, 3]]


@pytest.mark.parametrize(
    "call",
    [
        "df.agg(n, path_or_buf={path!r})",
        "df.apply(n, path_or_buf={path!r})",
        'df.agg(m, expr="amount.to_csv({path!r})")',
        "df.agg(n, path_or_buf='http://127.0.0.1:9/x')",
        "df.agg(s, name='t', con='sqlite:///{path}')",
    ],
    ids=["agg-to_csv", "apply-to_csv", "eval-to_csv", "to_csv-url", "to_sql"],
)
def test_computed_method_names_are_stopped_at_run_time(df, threads, tmp_path, call, monkeypatch):
    """pandas dispatches strings to methods. The check refuses names built at run time; were
    one to slip past it, the audit hook stops what it would do."""
    path = str(tmp_path / "out.csv")
    code = (
        "n = 'to_' + 'csv'\nm = 'ev' + 'al'\ns = 'to_' + 's' + 'ql'\n"
        f"result = {call.format(path=path)}"
    )
    verdict = in_process.check_code(code)
    assert not verdict.ok and verdict.issues[0].code == "dispatch"
    monkeypatch.setattr(in_process, "check_code", lambda code: in_process.CodeCheck(True))
    r = run_code(code, df, timeout=10)
    assert not r.ok and r.error.type == "PermissionError" and r.error.line == 4
    assert list(tmp_path.iterdir()) == []


def test_directory_listings_are_refused_while_the_code_runs(df, threads):
    import os

    plain = in_process.safe_builtins
    try:
        in_process.safe_builtins = lambda: {**plain(), "listdir": os.listdir}
        r = run_code("result = listdir('/')", df, timeout=5)
    finally:
        in_process.safe_builtins = plain
    assert not r.ok and r.error.type == "PermissionError"
    assert os.listdir("/")  # outside the fallback, as usual


def test_no_thread_available_falls_back_to_the_tracer(df, monkeypatch):
    import threading as th

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(in_process, "USE_THREADS", True)
    monkeypatch.setattr(th.Thread, "start", refuse)
    r = run_code("while True:\n    pass", df, timeout=0.3)
    assert not r.ok and r.error.kind == "timeout"
    assert run_code("result = len(df)", df, timeout=5).ok
