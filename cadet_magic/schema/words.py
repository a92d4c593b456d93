"""Words out of identifiers and questions, for lexical schema linking (stdlib only).

Identifiers are split at underscores, punctuation, digits and camelCase humps,
lower-cased and reduced by a light stemmer (plurals only), so that
``TV_Channel``, ``tvChannels`` and "TV channels" give the same words.

Example:
    >>> words("HeadOfState, TV_channels; countrylanguage")
    ['head', 'of', 'state', 'tv', 'channels', 'countrylanguage']
    >>> [stem(w) for w in ["countries", "classes", "singers", "status", "bus"]]
    ['country', 'class', 'singer', 'status', 'bus']
"""

from __future__ import annotations

import re

_CHUNK = re.compile(r"[^\W_]+")
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_A-Za-z]+")

#: Function words and question scaffolding: never evidence for a table.
STOPWORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing done down during each either every
    for from further get gets give given had has have having he her here hers him his how
    i if in into is it its itself just let list me more most my no nor not now of off on
    once only or other our ours out over own per please return same she should show so
    some such than that the their theirs them then there these they this those through to
    too under until up very was we were what whatever when where whether which while who
    whom whose why will with would you your yours find display tell know want many much
    """.split()
)

_VOWELS = frozenset("aeiouy")
# Endings that make a word from a word (nation -> nationality); not "count" -> "country".
_SUFFIXES = frozenset(
    """
    s es ed d er ers or ors ing ings ion ions ation ations ity ality al ally ly ment ments
    ance ence ship ships ness ive ist ists ian ians hood dom ure ures age ages ee ees an ans
    e y ic ical tion tions ation ations ant ants ent ents est n t th
    """.split()
) | {""}


def words(text: str) -> list[str]:
    """Lower-cased words of an identifier or a sentence (camelCase and snake_case split).

    Example:
        >>> words("cars_data.MPG, IndepYear 2014")
        ['cars', 'data', 'mpg', 'indep', 'year', '2014']
    """
    out: list[str] = []
    for chunk in _CHUNK.findall(text):
        out.extend(p.lower() for p in _HUMP.findall(chunk))
    return out


def stem(word: str) -> str:
    """A light stemmer: English plurals only (``countries`` -> ``country``).

    Example:
        >>> stem("matches"), stem("cities"), stem("papers"), stem("address")
        ('match', 'city', 'paper', 'address')
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _is_subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def likeness(query: str, name: str) -> float:
    """How well a question word matches a word of a schema name, from 0 to 1.

    1 for the same word; less for a prefix (``nation``/``nationality``), a
    shared stem (``performed``/``performance``) or an abbreviation spelled
    from the word's letters (``dept``/``department``, ``qty``/``quantity``).

    Example:
        >>> likeness("singer", "singer"), likeness("nation", "nationality")
        (1.0, 0.8)
        >>> likeness("performed", "performance"), likeness("department", "dept")
        (0.6, 0.5)
        >>> likeness("average", "age"), likeness("count", "country")
        (0.0, 0.0)
    """
    if query == name:
        return 1.0
    if not (query.isalpha() and name.isalpha()):
        return 0.0
    short, long = (query, name) if len(query) <= len(name) else (name, query)
    if len(short) >= 4 and long.startswith(short):
        rest = long[len(short) :]
        if rest in _SUFFIXES or (len(short) >= 6 and len(rest) <= 3):
            return 0.8
    common = 0
    for a, b in zip(short, long, strict=False):
        if a != b:
            break
        common += 1
    if common >= 5 and {short[common:], long[common:]} <= _SUFFIXES:
        return 0.6
    # An abbreviation in the schema of a longer word in the question.
    if (
        3 <= len(name) < len(query) - 1
        and name[0] == query[0]
        and name[-1] not in _VOWELS
        and _is_subsequence(name, query)
    ):
        return 0.5
    return 0.0
