"""The docstring examples of the fallback modules (and the agent's, which uses them) run."""

from __future__ import annotations

import doctest

import pytest

import cadet_magic.fallback
from cadet_magic import result
from cadet_magic.agent import prompts, reply, routes
from cadet_magic.agent import run as agent_run
from cadet_magic.fallback import check, feedback, protocol, worker
from cadet_magic.fallback import run as fallback_run
from cadet_magic.sql import simple

MODULES = [cadet_magic.fallback, check, fallback_run, feedback, simple, prompts, reply, routes]
MODULES += [agent_run, result, protocol, worker]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_doctests(module) -> None:
    outcome = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert outcome.failed == 0 and outcome.attempted > 0
