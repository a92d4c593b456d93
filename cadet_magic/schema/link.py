"""Schema linking: the tables a question is about, within a character budget (stdlib only).

A large catalog does not fit in a prompt. :func:`link_schema` ranks the tables
by lexical evidence in the question and keeps as many as the budget allows:

* words of table names, column names, comments and sample values, split from
  snake_case/camelCase and stemmed (plurals), weighted by how rare they are in
  the catalog (IDF), and matched exactly, by prefix, by shared stem or as an
  abbreviation (``dept`` for "department");
* compound names split into words the catalog itself uses (``countrylanguage``
  into ``country`` + ``language``) and adjacent question words joined
  ("high schooler" for ``Highschooler``);
* foreign-key neighbours of matched tables (the join tables a question rarely
  names) and, more weakly, tables of the same namespace (``sales.*``).

The ranked tables are then packed greedily: in full detail while they fit, then
without samples and comments, then column names only, so that every table that
is shown is complete enough to query. A schema whose full text fits the budget
is returned whole and unchanged.

Example:
    >>> from cadet_magic.schema.model import Schema
    >>> s = Schema.from_mapping({
    ...     "singer": ["singer_id", "name", "country"],
    ...     "concert": ["concert_id", "concert_name", "year"],
    ...     "singer_in_concert": ["concert_id", "singer_id"],
    ...     "stadium": ["stadium_id", "location", "capacity"],
    ... })
    >>> [name for name, _ in rank_tables(s, "Which singers performed in a concert in 2014?")]
    ['singer_in_concert', 'singer', 'concert', 'stadium']
    >>> link_schema(s, "Which singers performed in a concert?", budget=140).table_names()
    ['singer', 'concert', 'singer_in_concert']
    >>> print(schema_context(s, "Which singers performed in a concert?", budget=140))
    singer(singer_id, name, country)
    concert(concert_id, concert_name, year)
    singer_in_concert(concert_id, singer_id)
    -- 1 more table not shown
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from cadet_magic.schema.model import Column, Schema, Table
from cadet_magic.schema.render import (
    FULL,
    NAMES,
    TYPED,
    render_column,
    render_schema,
    render_table,
)
from cadet_magic.schema.text import STOPWORDS, likeness, stem, words

#: The default character budget of the schema text in the prompt.
DEFAULT_BUDGET = 6000

# How much a word counts, by where it occurs in the table.
_W_TABLE = 1.0
_W_COLUMN = 0.7
_W_VALUE = 0.7
_W_COMMENT = 0.5
_W_NAMESPACE = 0.5
_W_PART = 0.8  # a part of a compound word, relative to the whole
# How much evidence flows from the best foreign-key neighbours and the namespace.
_FK_SHARE = 1.0
# Inexact matches (prefix, shared stem, abbreviation) count for less: likeness ** power.
_FUZZY_POWER = 2.0
_NAMESPACE_SHARE = 0.5
# Question words whose matches are remembered, per index.
_MAX_CACHED_TERMS = 50_000
# Fewer characters than this left over: no list of the tables not shown.
_MIN_TRAILER = 24


def _namespace(table: Table) -> tuple[str | None, str]:
    """(namespace, bare name): ``sales.orders`` -> ("sales", "orders")."""
    if table.schema:
        prefix = table.schema + "."
        bare = table.name[len(prefix) :] if table.name.startswith(prefix) else table.name
        return table.schema, bare
    if "." in table.name:
        ns, bare = table.name.rsplit(".", 1)
        return ns, bare
    return None, table.name


def _add(bag: dict[str, float], text: str | None, weight: float) -> None:
    if not text:
        return
    for w in words(text):
        if w in STOPWORDS:
            continue
        s = stem(w)
        if bag.get(s, 0.0) < weight:
            bag[s] = weight


@dataclass(frozen=True)
class _Doc:
    """What a table says about itself: stemmed word -> weight of its best field."""

    bag: dict[str, float]
    columns: tuple[dict[str, float], ...]


class SchemaIndex:
    """A schema prepared for linking many questions (build once per schema).

    Args:
        schema: the catalog.

    Example:
        >>> from cadet_magic.schema.model import Schema
        >>> idx = SchemaIndex(Schema.from_mapping({"dept": ["dept_no"], "emp": ["emp_id"]}))
        >>> [n for n, s in idx.rank("How many departments are there?") if s > 0]
        ['dept']
    """

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        tables = schema.tables
        self._docs = [self._doc(t) for t in tables]
        vocab = {w for d in self._docs for w in d.bag}
        self._split_compounds(vocab)
        self._postings: dict[str, list[tuple[int, float]]] = {}
        for i, d in enumerate(self._docs):
            for w, weight in d.bag.items():
                self._postings.setdefault(w, []).append((i, weight))
        n = len(tables)
        self._idf = {w: math.log(1.0 + (n + 1) / (len(p) + 0.5)) for w, p in self._postings.items()}
        self._matches: dict[str, list[tuple[str, float]]] = {}
        # Every kind of match shares the first letter: look only there.
        self._by_initial: dict[str, list[str]] = {}
        for w in self._postings:
            self._by_initial.setdefault(w[:1], []).append(w)
        self._full_length: int | None = None
        self._shown: dict[tuple[int, int], tuple[Table, int]] = {}
        self._neighbours = self._link_neighbours()
        self._ns_members: dict[str, list[int]] = {}
        for i, t in enumerate(tables):
            ns = _namespace(t)[0]
            if ns is not None:
                self._ns_members.setdefault(ns.lower(), []).append(i)

    @staticmethod
    def _doc(table: Table) -> _Doc:
        bag: dict[str, float] = {}
        ns, bare = _namespace(table)
        _add(bag, ns, _W_NAMESPACE)
        _add(bag, table.comment, _W_COMMENT)
        columns = []
        keys = {name for fk in table.foreign_keys for name in fk.columns}
        for c in table.columns:
            cbag: dict[str, float] = {}
            _add(cbag, c.name, _W_COLUMN)
            _add(cbag, c.comment, _W_COMMENT)
            if not (c.primary_key or c.name in keys):  # identifiers, as in the prompt
                for v in c.samples:
                    _add(cbag, str(v), _W_VALUE)
            columns.append(cbag)
            for w, weight in cbag.items():
                if bag.get(w, 0.0) < weight:
                    bag[w] = weight
        _add(bag, bare, _W_TABLE)
        return _Doc(bag, tuple(columns))

    def _split_compounds(self, vocab: set[str]) -> None:
        """Adds the parts of compound words (``countrylanguage``) that the catalog uses."""
        for d in self._docs:
            for w, weight in list(d.bag.items()):
                if len(w) < 7 or not w.isalpha():
                    continue
                for i in range(3, len(w) - 2):
                    head, tail = w[:i], stem(w[i:])
                    if head in vocab and tail in vocab:
                        for part in (head, tail):
                            if d.bag.get(part, 0.0) < weight * _W_PART:
                                d.bag[part] = weight * _W_PART
                        break

    def _link_neighbours(self) -> list[set[int]]:
        tables = self.schema.tables
        by_name: dict[str, int] = {}
        for i, t in enumerate(tables):
            by_name[t.name.lower()] = i
        neighbours: list[set[int]] = [set() for _ in tables]
        for i, t in enumerate(tables):
            ns = _namespace(t)[0]
            for fk in t.foreign_keys:
                ref = fk.ref_table.lower()
                j = by_name.get(ref)
                if j is None and ns is not None:
                    j = by_name.get(f"{ns}.{ref}".lower())
                if j is not None and j != i:
                    neighbours[i].add(j)
                    neighbours[j].add(i)
        return neighbours

    def full_length(self) -> int:
        """The length of the whole schema's text (``len(render_schema(schema))``), cached."""
        if self._full_length is None:
            self._full_length = len(render_schema(self.schema))
        return self._full_length

    def shown(self, index: int, detail: int) -> tuple[Table, int]:
        """Table ``index`` as shown at ``detail``, and the length of its text (cached)."""
        key = (index, detail)
        hit = self._shown.get(key)
        if hit is None:
            table = _strip(self.schema.tables[index], detail)
            hit = self._shown[key] = (table, len(render_table(table, dialect=self.schema.dialect)))
        return hit

    def _matches_of(self, term: str) -> list[tuple[str, float]]:
        found = self._matches.get(term)
        if found is None:
            if len(self._matches) > _MAX_CACHED_TERMS:
                self._matches.clear()
            found = []
            for w in self._by_initial.get(term[:1], ()):
                like = likeness(term, w)
                if like > 0.0:
                    found.append((w, like**_FUZZY_POWER))
            self._matches[term] = found
        return found

    def _question_terms(self, question: str) -> list[str]:
        raw = words(question)
        out = [stem(w) for w in raw if w not in STOPWORDS]
        # Adjacent words written apart that the schema writes together.
        for a, b in zip(raw, raw[1:], strict=False):
            if a.isalpha() and b.isalpha() and a not in STOPWORDS and b not in STOPWORDS:
                joined = stem(a + b)
                if any(like >= 0.8 for _, like in self._matches_of(joined)):
                    out.append(joined)
        return list(dict.fromkeys(out))

    def _term_scores(self, question: str) -> list[dict[int, float]]:
        """Per question word: table -> its best IDF-weighted match in that table."""
        out = []
        for term in self._question_terms(question):
            best: dict[int, float] = {}
            for w, like in self._matches_of(term):
                idf = self._idf[w]
                for i, weight in self._postings[w]:
                    value = like * weight * idf
                    if value > best.get(i, 0.0):
                        best[i] = value
            if best:
                out.append(best)
        return out

    def scores(self, question: str) -> list[float]:
        """Per table (catalog order): its own evidence plus that of its surroundings.

        The surroundings are its foreign-key neighbourhood and its namespace,
        scored by how many question words they cover together (each word
        counted once, by its best table), so that the tables of the one
        database a question is about rise together.
        """
        n = len(self._docs)
        own = [0.0] * n
        near = [0.0] * n
        group: dict[str, float] = {}
        for best in self._term_scores(question):
            for i, value in best.items():
                own[i] += value
            for i in range(n):
                v = max((best.get(j, 0.0) for j in self._neighbours[i]), default=0.0)
                near[i] += max(v, best.get(i, 0.0))
            for ns, members in self._ns_members.items():
                group[ns] = group.get(ns, 0.0) + max(best.get(i, 0.0) for i in members)
        out = [own[i] + _FK_SHARE * near[i] for i in range(n)]
        for ns, members in self._ns_members.items():
            for i in members:
                out[i] += _NAMESPACE_SHARE * group.get(ns, 0.0)
        return out

    def rank(self, question: str) -> list[tuple[str, float]]:
        """Table names with their scores, best first (ties in catalog order)."""
        scores = self.scores(question)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [(self.schema.tables[i].name, round(scores[i], 4)) for i in order]

    def column_scores(self, index: int, question: str) -> list[float]:
        """Per column of table ``index``: how much of the question it matches."""
        out = []
        qterms = self._question_terms(question)
        for cbag in self._docs[index].columns:
            total = 0.0
            for term in qterms:
                total += max(
                    (
                        like * cbag[w] * self._idf[w]
                        for w, like in self._matches_of(term)
                        if w in cbag
                    ),
                    default=0.0,
                )
            out.append(total)
        return out


_CACHE: dict[int, SchemaIndex] = {}
_CACHE_SIZE = 8


def index_for(schema: Schema) -> SchemaIndex:
    """The :class:`SchemaIndex` of ``schema``, cached for the last few schema objects.

    Example:
        >>> from cadet_magic.schema.model import Schema
        >>> s = Schema.from_mapping({"t": ["a"]})
        >>> index_for(s) is index_for(s)
        True
    """
    idx = _CACHE.get(id(schema))
    if idx is None or idx.schema is not schema:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        idx = _CACHE[id(schema)] = SchemaIndex(schema)
    return idx


def rank_tables(schema: Schema, question: str) -> list[tuple[str, float]]:
    """The schema's tables ranked for the question: ``[(name, score), ...]``, best first.

    Example:
        >>> from cadet_magic.schema.model import Schema
        >>> s = Schema.from_mapping({"city": ["name"], "countrylanguage": ["language"]})
        >>> rank_tables(s, "Which languages are spoken in each country?")[0][0]
        'countrylanguage'
    """
    return index_for(schema).rank(question)


def _strip(table: Table, detail: int) -> Table:
    """The table as shown at ``detail``: what is not shown is dropped from the copy."""
    if detail == FULL:
        return table
    cols = tuple(
        Column(c.name, c.type if detail == TYPED else "", c.primary_key) for c in table.columns
    )
    return replace(table, columns=cols, comment=None)


def _trim(
    table: Table, scores: list[float], room: int, detail: int = TYPED, dialect: str | None = None
) -> Table | None:
    """The table with its least relevant non-key columns dropped until it fits ``room``.

    Keys (primary and foreign) stay; a comment says how many columns are not shown.
    """
    keys = {c for fk in table.foreign_keys for c in fk.columns}
    base = _strip(table, detail)
    removable = sorted(
        (i for i, c in enumerate(base.columns) if not c.primary_key and c.name not in keys),
        key=lambda i: (scores[i], -i),
    )
    cost = [len(render_column(c, detail, c.name in keys, dialect)) + 2 for c in base.columns]
    over = len(render_table(base, dialect=dialect)) - room
    dropped: set[int] = set()
    for i in removable:
        if over <= 0:
            break
        dropped.add(i)
        over -= cost[i]
    while True:
        note = f"{len(dropped)} more columns not shown" if dropped else None
        columns = tuple(c for i, c in enumerate(base.columns) if i not in dropped)
        cand = replace(base, columns=columns, comment=note)
        if len(render_table(cand, dialect=dialect)) <= room:
            return cand
        rest = [i for i in removable if i not in dropped]
        if not rest:
            return None
        dropped.add(rest[0])


def _only_shown_keys(table: Table, shown: set[str], namespace: str | None) -> Table:
    """Drops foreign keys to tables that are not shown."""
    fks = tuple(
        fk
        for fk in table.foreign_keys
        if fk.ref_table.lower() in shown or f"{namespace}.{fk.ref_table}".lower() in shown
    )
    return table if fks == table.foreign_keys else replace(table, foreign_keys=fks)


def _pack(schema: Schema, question: str, budget: int) -> tuple[Schema, list[str]]:
    idx = index_for(schema)
    scores = idx.scores(question)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    chosen: dict[int, Table] = {}
    used = 0
    for rank, i in enumerate(order):
        for detail in (FULL, TYPED, NAMES):
            table, length = idx.shown(i, detail)
            cost = length + (1 if chosen else 0)
            if used + cost <= budget:
                chosen[i] = table
                used += cost
                break
        else:
            if rank == 0:
                # The best table is too wide even by name: its most relevant columns,
                # in at most half the budget when other tables could use the rest.
                room = budget if len(order) == 1 else budget // 2
                scores_i = idx.column_scores(i, question)
                for detail in (TYPED, NAMES):
                    trimmed = _trim(schema.tables[i], scores_i, room, detail, schema.dialect)
                    if trimmed is not None:
                        chosen[i] = trimmed
                        used += len(render_table(trimmed, dialect=schema.dialect))
                        break
    names = {schema.tables[i].name.lower() for i in chosen}
    tables = tuple(
        _only_shown_keys(chosen[i], names, _namespace(chosen[i])[0]) for i in sorted(chosen)
    )
    left = [schema.tables[i].name for i in order if i not in chosen]
    return Schema(tables=tables, dialect=schema.dialect), left


def _reserve(budget: int) -> int:
    """Room kept for the line about the tables that are not shown."""
    return min(max(_MIN_TRAILER, budget // 20), budget // 2)


def _trailer(left: Iterable[str], room: int) -> str:
    left = list(left)
    if not left:
        return ""
    s = "s" if len(left) > 1 else ""
    head = f"-- {len(left)} more table{s} not shown"
    if room < len(head):
        return ""
    text = head
    names: list[str] = []
    for name in left:
        cand = head + ": " + ", ".join([*names, name])
        if len(cand) + len(", …") > room:
            break
        names.append(name)
        text = cand
    if names and len(names) < len(left):
        text += ", …"
    return text


@dataclass(frozen=True)
class Linked:
    """What :func:`link` chose: the shown ``schema``, its prompt ``text`` and the names left out."""

    schema: Schema
    text: str
    left_out: tuple[str, ...] = ()


def link(schema: Schema, question: str, budget: int | None = DEFAULT_BUDGET) -> Linked:
    """Links the question to the schema within ``budget`` characters of prompt text.

    A schema whose full text fits is kept whole and unchanged. Otherwise the
    best-ranked tables are kept (listed in catalog order), the first in full
    detail and later ones possibly without samples and comments, or with names
    only: the returned ``schema`` holds exactly what the text shows, with
    foreign keys only to tables that are shown. A last line of ``text`` says how
    many tables are left out and names as many of them (best first) as fit.

    Args:
        schema: the whole catalog.
        question: the user's question in plain language.
        budget: the most characters of ``text`` (None: no limit).

    Returns:
        A :class:`Linked` with ``len(text) <= budget``.

    Example:
        >>> from cadet_magic.schema.model import Schema
        >>> s = Schema.from_mapping(
        ...     {"orders": ["id", "amount"], "users": ["id", "name"], "events": ["id", "kind"]}
        ... )
        >>> r = link(s, "total amount of orders", budget=50)
        >>> r.schema.table_names(), r.left_out
        (['orders'], ('users', 'events'))
        >>> print(r.text)
        orders(id, amount)
        -- 2 more tables not shown
    """
    if budget is None or index_for(schema).full_length() <= budget:
        return Linked(schema, render_schema(schema))
    linked, left = _pack(schema, question, budget - _reserve(budget))
    text = render_schema(linked)
    room = budget - len(text) - (1 if text else 0)
    trailer = _trailer(left, room)
    if trailer:
        text = f"{text}\n{trailer}" if text else trailer
    return Linked(linked, text, tuple(left))


def link_schema(schema: Schema, question: str, budget: int | None = DEFAULT_BUDGET) -> Schema:
    """The part of ``schema`` the question needs (``link(...).schema``).

    Returns ``schema`` itself when its full text fits the budget.

    Example:
        >>> from cadet_magic.schema.model import Schema
        >>> s = Schema.from_mapping(
        ...     {"orders": ["id", "amount"], "users": ["id", "name"], "events": ["id", "kind"]}
        ... )
        >>> link_schema(s, "total amount of orders", budget=1000) is s
        True
        >>> link_schema(s, "total amount of orders", budget=50).table_names()
        ['orders']
    """
    return link(schema, question, budget).schema


def schema_context(schema: Schema, question: str, budget: int | None = DEFAULT_BUDGET) -> str:
    """The schema text for the prompt (``link(...).text``): never over ``budget``.

    Example:
        >>> from cadet_magic.schema.model import Schema
        >>> s = Schema.from_mapping(
        ...     {"orders": ["id", "amount"], "users": ["id", "name"], "events": ["id", "kind"]}
        ... )
        >>> print(schema_context(s, "names of users", budget=50))
        users(id, name)
        -- 2 more tables not shown
    """
    return link(schema, question, budget).text
