"""Reading the ``%%ask`` line: ``--follow`` with or without its number, and a hint for a
mistyped option (the magic's arguments themselves are declared on the magic).
"""

from __future__ import annotations

import re
from typing import Any

from cadet_magic.errors import ConfigurationError


def option_hint(error: str, magic: Any) -> str:
    """The " (did you mean --x?)" for an unknown option in argparse's ``error``, from the options
    of ``magic`` (a function decorated with ``magic_arguments``); "" when none is close.

    >>> def ask(): pass
    >>> ask.parser = type("P", (), {"_option_string_actions": {"--max-attempts": 0, "-m": 0}})
    >>> option_hint("unrecognized arguments: --max-attemps", ask)
    ' (did you mean --max-attempts?)'
    """
    import difflib

    found = re.search(r"unrecognized arguments: (.*)", error)
    options = [o for o in getattr(getattr(magic, "parser", None), "_option_string_actions", {})]
    hints = []
    for word in found.group(1).split() if found else []:
        name = word.split("=", 1)[0]
        if name.startswith("--"):
            hints += difflib.get_close_matches(name, [o for o in options if o.startswith("--")], 1)
    return f" (did you mean {', '.join(dict.fromkeys(hints))}?)" if hints else ""


def follow_arguments(line: str) -> str:
    """The magic's line with ``-f``/``--follow`` given its value: ``--follow=N`` when a number
    follows, else ``--follow=last`` (so that ``%ask --follow only for 2025`` keeps its words).

    >>> follow_arguments("--follow only 2025"), follow_arguments("-f 2 only 2025")
    ('--follow=last only 2025', '--follow=2 only 2025')
    """
    pattern = r"(?<!\S)(?:-f|--follow)(?:=(\S+)|\s+(\d+)(?=\s|$))?(?=\s|$)"
    return re.sub(pattern, lambda m: f"--follow={m.group(1) or m.group(2) or 'last'}", line)


def follow_number(args: Any) -> int | None:
    """``--follow``'s answer number (None: the last), or one clear line."""
    if args.follow in (None, "last"):
        return None
    try:
        return int(args.follow)
    except ValueError:
        raise ConfigurationError(
            f"--follow {args.follow}: give the number of an earlier answer (e.g. --follow 2), "
            "or --follow alone for the last one."
        ) from None
