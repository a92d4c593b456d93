"""The fallback's boundary, third round: what a confined child could still reach.

- no run sees anything of another run: the child of a later run scans its own heap for an
  earlier run's rows (model code that passes the syntax-tree check, through ``ctypes``);
- the kernel bounds a result by its decoded size before converting it (a few KB of Arrow
  holding 10**8 nulls, compressed buffers, an unknown time zone), written straight to the
  result pipe by code that escaped its namespace;
- Landlock from ABI 1 up, the capability drop, and the rest of the filter (System V shared
  memory, priority, CPU pinning and scheduling of other processes, the kernel log);
- where confinement is missing the code does not run unless ``fallback_unconfined``.

End to end through ``ask()`` and ``%%ask`` with a scripted model, and fed to the worker
directly (``execute_isolated``, below the syntax-tree check).
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import sqlite3
import sys

import pandas as pd
import pytest

from cadet_magic.api import ask
from cadet_magic.display import mimebundle
from cadet_magic.fallback import confine, warm, worker
from cadet_magic.fallback.code_check import check_code
from tests.conftest import need
from tests.fallback.hostile_corpus import RSS_SLACK, rss
from tests.helpers import fake_model, sql_reply

LINUX = sys.platform.startswith("linux")

#: An earlier run's personal data; the later run's code looks for what follows the prefix.
PREFIX = "canary-earlier-" + "run-"
SECRET = PREFIX + "7f3e9a51"

#: Model code that reads its own process's heap (every mapped page around a fresh buffer)
#: and returns every string starting with PREFIX: what a child forked from a worker that
#: once held another run's rows would find there.
SCAN = """ct = pd.errors.ctypes
libc = ct.CDLL(None)
buf = ct.create_string_buffer(3000)
page = 4096
base = ct.addressof(buf) // page * page
def mapped(p):
    return libc.msync(ct.c_void_p(p), page, 1) == 0
lo = base
while mapped(lo - page):
    lo -= page
hi = base
while mapped(hi + page):
    hi += page
tag = ('canary-earlier-' + 'run-').encode()
found = set()
p = lo
while p <= hi:
    chunk = ct.string_at(p, page)
    i = chunk.find(tag)
    while i >= 0:
        found.add(chunk[i:i + 27].decode('latin-1'))
        i = chunk.find(tag, i + 1)
    p += page
result = pd.DataFrame({'found': sorted(found) or ['none'], 'pages': (hi - lo) // page})
"""

#: Model code that escaped its namespace writes a crafted result frame straight to its
#: result pipe: ``{table}`` is an Arrow table expression, ``{options}`` the writer's options.
FORGED = """im = np.ma.extras.ma.inspect.importlib.import_module
o = im('o' + 's')
pa = im('pya' + 'rrow')
st = im('str' + 'uct')
t = {table}
sink = pa.BufferOutputStream()
w = pa.ipc.new_stream(sink, t.schema, options={options})
w.write_table(t)
w.close()
body = bytes(sink.getvalue())
head = b'{{"ok": true}}'
frame = st.pack('>I', len(head)) + head + st.pack('>Q', len(body)) + body
for fd in range(3, 32):
    try:
        o.write(fd, frame)
        o.abort()
    except Exception:
        pass
result = 0
"""
NULLS = FORGED.format(table="pa.table({'n': pa.nulls(10**8)})", options="None")
ZSTD = FORGED.format(
    table="pa.table({'z': pa.array(np.zeros(2 * 10**7))})",
    options="pa.ipc.IpcWriteOptions(compression='zstd')",
)
ZONE = FORGED.format(
    table="pa.table({'t': pa.array([0], pa.timestamp('s', tz='dateutil//etc/passwd'))})",
    options="None",
)


@pytest.fixture(autouse=True)
def linux():
    need(LINUX, "the confinement this checks is Linux's")


@pytest.mark.parametrize("code", [SCAN, NULLS, ZSTD, ZONE], ids=["scan", "nulls", "zstd", "zone"])
def test_hostile_programs_pass_the_syntax_tree_check(code):
    assert check_code(code).ok  # so the boundary below is what stops them


def _people(n: int = 300) -> pd.DataFrame:
    return pd.DataFrame({"name": [f"{SECRET}-{i}" for i in range(n)], "v": range(n)})


def test_a_later_run_finds_nothing_of_an_earlier_one_in_its_memory():
    first = worker.execute_isolated("result = df", _people(), timeout=20)
    assert first.ok and SECRET in str(first.result["name"].iloc[0])
    later = worker.execute_isolated(SCAN, pd.DataFrame({"x": [1]}), timeout=30)
    assert later.ok, later.error
    assert int(later.result["pages"].iloc[0]) > 100  # it did read its heap
    assert not any(SECRET in str(v) for v in later.result["found"])


QUESTION = "Totals?"
FAILED_SQL = [sql_reply("SELECT amout FROM people"), sql_reply("SELECT amoutt FROM people")]


def _fallback(sql: str, code: str) -> str:
    return f"```sql\n{sql}\n```\n```python\n{code}\n```"


def _people_db() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE people (name TEXT, v INTEGER)")
    con.executemany("INSERT INTO people VALUES (?, ?)", _people().itertuples(index=False))
    con.execute("CREATE TABLE other (x INTEGER)")
    con.execute("INSERT INTO other VALUES (1)")
    con.commit()
    return con


def test_the_secret_of_an_earlier_question_through_ask(model_writes_select):
    con = _people_db()
    first = fake_model(*FAILED_SQL, _fallback("SELECT name, v FROM people", "result = df"))
    r = ask("Everyone?", con=con, model=first, max_attempts=2)
    assert r.ok and r.answered_by == "fallback" and SECRET in str(r.df["name"].iloc[0])
    later = fake_model(*FAILED_SQL, _fallback("SELECT x FROM other", SCAN))
    r = ask("Other?", con=con, model=later, max_attempts=2)
    assert r.ok and r.answered_by == "fallback", r.message
    assert not any(SECRET in str(v) for v in r.df["found"])


def test_the_secret_of_an_earlier_question_through_the_magic(ipython_shell, model_writes_select):
    ip = ipython_shell
    ip.user_ns["people_con"] = _people_db()
    ip.user_ns["model"] = fake_model(
        *FAILED_SQL, _fallback("SELECT name, v FROM people", "result = df")
    )
    ip.run_cell_magic("ask", "--model model --con people_con --max-attempts 2", "Everyone?")
    assert ip.user_ns["_ask"].ok
    ip.user_ns["model"] = fake_model(*FAILED_SQL, _fallback("SELECT x FROM other", SCAN))
    ip.run_cell_magic("ask", "--model model --con people_con --max-attempts 2", "Other?")
    r = ip.user_ns["_ask"]
    assert r.ok and not any(SECRET in str(v) for v in r.df["found"])
    # The prompt shows three rows of each table at share="samples" (the people table's names
    # hold SECRET): the display leaves those messages out here, everything else must not hold it.
    assert SECRET not in str(mimebundle(dataclasses.replace(r, prompts=[])))


@pytest.mark.parametrize(
    "code,why",
    [(NULLS, "more than result_bytes"), (ZSTD, "compressed"), (ZONE, "time zone")],
    ids=["nulls", "zstd", "zone"],
)
def test_a_forged_result_is_refused_before_it_is_converted(code, why):
    before = rss()
    r = worker.execute_isolated(code, pd.DataFrame({"a": [1]}), timeout=30)
    assert not r.ok and r.error.kind == "bad_result" and why in r.error.message, r.error
    assert "\n" not in r.error.message  # one line
    assert rss() - before < RSS_SLACK


def test_a_null_column_result_through_ask(model_writes_select):
    con = _people_db()
    model = fake_model(
        *FAILED_SQL,
        _fallback("SELECT x FROM other", NULLS),
        _fallback("SELECT x FROM other", "result = df['x'].sum()"),
    )
    before = rss()
    r = ask(QUESTION, con=con, model=model, max_attempts=2, row_limit=10**9)
    assert rss() - before < RSS_SLACK
    first = r.fallback.attempts[0]
    assert first.category == "bad_result" and "result_bytes" in first.error
    assert "result_bytes" in first.feedback  # the model is told
    assert r.ok and r.df.values.tolist() == [[1]]  # the retry answered


def test_a_null_column_result_through_the_magic(ipython_shell, model_writes_select):
    ip = ipython_shell
    ip.user_ns["people_con"] = _people_db()
    ip.user_ns["model"] = fake_model(
        *FAILED_SQL,
        _fallback("SELECT x FROM other", NULLS),
        _fallback("SELECT x FROM other", "result = df['x'].sum()"),
    )
    before = rss()
    ip.run_cell_magic("ask", "--model model --con people_con --max-attempts 2", QUESTION)
    assert rss() - before < RSS_SLACK
    r = ip.user_ns["_ask"]
    assert r.fallback.attempts[0].category == "bad_result"
    assert "row_limit" in r.fallback.attempts[0].error  # 10**8 rows, row_limit 1000
    assert r.ok and r.df.values.tolist() == [[1]]


def test_a_long_result_is_cut_to_the_row_limit_not_refused():
    big = pd.DataFrame({"x": range(5000)})
    r = worker.run_isolated("result = df", big, timeout=20, row_limit=100)
    assert r.ok and len(r.result) == 101  # one more than the limit: the answer says "cut"


# -- the rest of the filter ------------------------------------------------------------------

LIBC = "libc = pd.errors.ctypes.CDLL(None, use_errno=True)\n"
ERRNO = "e = pd.errors.ctypes.get_errno()\nresult = pd.DataFrame({'r': [r], 'errno': [e]})\n"
CALLS = {
    "create a System V segment": "r = libc.shmget(0, 64 << 20, 0o1000 | 0o600)\n",
    "attach another's segment": "r = libc.shmget({key}, 0, 0)\n",
    "remove another's segment": "r = libc.shmctl({shmid}, 0, 0)\n",
    "renice the kernel": "r = libc.setpriority(0, {kernel}, 19)\n",
    "renice the worker": "r = libc.setpriority(0, {worker}, 19)\n",
    "re-pin the kernel": (
        "m = pd.errors.ctypes.c_ulong(1)\n"
        "r = libc.sched_setaffinity({kernel}, 8, pd.errors.ctypes.byref(m))\n"
    ),
    "idle-prioritise the kernel": (
        "p = pd.errors.ctypes.c_int(0)\n"
        "r = libc.sched_setscheduler({kernel}, 5, pd.errors.ctypes.byref(p))\n"
    ),
    "read the kernel log": (
        "b = pd.errors.ctypes.create_string_buffer(4096)\nr = libc.klogctl(3, b, 4096)\n"
    ),
    # a descriptor made to signal the kernel when I/O is possible on it (signal-driven I/O)
    "fcntl F_SETOWN to the kernel": "r = libc.fcntl(0, 8, {kernel})\n",
    "fcntl F_SETSIG": "r = libc.fcntl(0, 10, 10)\n",
    "fcntl F_SETOWN_EX to the kernel": (
        "o = (pd.errors.ctypes.c_int * 2)(1, {kernel})\n"
        "r = libc.fcntl(0, 15, pd.errors.ctypes.byref(o))\n"
    ),
    "fcntl O_ASYNC": "r = libc.fcntl(0, 4, 0o20000)\n",
    "ioctl FIOSETOWN to the kernel": (
        "o = pd.errors.ctypes.c_int({kernel})\nr = libc.ioctl(0, 0x8901, pd.errors.ctypes.byref(o))\n"
    ),
    "ioctl SIOCSPGRP to the kernel": (
        "o = pd.errors.ctypes.c_int({kernel})\nr = libc.ioctl(0, 0x8902, pd.errors.ctypes.byref(o))\n"
    ),
    "ioctl FIOASYNC": (
        "o = pd.errors.ctypes.c_int(1)\nr = libc.ioctl(0, 0x5452, pd.errors.ctypes.byref(o))\n"
    ),
}


@pytest.fixture(scope="module")
def segment():
    """A same-user System V segment of the kernel's (key, id), removed afterwards."""
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x0CAD7
    shmid = libc.shmget(key, 4096, 0o1000 | 0o600)
    assert shmid >= 0
    yield key, shmid
    libc.shmctl(shmid, 0, 0)  # IPC_RMID


def _segments() -> int:
    with open("/proc/sysvipc/shm") as f:
        return len(f.readlines())


@pytest.mark.parametrize("name", list(CALLS))
def test_the_filter_denies_the_rest(name, segment):
    key, shmid = segment
    w = warm.worker()
    call = CALLS[name].format(key=key, shmid=shmid, kernel=os.getpid(), worker=w.proc.pid)
    niceness, affinity, segments = os.getpriority(0, 0), os.sched_getaffinity(0), _segments()
    worker_niceness = os.getpriority(0, w.proc.pid)
    r = worker.execute_isolated(LIBC + call + ERRNO, pd.DataFrame({"a": [1]}), timeout=10)
    assert r.ok, r.error
    assert r.result.to_dict("records") == [{"r": -1, "errno": 1}]  # EPERM from the filter
    assert os.getpriority(0, 0) == niceness and os.sched_getaffinity(0) == affinity
    assert os.getpriority(0, w.proc.pid) == worker_niceness
    assert _segments() == segments  # nothing left behind, ours still there


def test_the_filter_denies_the_rest_through_ask(segment):
    key, _ = segment
    code = LIBC + CALLS["attach another's segment"].format(key=key) + ERRNO
    model = fake_model(*FAILED_SQL, _fallback("SELECT x FROM other", code))
    r = ask(QUESTION, con=_people_db(), model=model, max_attempts=2)
    assert r.ok and r.df.to_dict("records") == [{"r": -1, "errno": 1}]


#: Check-passing code that makes every descriptor it holds signal the kernel with SIGUSR1 (whose
#: default action ends a process) when I/O becomes possible on it (the result it then writes
#: and the kernel reads is such I/O: five signals reached the kernel before the filter).
SIGNAL_THE_KERNEL = """libc = pd.errors.ctypes.CDLL(None, use_errno=True)
tried = 0
for fd in range(0, 32):
    flags = libc.fcntl(fd, 3, 0)
    if flags < 0:
        continue
    tried += 1
    libc.fcntl(fd, 8, {kernel})
    libc.fcntl(fd, 10, 10)
    libc.fcntl(fd, 4, flags | 0o20000)
    o = pd.errors.ctypes.c_int({kernel})
    libc.ioctl(fd, 0x8901, pd.errors.ctypes.byref(o))
result = pd.DataFrame({{'tried': [tried]}})
"""


def test_the_child_cannot_make_a_shared_descriptor_signal_the_kernel():
    """Through ask() with a scripted hostile model: the kernel receives no signal (it counts
    SIGUSR1 and SIGIO here instead of ending)."""
    import signal
    import time

    got: list[int] = []
    old = {s: signal.signal(s, lambda n, _f: got.append(n)) for s in (signal.SIGUSR1, signal.SIGIO)}
    try:
        code = SIGNAL_THE_KERNEL.format(kernel=os.getpid())
        assert check_code(code).ok
        model = fake_model(*FAILED_SQL, _fallback("SELECT x FROM other", code))
        r = ask(QUESTION, con=_people_db(), model=model, max_attempts=2)
        time.sleep(0.5)  # a signal sent as the result was read would have arrived by now
        assert r.ok and r.df["tried"][0] >= 2  # it held descriptors and tried each
        assert got == []
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


# -- Landlock from ABI 1 up, and the capability drop -----------------------------------------


def _in_child(func) -> int:
    """Runs ``func`` in a forked child; its exit status (0: every assertion held)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            func()
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("abi", range(1, 8))
def test_landlock_of_every_abi_confines_reads_and_writes(abi, tmp_path):
    need(confine.landlock_abi() >= 1, "this kernel has no Landlock")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    readable = confine.readable_dirs()

    def confined() -> None:
        confine.landlock(readable, abi=min(abi, confine.landlock_abi()))
        for path, mode in ((outside, "r"), ("/etc/hostname", "r"), (tmp_path / "new", "w")):
            try:
                open(path, mode).close()
            except PermissionError:
                continue
            raise AssertionError(f"{path} opened ({mode})")
        with open(os.path.join(os.path.dirname(os.__file__), "os.py")) as f:
            assert f.read(1)  # Python's own files stay readable

    assert _in_child(confined) == 0
    assert outside.read_text() == "secret"


def test_capabilities_are_dropped():
    def dropped() -> None:
        confine.drop_capabilities()
        with open("/proc/self/status") as f:
            caps = dict(line.split(":\t") for line in f if line.startswith("Cap"))
        assert int(caps["CapEff"], 16) == 0 and int(caps["CapPrm"], 16) == 0

    assert _in_child(dropped) == 0


# -- where the confinement is missing ---------------------------------------------------------


@pytest.fixture
def no_landlock(monkeypatch):
    """The worker reports a kernel without Landlock (as on Linux before 5.13)."""
    w = warm.worker()
    monkeypatch.setitem(w.info, "landlock_abi", 0)
    return w


def test_without_landlock_the_code_does_not_run_through_ask(
    no_landlock, tmp_path, model_writes_select
):
    marker = tmp_path / "ran"
    code = f"result = df['x'].sum()\n{marker.name!r}"  # nothing observable: it must not run
    model = fake_model(*FAILED_SQL, _fallback("SELECT x FROM other", code))
    r = ask(QUESTION, con=_people_db(), model=model, max_attempts=2)
    assert not r.ok and r.fallback.attempts[0].category == "unavailable"
    last = r.message.splitlines()[-1]
    assert "no Landlock" in last and "AskMagic.fallback_unconfined = True" in last
    model = fake_model(*FAILED_SQL, _fallback("SELECT x FROM other", code))
    r = ask(QUESTION, con=_people_db(), model=model, max_attempts=2, fallback_unconfined=True)
    assert r.ok and r.df.values.tolist() == [[1]]  # the user opted in


def test_without_landlock_the_code_does_not_run_through_the_magic(
    no_landlock, ipython_shell, model_writes_select
):
    ip = ipython_shell
    ip.user_ns["people_con"] = _people_db()
    reply = _fallback("SELECT x FROM other", "result = df['x'].sum()")
    ip.user_ns["model"] = fake_model(*FAILED_SQL, reply)
    ip.run_cell_magic("ask", "--model model --con people_con --max-attempts 2", QUESTION)
    r = ip.user_ns["_ask"]
    assert not r.ok and "fallback_unconfined" in r.message.splitlines()[-1]
    ip.run_line_magic("config", "AskMagic.fallback_unconfined = True")
    try:
        ip.user_ns["model"] = fake_model(*FAILED_SQL, reply)
        ip.run_cell_magic("ask", "--model model --con people_con --max-attempts 2", QUESTION)
    finally:
        ip.run_line_magic("config", "AskMagic.fallback_unconfined = False")
    assert ip.user_ns["_ask"].ok and ip.user_ns["_ask"].df.values.tolist() == [[1]]


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_macos_and_windows_fail_closed(platform):
    line = worker.confinement_refusal(platform=platform)
    assert line and "fallback_unconfined = True" in line and "\n" not in line
