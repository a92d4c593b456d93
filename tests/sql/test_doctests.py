"""The docstring examples of the SQL modules run."""

from __future__ import annotations

import doctest

import pytest

from cadet_magic import api, result
from cadet_magic.sql import functions, limit, rules, validate


@pytest.mark.parametrize(
    "module", [validate, limit, rules, functions, api, result], ids=lambda m: m.__name__
)
def test_doctests(module) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
