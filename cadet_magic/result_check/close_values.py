"""Which stored values are close to one a query looked for and did not find (stdlib only):
the same value in another case or with other spaces, a slip in spelling, a value a LIKE
pattern nearly matches, a date written in the stored values' own format. The result check
(:mod:`.result_check`) names them in its feedback.

Example:
    >>> close_values("France", ["france", "Spain", "Germany"])
    ('france',)
    >>> one_slip("colour", "color"), one_slip("colour", "flavour")
    (True, False)
"""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import Callable, Iterable

from cadet_magic.sql.like import like_match

#: Close values named in the feedback at most.
MAX_CLOSE = 3
#: How similar (difflib ratio, case ignored) a value must be to count as a spelling slip.
CUTOFF = 0.8
#: Literals longer than this are not checked (free-text searches, not values).
MAX_VALUE_CHARS = 200


def _norm(value: str) -> str:
    return " ".join(value.split()).casefold()


def close_values(
    value: str, candidates: Iterable[object], limit: int = MAX_CLOSE, cutoff: float = CUTOFF
) -> tuple[str, ...]:
    """The stored values close to ``value``: the same up to case and spaces first, then
    spelling slips (difflib, case ignored), most similar first.

    Example:
        >>> close_values(" paris", ["Paris", "PARIS", "Lyon"])
        ('Paris', 'PARIS')
        >>> close_values("Jonh Smith", ["John Smith", "Jane Smyth", "Bob"])
        ('John Smith',)
        >>> close_values("Kaubl", ["Kabul", "Kandahar"])
        ('Kabul',)
        >>> close_values("x", ["y"])
        ()
    """
    texts = list(dict.fromkeys(c for c in candidates if isinstance(c, str) and c != value))
    want = _norm(value)
    same = [c for c in texts if _norm(c) == want]
    if same:
        return tuple(same[:limit])
    by_norm: dict[str, list[str]] = {}
    for c in texts:
        by_norm.setdefault(_norm(c), []).append(c)
    near = difflib.get_close_matches(want, list(by_norm), n=limit, cutoff=cutoff)
    if not near and len(want) >= 4:  # one slip in a short word: difflib's ratio is low
        near = [n for n in by_norm if one_slip(want, n)][:limit]
    return tuple(v for n in near for v in by_norm[n])[:limit]


def _loose(text: str) -> str:
    """Text compared "up to case and spacing": case folded, whitespace removed."""
    return "".join(text.casefold().split())


def one_slip(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter dropped, added, replaced or swapped with the next.

    Example:
        >>> [one_slip("volvo", w) for w in ("vlovo", "volo", "voolvo", "volvi", "ovlov")]
        [True, True, True, True, False]
    """
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        if a[i + 1 :] == b[i + 1 :]:
            return True  # replaced
        return a[i + 2 :] == b[i + 2 :] and a[i : i + 2] == b[i : i + 2][::-1]  # swapped
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1 :] == shorter[i:]  # dropped or added


def _similar(a: str, b: str, cutoff: float) -> float:
    """How similar two normalised strings are: difflib's ratio, or ``cutoff`` for one slip
    in a word of four letters or more (where one slip lowers the ratio most)."""
    ratio = difflib.SequenceMatcher(None, a, b, False).ratio()
    if ratio < cutoff and len(a) >= 4 and one_slip(a, b):
        return cutoff
    return ratio


def _fuzzy_contains(core: str, value: str, cutoff: float) -> float:
    """How well ``core`` matches a stretch of ``value`` (case and spacing ignored): the best
    similarity of the stretches aligned on a matching block; 0 below ``cutoff``.

    Example:
        >>> round(_fuzzy_contains("compter", "Computer Science", 0.8), 2)
        0.93
        >>> _fuzzy_contains("Norht", "NorthDakota", 0.8) >= 0.8
        True
    """
    core, value = _norm(core), _norm(value)
    n = len(core)
    blocks = difflib.SequenceMatcher(None, core, value, False).get_matching_blocks()
    best = 0.0
    for start in {max(0, blk.b - blk.a) for blk in blocks if blk.size}:
        for width in (n - 1, n, n + 1):
            if width >= 1 and start + width <= len(value):
                best = max(best, _similar(core, value[start : start + width], cutoff))
    return best if best >= cutoff else 0.0


def close_to_pattern(
    pattern: str,
    candidates: Iterable[object],
    limit: int = MAX_CLOSE,
    cutoff: float = CUTOFF,
    expired: Callable[[], bool] = lambda: False,
) -> tuple[str, ...]:
    """Stored values a LIKE pattern would match up to case and spacing; failing those, for a
    pattern with one run of plain text (``%text%``, ``text%``...), values holding a stretch
    close to that text (a spelling slip). The pattern is matched in linear time
    (:func:`cadet_magic.sql.like.like_match`), values longer than 800 characters are skipped,
    and nothing more is compared once ``expired()`` says the check's budget is spent.

    Example:
        >>> close_to_pattern("%" * 40 + "#", ["a" * 800])
        ()
        >>> close_to_pattern("% fRANCE%", ["la France", "Spain"])
        ('la France',)
        >>> close_to_pattern("%compter%", ["Computer Science", "History"])
        ('Computer Science',)
    """
    texts = [
        c
        for c in dict.fromkeys(c for c in candidates if isinstance(c, str))
        if len(c) <= 4 * MAX_VALUE_CHARS
    ]
    loose = _loose(pattern)  # matched in linear time (never as a regular expression)
    hits: list[str] = []
    for c in texts:
        if expired():
            return tuple(hits[:limit])
        if like_match(loose, _loose(c)):
            hits.append(c)
    if hits:
        return tuple(hits[:limit])
    core = pattern.strip("%")
    if not 4 <= len(core) <= MAX_VALUE_CHARS or any(ch in core for ch in "%_"):
        return ()
    scored = [(_fuzzy_contains(core, c, cutoff), c) for c in texts if not expired()]
    ranked = sorted((sc for sc in scored if sc[0]), key=lambda sc: -sc[0])
    return tuple(c for _, c in ranked[:limit])


# --------------------------------------------------------------------------- dates as text

#: Date formats a date stored as text is commonly written in (day-first before month-first:
#: both are tried when they parse).
DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d-%m-%Y",
    "%m-%d-%Y",
    "%d.%m.%Y",
    "%Y%m%d",
    "%Y-%m-%d %H:%M:%S",
    "%d %B %Y",
    "%B %d, %Y",
)


def _formats_of(text: str) -> list[str]:
    out = []
    for fmt in DATE_FORMATS:
        try:
            _dt.datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        out.append(fmt)
    return out


def date_variants(value: str, stored: Iterable[object], limit: int = 2) -> tuple[str, ...]:
    """``value`` (a date) rewritten in the formats the ``stored`` text values are written in,
    when those differ from the value's own; empty when the value is no date.

    Example:
        >>> date_variants("2020-01-05", ["05/03/2019", "17/11/2020"])
        ('05/01/2020',)
        >>> date_variants("2020-01-05", ["2019-03-05"]), date_variants("soon", ["2019-03-05"])
        ((), ())
    """
    own = _formats_of(value)
    if not own:
        return ()
    when = _dt.datetime.strptime(value.strip(), own[0])
    counts: dict[str, int] = {}
    for v in stored:
        if isinstance(v, str) and len(v) <= 40:
            for fmt in _formats_of(v):
                counts[fmt] = counts.get(fmt, 0) + 1
    ranked = sorted((f for f in counts if f not in own), key=lambda f: -counts[f])
    out = [when.strftime(f) for f in ranked if counts[f] == max(counts.values())]
    return tuple(dict.fromkeys(v for v in out if v != value))[:limit]
