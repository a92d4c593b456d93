"""Displays: static text/HTML bundles (stdlib) and the live ipywidgets panel (edge).

Importing this package registers the static renderers with :mod:`cadet_magic.result`, which
never imports a display itself (the dependency goes one way: displays -> result).

Example:
    >>> import cadet_magic.display
    >>> from cadet_magic.result import AskResult
    >>> "text/html" in AskResult(question="q?")._repr_mimebundle_()
    True
"""

from cadet_magic.display.static import metadata, mimebundle
from cadet_magic.display.text import render_text
from cadet_magic.result import register_renderers


def with_metadata(result: object) -> tuple[dict[str, str], dict]:
    """A result's bundle and its output metadata (the provenance under ``"cadet"``): what
    IPython's display formatter shows for an :class:`AskResult` once the extension is loaded."""
    return mimebundle(result), metadata(result)  # type: ignore[arg-type]


register_renderers(text=render_text, mimebundle=mimebundle)

__all__ = ["metadata", "mimebundle", "render_text", "with_metadata"]
