"""The unit tier's tripwires (tests/conftest.py): a unit test that starts a process, opens a
connection, binds a socket or opens a browser fails, even when the code under test catches the
error it meets."""

from __future__ import annotations

import socket
import subprocess
import threading
import webbrowser
from pathlib import Path

import pytest

from tests.conftest import Tripwire, _tripwires, in_unit_tier


class UnitItem:
    """What the tripwires read of a collected test marked ``unit``."""

    nodeid = "tests/vote/test_x.py::test_x"

    def get_closest_marker(self, name):
        return object() if name == "unit" else None

    class config:
        @staticmethod
        def getoption(name):
            return False


def start_process():
    subprocess.run(["true"], check=False)


def connect():
    with socket.socket() as s:
        s.connect(("127.0.0.1", 9))


def serve():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))


def browse():
    webbrowser.open("http://127.0.0.1:9/")


@pytest.mark.parametrize("act", [start_process, connect, serve, browse])
def test_a_tripped_wire_fails_the_test_even_when_the_code_catches_it(act):
    with pytest.raises(pytest.fail.Exception, match="belongs outside the unit tier"):
        with _tripwires(UnitItem()):
            try:
                act()
            except BaseException:  # noqa: BLE001 - code under test that swallows everything
                pass
    with pytest.raises(Tripwire):  # not an Exception: `except Exception` lets it through
        with _tripwires(UnitItem()):
            try:
                act()
            except Exception:  # noqa: BLE001
                pass


def test_the_wires_are_removed_after_the_test():
    before = (subprocess._fork_exec, socket.socket.connect, socket.socket.bind, webbrowser.open)
    with _tripwires(UnitItem()):
        assert socket.socket.connect is not before[1]
    after = (subprocess._fork_exec, socket.socket.connect, socket.socket.bind, webbrowser.open)
    assert after == before


def test_membership_is_by_file_or_folder():
    here = Path(__file__).parent
    assert in_unit_tier(here / "vote" / "test_tally.py")
    assert not in_unit_tier(here / "test_binder.py")
    assert not in_unit_tier(Path("/elsewhere/tests/vote/test_tally.py"))


def test_a_thread_left_by_an_earlier_test_keeps_its_connections():
    # Spark's gateway or a warm worker's reader may run beside a unit test: only the test's
    # own thread is wired.
    errors: list[BaseException] = []

    def background():
        try:
            serve()
        except BaseException as error:  # noqa: BLE001 - recorded for the assertion
            errors.append(error)

    with _tripwires(UnitItem()):
        thread = threading.Thread(target=background)
        thread.start()
        thread.join()
    assert errors == []
