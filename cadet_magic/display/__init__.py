"""Displays: static text/HTML bundles (stdlib) and the live ipywidgets panel (edge).

A result (:mod:`cadet_magic.result`, plain data) knows no display: :func:`register_formatters`
tells IPython how to show an :class:`~cadet_magic.result.AskResult` (the dependency goes one
way: displays -> result). The extension calls it when it loads; ``ask()`` calls it for the
shell it runs in, when there is one.

Example:
    >>> from cadet_magic.result import AskResult
    >>> "text/html" in mimebundle(AskResult(question="q?"))
    True
"""

from __future__ import annotations

from typing import Any

from cadet_magic.display.plain_text import render_text
from cadet_magic.display.static import metadata, mimebundle
from cadet_magic.result import AskResult


def with_metadata(result: object) -> tuple[dict[str, str], dict]:
    """A result's bundle and its output metadata (the provenance under ``"cadet"``): what
    IPython's display formatter shows for an :class:`AskResult` once the extension is loaded."""
    return mimebundle(result), metadata(result)  # type: ignore[arg-type]


def register_formatters(shell: Any, with_provenance: bool = True) -> None:
    """Lets IPython's ``shell`` display an :class:`AskResult`: its text and HTML bundle, with
    its provenance as output metadata (saved with the notebook) when ``with_provenance``
    (the extension's), else the bundle alone and only where nothing else shows a result yet
    (``ask()`` in a shell without the extension).

    Example:
        >>> from IPython.core.formatters import DisplayFormatter
        >>> shell = type("Shell", (), {"display_formatter": DisplayFormatter()})()
        >>> register_formatters(shell, with_provenance=False)
        >>> data, _ = shell.display_formatter.format(AskResult(question="q?"))
        >>> sorted(data)
        ['text/html', 'text/plain']
    """
    formatter = getattr(getattr(shell, "display_formatter", None), "mimebundle_formatter", None)
    if formatter is None:
        return
    if with_provenance:
        formatter.for_type(AskResult, with_metadata)
        return
    try:
        formatter.lookup_by_type(AskResult)
    except KeyError:
        formatter.for_type(AskResult, mimebundle)


__all__ = ["metadata", "mimebundle", "register_formatters", "render_text", "with_metadata"]
