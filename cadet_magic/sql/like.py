"""SQL ``LIKE`` matching in linear time (standard library only).

A ``LIKE`` pattern written by the model is data, not code: translating it into a regular
expression (``%`` -> ``.*``) lets a pattern such as ``'%%%%%%%%%%%%%%%%%%%%#'`` backtrack for
ever against a value that does not end in ``#``. Here a pattern is split at its ``%`` signs into
segments; the first must match at the start of the value, the last at its end, and every other
one is found at its leftmost place after the one before (leftmost is always right for ``%``).
Each segment is found in one pass over the value (``str.find``, or a bit-parallel scan when it
holds ``_``), and each pass starts where the previous one ended, so a match costs time linear
in the value's length (times the segment's length in machine words), whatever the pattern.

Example:
    >>> like_match("%ran%", "France")
    True
    >>> like_match("Fr_nce", "France"), like_match("Fr_nce", "Frannce")
    (True, False)
    >>> like_match("%" * 30 + "#", "a" * 5000)
    False
    >>> like_match("100\\\\%", "100%", escape="\\\\"), like_match("100\\\\%", "1000", escape="\\\\")
    (True, False)
"""

from __future__ import annotations

from collections.abc import Sequence

#: A segment's element: a character to match, or None for ``_`` (any one character).
Element = str | None


def segments(pattern: str, escape: str | None = None) -> list[list[Element]]:
    """The pattern split at its (unescaped) ``%`` signs; ``_`` becomes None. Runs of ``%``
    give empty segments in the middle, which match anywhere.

    Example:
        >>> segments("a%_b%%c")
        [['a'], [None, 'b'], [], ['c']]
        >>> segments("50!%", escape="!")
        [['5', '0', '%']]
    """
    parts: list[list[Element]] = [[]]
    chars = iter(pattern)
    for ch in chars:
        if escape is not None and ch == escape:
            parts[-1].append(next(chars, escape))
        elif ch == "%":
            parts.append([])
        elif ch == "_":
            parts[-1].append(None)
        else:
            parts[-1].append(ch)
    return parts


def _matches_at(segment: Sequence[Element], value: str, at: int) -> bool:
    if at < 0 or at + len(segment) > len(value):
        return False
    return all(e is None or value[at + i] == e for i, e in enumerate(segment))


def find_segment(segment: Sequence[Element], value: str, start: int = 0) -> int:
    """The leftmost index at or after ``start`` where ``segment`` matches, or -1.

    One pass over the value: ``str.find`` for plain text, else a bit-parallel (shift-and)
    scan where bit ``i`` of the state says the segment's first ``i + 1`` elements match.

    Example:
        >>> find_segment(list("an"), "France"), find_segment(["a", None, "c"], "France")
        (2, 2)
        >>> find_segment([None, "x"], "France")
        -1
    """
    if not segment:
        return start if start <= len(value) else -1
    if all(e is not None for e in segment):
        return value.find("".join(segment), start)  # type: ignore[arg-type]
    k = len(segment)
    anything = 0
    masks: dict[str, int] = {}
    for i, e in enumerate(segment):
        if e is None:
            anything |= 1 << i
        else:
            masks[e] = masks.get(e, 0) | 1 << i
    done = 1 << (k - 1)
    state = 0
    for j in range(start, len(value)):
        state = ((state << 1) | 1) & (masks.get(value[j], 0) | anything)
        if state & done:
            return j - k + 1
    return -1


def like_match(pattern: str, value: str, escape: str | None = None) -> bool:
    """Whether ``value`` matches the SQL ``LIKE`` ``pattern`` (case as written; ``escape``
    makes the next character literal), in time linear in ``len(value)``.

    Example:
        >>> [like_match(p, "abcabc") for p in ("abc%", "%abc", "a%c", "%b_a%", "_bc", "")]
        [True, True, True, True, False, False]
        >>> like_match("%", ""), like_match("a%a", "a")
        (True, False)
    """
    parts = segments(pattern, escape)
    if len(parts) == 1:
        return len(parts[0]) == len(value) and _matches_at(parts[0], value, 0)
    first, *middle, last = parts
    if not _matches_at(first, value, 0):
        return False
    pos = len(first)
    end = len(value) - len(last)
    for segment in middle:
        at = find_segment(segment, value, pos)
        if at < 0 or at + len(segment) > end:
            return False
        pos = at + len(segment)
    return pos <= end and _matches_at(last, value, end)
