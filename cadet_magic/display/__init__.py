"""Displays: static text/HTML bundles (stdlib) and the live ipywidgets panel (edge).

Importing this package registers the static renderers with :mod:`cadet_magic.result`, which
never imports a display itself (the dependency goes one way: displays -> result).

Example:
    >>> import cadet_magic.display
    >>> from cadet_magic.result import AskResult
    >>> "text/html" in AskResult(question="q?")._repr_mimebundle_()
    True
"""

from cadet_magic.display.static import mimebundle
from cadet_magic.display.text import render_text
from cadet_magic.result import register_renderers

register_renderers(text=render_text, mimebundle=mimebundle)

__all__ = ["mimebundle", "render_text"]
