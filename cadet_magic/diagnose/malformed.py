"""Replies that are not a finished query: cut off, degenerate, with bind placeholders, with
syntax the engine lacks (standard library and sqlglot only).

Each reader looks at the SQL as the model wrote it; the router calls them when the engine
(or the parser) rejected the query, so that the feedback says what really went wrong
instead of echoing "syntax error near ...".

Example:
    >>> placeholders("SELECT * FROM t WHERE a = @name AND b = '@x' AND c = ?")
    ['@name', '?']
    >>> truncated("SELECT name FROM singer WHERE coun", ["country", "name"])
    Cut(tail='coun', completions=('country',))
    >>> degenerate("SELECT a FROM t WHERE a = 1 AND AND AND AND AND")
    'AND'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from cadet_magic.diagnose.found import Cut
from cadet_magic.diagnose.sqlcontext import parse_tree
from cadet_magic.sql.target import Target

_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|--[^\n]*|/\*.*?\*/", re.S)
_PLACEHOLDER = re.compile(r"(?<![\w@:$%])(@\w+|:[A-Za-z_]\w*|\?\d*|%s|%\(\w+\)s|\$\d+)(?![\w(])")
_TOKENS = re.compile(r"\w+|'(?:[^']|'')*'?|\"[^\"]*\"?|<>|!=|<=|>=|\|\||\S")
#: Words after which a query cannot end.
_DANGLING = frozenset(
    "select from where and or not on join by group order having limit offset as in like "
    "between is case when then else inner left right outer full cross union intersect except "
    "with distinct set values into".split()
)
_DANGLING_SIGNS = frozenset(
    {",", ".", "=", "<", ">", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "(", "||"}
)


def _code(sql: str) -> str:
    """``sql`` with string literals, quoted names and comments blanked out."""
    return _STRINGS.sub(lambda m: " " * len(m.group(0)), sql)


def placeholders(sql: str | None) -> list[str]:
    """Bind placeholders the model wrote instead of values (``@x``, ``:x``, ``?``, ``%s``,
    ``$1``), outside strings and comments; casts (``::``) and ``@@`` variables are not.

    Example:
        >>> placeholders("SELECT x::int, $1, :v FROM t WHERE y = %s")
        ['$1', ':v', '%s']
    """
    if not sql:
        return []
    found: list[str] = []
    for m in _PLACEHOLDER.finditer(_code(sql)):
        if m.group(1) not in found:
            found.append(m.group(1))
    return found


def _tokens(sql: str) -> list[str]:
    return _TOKENS.findall(re.sub(r"--[^\n]*|/\*.*?\*/", " ", sql, flags=re.S))


def truncated(sql: str | None, names: Iterable[str] = (), tables: Iterable[str] = ()) -> Cut | None:
    """Signs that the query was cut short: an unterminated string or quoted name, a last
    word after which no query ends (``WHERE``, ``AND``, a comma ...), the beginning of a
    clause keyword (``WHE``), or a last identifier that is the beginning of a real name
    (``coun`` for ``country``; of a table name after FROM or JOIN).

    A last identifier whose only completions are one letter longer is a typo or a plural
    slip (``Document`` for ``Documents``), not a cut.

    Args:
        sql: the query as the model wrote it.
        names: the real table and column names, likeliest first.
        tables: the real table names (for a last word after FROM or JOIN).

    Returns:
        A :class:`~cadet_magic.diagnose.found.Cut`: the last words (``tail``) and the real
        names the last word begins (``completions``); or None.

    Example:
        >>> truncated("SELECT a FROM t GROUP BY")
        Cut(tail='GROUP BY', completions=())
        >>> truncated("SELECT a FROM t WHERE a = 'abc", ["a"])
        Cut(tail="'abc", completions=())
        >>> truncated("SELECT a FROM t WHE", ["a", "t"])
        Cut(tail='WHE', completions=())
        >>> truncated("SELECT a FROM t", ["a", "t"]) is None
        True
        >>> truncated("SELECT id FROM Document", ["Document_ID", "Documents"], ["Documents"])
        >>> truncated("SELECT a FROM part, linei", ["a", "lineitem"], ["part", "lineitem"])
        Cut(tail='linei', completions=('lineitem',))
        >>> truncated("SELECT a FROM pets AS T3 WHERE T3.pet", ["petid", "pets"], ["pets"]).completions
        ('petid',)
    """
    if not sql:
        return None
    text = sql.rstrip()
    if text.endswith(";"):
        return None
    tokens = _tokens(text)
    if not tokens:
        return None
    last = tokens[-1]
    tail = " ".join(tokens[-2:]) if last.lower() == "by" else last
    if last.startswith("'") and (len(last) == 1 or not last.endswith("'")):
        return Cut(last)
    if last.startswith('"') and (len(last) == 1 or not last.endswith('"')):
        inner = last[1:].lower()
        found = [n for n in names if n.lower().startswith(inner) and len(n) > len(inner)]
        return Cut(last, tuple(dict.fromkeys(found))[:12])
    if last.lower() in _DANGLING or last in _DANGLING_SIGNS:
        return Cut(tail)
    if not re.fullmatch(r"[A-Za-z_]\w*", last) or len(last) < 2:
        return None
    names = list(names)
    if last.lower() in {n.lower() for n in names} or last.lower() in _COMPLETE:
        return None
    clause = next(
        (t.lower() for t in reversed(tokens[:-1]) if t.lower() in _CLAUSE_WORDS or t == "("), ""
    )
    if clause in ("from", "join") and tables:  # FROM a, b, c: every name there is a table
        pool = list(tables)
    else:  # anywhere else a name is a column (tables follow FROM and JOIN)
        table_names = {t.lower() for t in tables}
        pool = [n for n in names if n.lower() not in table_names]
    low = last.lower()
    completions = list(
        dict.fromkeys(n for n in pool if n.lower().startswith(low) and len(n) > len(last))
    )
    if any(n.lower() == low + "s" for n in completions):
        return None  # a plural slip (``Treatment`` for ``Treatments``)
    if completions and any(len(n) > len(last) + 1 for n in completions):
        return Cut(last, tuple(completions[:12]))
    if not completions and any(k.startswith(last.lower()) and k != last.lower() for k in _CLAUSES):
        return Cut(last)
    return None


#: Words a finished query can end with that may also begin a name (``NULLS FIRST``).
_COMPLETE = frozenset("asc desc first last nulls end only ties rows row current".split())

#: Words that open the part of a query a name belongs to.
_CLAUSE_WORDS = frozenset(
    "select from join where on group order by having limit and or not set union intersect "
    "except when then else case in like between is".split()
)

#: Clause keywords a cut can end inside of (``WHE``, ``ORD``).
_CLAUSES = frozenset(
    "where group order having limit join inner left from select union intersect except".split()
)


def degenerate(sql: str | None, repeats: int = 4) -> str | None:
    """A run of the same words repeated ``repeats`` times or more in a row (a model stuck in
    a loop): the repeated words, or None.

    Example:
        >>> degenerate("SELECT a, b, a, b, a, b, a, b, a, b FROM t")
        'a , b ,'
        >>> degenerate("SELECT ((((1))))") is None
        True
    """
    if not sql:
        return None
    tokens = [t.lower() for t in _tokens(sql)]
    n_tokens = len(tokens)
    for size in range(1, 9):
        for start in range(n_tokens - size * repeats + 1):
            unit = tokens[start : start + size]
            if all(t in "()" for t in unit):
                continue  # nesting, not repetition
            count = 1
            while tokens[start + count * size : start + (count + 1) * size] == unit:
                count += 1
            if count >= repeats:
                return " ".join(_tokens(sql)[start : start + size])
    return None


def unsupported(sql: str | None, target: Target, tree: Any = None) -> tuple[str, str] | None:
    """The first construct of ``sql`` (read on ``tree`` when given, else parsed) that the
    ``target``'s engine lacks: (name, what to write instead), or None.

    Example:
        >>> sql = "SELECT a FROM t WHERE a < ANY (SELECT b FROM u)"
        >>> unsupported(sql, Target.named("sqlite"))[0]
        'ANY (subquery)'
        >>> unsupported(sql, Target.named("duckdb")) is None
        True
    """
    rules = target.facts.unsupported
    if rules and tree is None:
        tree = parse_tree(sql, target)
    if tree is None or not rules:
        return None
    for node in tree.walk():
        for test, name, instead in rules:
            if test(node):
                return name, instead
    return None
