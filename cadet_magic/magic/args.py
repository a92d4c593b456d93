"""Reading the ``%%ask`` line: ``--follow`` with or without its number (and when that number
is the question's first word), and a hint for a mistyped option (the magic's arguments themselves are declared on the magic).
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
    """The magic's line with ``-f``/``--follow`` given its value, for argparse: ``--follow=N``
    when a number follows (see :func:`read_follow` for when that number is a question word),
    else ``--follow=last`` (so that ``%ask --follow only for 2025`` keeps its words).

    >>> follow_arguments("--follow only 2025"), follow_arguments("-f 2 only 2025")
    ('--follow=last only 2025', '--follow=2 only 2025')
    """
    pattern = r"(?<!\S)(?:-f|--follow)(?:=(\S+)|\s+(\d+)(?=\s|$))?(?=\s|$)"
    return re.sub(pattern, lambda m: f"--follow={m.group(1) or m.group(2) or 'last'}", line)


def read_follow(line: str, args: Any, answers: int) -> Any:
    """``args`` with ``-f N`` / ``--follow N`` read as the user means it: N is answer N when the
    session has that answer (1 to ``answers``) or when no other word is left on the line for the
    question; otherwise N is the question's first word and the last answer is followed
    (``%ask --follow 2025 only``). ``--follow=N`` always names answer N.

    >>> from types import SimpleNamespace as A
    >>> read_follow("--follow 2025 only", A(follow="2025", question=["only"]), 3)
    namespace(follow='last', question=['2025', 'only'])
    >>> read_follow("-f 2 only", A(follow="2", question=["only"]), 3).follow
    '2'
    >>> read_follow("--follow=2025 only", A(follow="2025", question=["only"]), 3).follow
    '2025'
    >>> read_follow("--follow 2025", A(follow="2025", question=[]), 3).follow
    '2025'
    """
    number = args.follow or ""
    spaced = re.search(rf"(?<!\S)(?:-f|--follow)\s+{re.escape(number)}(?=\s|$)", line)
    if not (number.isdigit() and spaced and args.question) or 1 <= int(number) <= answers:
        return args
    args.follow, args.question = "last", [number, *args.question]
    return args


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
