"""The IPython edge: ``%%ask``, ``%ask`` and ``%cadet``.

- :mod:`.magics`: the thin ``Magics`` + ``Configurable`` class, the session's ``DbSession``
  and ``SessionMetrics``;
- :mod:`.traits`: its ``%config AskMagic.*`` traits, generated from ``AskOptions``;
- :mod:`.args`: reading the line (``--follow``, a number as the question's first word, option
  hints);
- :mod:`.output`: the ``UsageError`` line of a failure and the other one-line messages.
"""

from __future__ import annotations

from cadet_magic.magic.magics import AskMagic

__all__ = ["AskMagic"]
