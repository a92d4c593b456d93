"""cadet_magic/text.py: the one text-cutting helper and the one [SQL: ...] stripper."""

import doctest

import pytest

import cadet_magic.text as text


def test_doctests():
    assert doctest.testmod(text).failed == 0


@pytest.mark.parametrize(("given", "kwargs", "expected"), [
    ("", {}, ""),
    ("  a  \n b", {}, "a"),
    ("x" * 10, {"width": 5}, "xxxx…"),
    ("x" * 10, {"width": 5, "mark": ""}, "xxxxx"),
    ("one two three", {"width": 9, "at_word": True}, "one two …"),
    ("one two three", {"width": None}, "one two three"),
])  # fmt: skip
def test_first_line(given, kwargs, expected):
    assert text.first_line(given, **kwargs) == expected


class Wrapped(Exception):
    def __init__(self, orig):
        super().__init__("wrapper")
        self.orig = orig


def test_error_text_prefers_the_driver_error():
    assert text.error_text(Wrapped(ValueError("no such table: x\n[SQL: SELECT 1]"))) == (
        "no such table: x"
    )
