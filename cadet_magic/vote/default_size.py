"""The vote's size when the user set none: the measured default for a model that samples."""

from __future__ import annotations

import sys

import cadet_magic.options as options_module
from cadet_magic.options import CANDIDATES_DEFAULT, AskOptions

__all__ = ["CANDIDATES_DEFAULT", "candidates_for"]


def candidates_for(options: AskOptions, stand_in: bool) -> AskOptions:
    """``options`` with ``candidates`` resolved: when None, the options module's
    ``CANDIDATES_DEFAULT`` (read when called) for a model that samples, 1 (no vote) for a scripted stand-in and in the
    browser (JupyterLite), where the vote was not measured.

    Example:
        >>> candidates_for(AskOptions(), stand_in=True).candidates
        1
        >>> candidates_for(AskOptions(candidates=3), stand_in=True).candidates
        3
    """
    if options.candidates is not None:
        return options
    # measured with a model served on this CPU; in the browser (Pyodide) each candidate is
    # another generation in WebAssembly, not measured: there the vote is asked for
    measured = not stand_in and sys.platform != "emscripten"
    return options.replace(candidates=options_module.CANDIDATES_DEFAULT if measured else 1)
