"""Schema linking, first half: the tables ranked for a question by lexical evidence (stdlib only).

Words of table names, column names, comments and sample values, split from snake_case/camelCase
and stemmed (plurals), weighted by how rare they are in the catalog (IDF), and matched exactly, by
prefix, by shared stem or as an abbreviation (``dept`` for "department"); compound names split
into words the catalog itself uses (``countrylanguage`` into ``country`` + ``language``) and
adjacent question words joined ("high schooler" for ``Highschooler``); foreign-key neighbours of
matched tables and, more weakly, tables of the same namespace (``sales.*``).
:mod:`cadet_magic.schema.link` packs the ranked tables into the prompt's budget.

Example:
    >>> from cadet_magic.schema.structure import Schema
    >>> s = Schema.from_mapping({
    ...     "singer": ["singer_id", "name", "country"],
    ...     "concert": ["concert_id", "concert_name", "year"],
    ...     "singer_in_concert": ["concert_id", "singer_id"],
    ...     "stadium": ["stadium_id", "location", "capacity"],
    ... })
    >>> [name for name, _ in rank_tables(s, "Which singers performed in a concert in 2014?")]
    ['singer_in_concert', 'singer', 'concert', 'stadium']
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cadet_magic.schema.structure import Schema, Table
from cadet_magic.schema.words import STOPWORDS, likeness, stem, words

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
        >>> from cadet_magic.schema.structure import Schema
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
        #: Memo of the packer's renderings (cadet_magic.schema.link), kept as long as the index.
        self.layout: dict[object, object] = {}
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
        >>> from cadet_magic.schema.structure import Schema
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
        >>> from cadet_magic.schema.structure import Schema
        >>> s = Schema.from_mapping({"city": ["name"], "countrylanguage": ["language"]})
        >>> rank_tables(s, "Which languages are spoken in each country?")[0][0]
        'countrylanguage'
    """
    return index_for(schema).rank(question)
