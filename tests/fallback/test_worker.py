"""The isolated worker: the hostile corpus fed to it directly, its confinement, its limits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from cadet_magic.fallback import warm, worker
from cadet_magic.fallback.in_process import CodeRun
from tests.conftest import need
from tests.fallback.hostile_corpus import (
    DF_SECRET,
    ENV_NAME,
    ENV_SECRET,
    RSS_SLACK,
    TIME_SLACK,
    VAR_SECRET,
    leaked,
    names,
    programs,
    rss,
)

LINUX = sys.platform.startswith("linux")
OS = "np.ma.extras.ma.inspect.importlib.import_module('o' + 's')"
OPEN = (
    "np.ma.extras.ma.inspect.importlib.import_module('oper' + 'ator').attrgetter('op' + 'en')"
    "(np.ma.extras.ma.inspect.importlib.import_module('i' + 'o'))"
)


@pytest.fixture
def df():
    return pd.DataFrame({"name": ["ann", "bob"], "amount": [10.0, 32.5]})


@pytest.fixture
def canaries(monkeypatch):
    """A secret in the kernel's environment, a notebook variable and a notebook DataFrame."""
    monkeypatch.setenv(ENV_NAME, ENV_SECRET)
    main = sys.modules["__main__"].__dict__
    frame = pd.DataFrame({"secret": [DF_SECRET] * 3})
    main["CANARY_VAR"], main["canary_df"] = VAR_SECRET, frame
    yield frame
    main.pop("CANARY_VAR", None)
    main.pop("canary_df", None)


def run(code: str, df, timeout: float = 3.0, **kw) -> CodeRun:
    return worker.execute_isolated(code, df, timeout=timeout, **kw)


def benign_answers(df) -> None:
    r = worker.run_isolated("result = df['amount'].sum()", df, timeout=10)
    assert r.ok, r.error
    assert r.result.to_dict("records") == [{"result": 42.5}]


@pytest.mark.parametrize("index", range(len(names())), ids=names())
def test_hostile_program_stays_in_the_worker(index, df, canaries, tmp_path):
    need(LINUX, "the confinement these programs meet is Linux's")
    marker = tmp_path / "marker"
    program = programs(marker)[index]
    before = rss()
    t0 = time.monotonic()
    r = run(program.code, df, timeout=2.0)
    elapsed = time.monotonic() - t0
    kind = "ok" if r.ok else r.error.kind
    assert kind in program.expect, (program.name, r.error)
    assert not marker.exists(), "a side effect happened outside the worker"
    assert not leaked(r.result) and not leaked(r.error) and not leaked(r.output)
    assert canaries["secret"].tolist() == [DF_SECRET] * 3  # the notebook's frame is untouched
    assert elapsed < 2.0 + TIME_SLACK
    assert rss() - before < RSS_SLACK
    benign_answers(df)


def test_environment_is_clean(df, canaries):
    r = run(f"result = ' '.join(sorted({OS}.environ))", df)
    assert r.ok
    names = set(r.result.iloc[0, 0].split())
    assert ENV_NAME not in names
    assert names <= set(warm.clean_environment("/x")), names


def test_working_folder_is_empty_and_private(df):
    r = run(f"result = {OS}.getcwd()", df)
    assert r.ok and os.path.basename(r.result.iloc[0, 0]).startswith("cadet-fallback-")
    assert os.listdir(r.result.iloc[0, 0]) == []


CONFINEMENT = [
    ("exec", f"result = {OS}.execv('/bin/true', ['true'])", "PermissionError"),
    ("system", f"result = {OS}.system('true')", None),  # the shell cannot start: 127
    ("fork", f"result = {OS}.fork()", "PermissionError"),
    ("write", f"result = {OPEN}('/tmp/cadet-confine-probe', 'w')", "PermissionError"),
    ("write in cwd", f"result = {OPEN}('probe.txt', 'w')", "PermissionError"),
    (
        "socket",
        "result = str(np.ma.extras.ma.inspect.importlib.import_module('sock' + 'et').socket())",
        "PermissionError",
    ),
    ("read /etc/passwd", f"result = {OPEN}('/etc/passwd').read()", "PermissionError"),
    ("read home", f"result = str({OS}.listdir({OS}.path.expanduser('~')))", "PermissionError"),
    ("read /root", f"result = str({OS}.listdir('/root'))", "PermissionError"),
    ("read /proc", f"result = {OPEN}('/proc/1/environ').read()", "PermissionError"),
]


@pytest.mark.parametrize(
    "code,error", [c[1:] for c in CONFINEMENT], ids=[c[0] for c in CONFINEMENT]
)
def test_the_kernel_confines_the_child(code, error, df):
    need(LINUX, "seccomp and Landlock are Linux features")
    r = run(code, df)
    if error is None:
        assert r.ok and int(r.result.iloc[0, 0]) != 0  # os.system: exit status of a failed exec
    else:
        assert not r.ok and r.error.type == error, r.error


def test_confinement_is_reported_and_required(df):
    need(LINUX, "seccomp and Landlock are Linux features")
    info = warm.worker().info
    assert info["seccomp"] is True and info["landlock"] is True and info["landlock_abi"] >= 1
    assert worker._required() == ["seccomp", "landlock"]
    assert worker.confinement_refusal(info) is None


def test_time_limit_kills_code_holding_the_gil(df):
    t0 = time.monotonic()
    r = run("result = 7 ** (3 * 10**7)", df, timeout=1.0)
    assert not r.ok and r.error.kind == "timeout"
    assert time.monotonic() - t0 < 1.0 + TIME_SLACK
    assert _children(warm.worker().proc.pid) == []  # nothing keeps running
    benign_answers(df)


def test_memory_limit_is_a_clear_error_and_the_kernel_does_not_grow(df):
    before = rss()
    r = run("result = np.ones(6 * 10**8).sum()", df, memory=1 << 30)
    assert not r.ok and r.error.kind == "memory" and r.error.type == "MemoryError"
    assert rss() - before < RSS_SLACK
    r = run("result = np.ones(10**7).sum()", df, memory=1 << 30)  # 80 MB fits
    assert r.ok and r.result.iloc[0, 0] == 10**7


def test_printed_output_is_capped(df):
    r = run("for i in range(10**5):\n    print('x' * 100)\nresult = 1", df, timeout=20)
    assert r.ok and 0 < len(r.output) < 20_000 and r.output.endswith("...")


def test_ctrl_c_kills_the_child_and_the_next_run_works(df):
    def interrupt() -> None:
        time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGINT)

    warm.worker()  # warm, so the interrupt lands while the code runs
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run("n = 0\nwhile True:\n    n += 1", df, timeout=60)
        assert time.monotonic() - t0 < 1.0 + TIME_SLACK
    finally:
        signal.signal(signal.SIGINT, old)
    assert warm._WORKER is None  # the worker and its child were killed
    benign_answers(df)


@pytest.mark.parametrize(
    "code,expected",
    [
        ("result = df", [{"name": "ann", "amount": 10.0}, {"name": "bob", "amount": 32.5}]),
        (
            "result = df.set_index('name')['amount']",
            [{"name": "ann", "amount": 10.0}, {"name": "bob", "amount": 32.5}],
        ),
        ("result = 3", [{"result": 3}]),
        ("result = 'text'", [{"result": "text"}]),
        ("result = None", [{"result": None}]),
    ],
)
def test_results_come_back_as_frames(code, expected, df):
    r = worker.run_isolated(code, df, timeout=10)
    assert r.ok and r.result.to_dict("records") == expected


@pytest.mark.parametrize(
    "code,kind,type_,line",
    [
        ("x = 1\nresult = 1 / 0", "error", "ZeroDivisionError", 2),
        ("result = df['amout']", "error", "KeyError", 1),
        ("x = 1", "no_result", "NameError", None),
        ("result = len", "bad_result", "TypeError", None),
        ("result = [1, 2]", "bad_result", "TypeError", None),
        ("result = df['name'].unique()", "bad_result", "TypeError", None),
        ("import os", "refused", "CodeRefused", None),
    ],
)
def test_errors_keep_their_shape(code, kind, type_, line, df):
    r = worker.run_isolated(code, df, timeout=10)
    assert not r.ok and (r.error.kind, r.error.type, r.error.line) == (kind, type_, line)


def test_error_text_from_the_worker_is_cut(df):
    r = run("raise ValueError('x' * 5000)", df)
    assert r.error.kind == "error" and len(r.error.message) <= warm.ERROR_WIDTH
    assert warm.cut("a\nb\nc\nd\ne").count("\n") == warm.ERROR_LINES


def test_the_result_is_read_as_plain_arrow_only():
    import pyarrow as pa

    table = pa.table({"a": [1, 2]}).replace_schema_metadata(
        {"pandas": '{"index_columns": ["a"], "columns": []}'}
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    frame = worker.from_ipc(sink.getvalue().to_pybytes())
    assert list(frame.columns) == ["a"]  # the pandas metadata was ignored


def test_the_worker_exits_with_the_kernel(tmp_path):
    script = (
        "import pandas as pd, sys\n"
        "from cadet_magic.fallback import warm, worker\n"
        "worker.run_isolated('result = 1', pd.DataFrame({'a': [1]}), timeout=10)\n"
        "print(warm.worker().proc.pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    kernel = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    pid = int(kernel.stdout.readline())
    assert _alive(pid)
    kernel.kill()
    kernel.wait()
    deadline = time.monotonic() + TIME_SLACK
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - not Linux
        return True


def _children(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except OSError:
        return []
