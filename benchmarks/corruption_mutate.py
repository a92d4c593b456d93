"""Mutations that inject realistic model mistakes into a correct query (sqlglot trees).

Each mutation takes a parsed gold query, the target engine's live schema, a seeded
``random.Random`` and the target engine, and returns a :class:`Mutant` (the broken SQL in
the target dialect, the category an engine error should be classified as, and the real
names a good suggestion must contain) or None when it does not apply to that query.

Example:
    >>> import random, sqlglot
    >>> from cadet_magic.schema.structure import Schema
    >>> s = Schema.from_mapping({"singer": ["singer_id", "name", "age"]})
    >>> tree = sqlglot.parse_one("SELECT name FROM singer WHERE age > 20", read="sqlite")
    >>> m = wrong_table(tree, s, random.Random(0), "sqlite")
    >>> m.category, m.targets, m.sql.split("FROM ")[1].split()[0] != "singer"
    ('table_not_found', ('singer',), True)
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Tokenizer

from cadet_magic.schema.structure import Schema

SQLGLOT = {"duckdb": "duckdb", "sqlite": "sqlite", "postgresql": "postgres"}
SQLGLOT["spark"] = "spark"
_KEYWORDS = {k.upper() for k in Tokenizer.KEYWORDS} | {
    "ORDER", "GROUP", "USER", "NAME", "YEAR", "DATE", "TIME", "KEY", "VALUE", "TYPE",
}  # fmt: skip
_NUMERIC = ("INT", "DOUBLE", "REAL", "FLOAT", "NUMERIC", "DECIMAL", "BIGINT", "NUMBER")
_TEXT = ("TEXT", "CHAR", "VARCHAR", "CHARACTER", "STRING", "CLOB")


@dataclass(frozen=True)
class Mutant:
    """A broken query and what its diagnosis should say."""

    kind: str
    category: str
    sql: str
    targets: tuple[str, ...] = ()  # lower-cased real names a top-3 suggestion should hit
    #: the details key (or aggregation mistake kind) the diagnosis must also find, if any
    detail: str | None = None


Mutation = Callable[[exp.Expression, Schema, random.Random, str], "Mutant | None"]


def _out(tree: exp.Expression, engine: str) -> str:
    return tree.sql(dialect=SQLGLOT[engine])


def _ctes(tree: exp.Expression) -> set[str]:
    return {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}


def _aliases(tree: exp.Expression) -> dict[str, str]:
    out: dict[str, str] = {}
    ctes = _ctes(tree)
    for t in tree.find_all(exp.Table):
        if t.name and t.name.lower() not in ctes:
            out.setdefault(t.name.lower(), t.name)
            if t.alias:
                out[t.alias.lower()] = t.name
    return out


def _tables(tree: exp.Expression, schema: Schema) -> list[str]:
    ctes = _ctes(tree)
    seen: list[str] = []
    for t in tree.find_all(exp.Table):
        real = schema.table(t.name) if t.name and t.name.lower() not in ctes else None
        if real is not None and real.name not in seen:
            seen.append(real.name)
    return seen


def _has_column(schema: Schema, table: str, column: str) -> bool:
    t = schema.table(table)
    return t is not None and column.lower() in {c.lower() for c in t.column_names()}


def _owner(col: exp.Column, tree: exp.Expression, schema: Schema) -> str | None:
    """The real table a column of the query belongs to, or None (alias, CTE, ...)."""
    aliases = _aliases(tree)
    if col.table:
        table = aliases.get(col.table.lower())
        return table if table and _has_column(schema, table, col.name) else None
    owners = [t for t in _tables(tree, schema) if _has_column(schema, t, col.name)]
    return owners[0] if len(owners) == 1 else None


def _real_columns(tree: exp.Expression, schema: Schema) -> list[tuple[exp.Column, str]]:
    out = []
    for col in tree.find_all(exp.Column):
        if not col.name or isinstance(col.this, exp.Star):
            continue
        owner = _owner(col, tree, schema)
        if owner:
            out.append((col, owner))
    return out


def _all_columns(schema: Schema) -> set[str]:
    return {c.lower() for t in schema.tables for c in t.column_names()}


def _col_type(schema: Schema, table: str, column: str) -> str:
    t = schema.table(table)
    if t is None:
        return ""
    return next((c.type.upper() for c in t.columns if c.name.lower() == column.lower()), "")


def _is_numeric(typ: str) -> bool:
    return any(k in typ for k in _NUMERIC)


def _is_text(typ: str) -> bool:
    return any(k in typ for k in _TEXT)


def typo(name: str, rng: random.Random) -> str:
    """A one-keystroke slip: drop, swap, double or replace a letter.

    Example:
        >>> typo("amount", random.Random(1)) != "amount"
        True
    """
    i = rng.randrange(1, len(name)) if len(name) > 1 else 0
    op = rng.choice(("drop", "swap", "double", "replace"))
    if op == "drop" and len(name) > 3:
        return name[:i] + name[i + 1 :]
    if op == "swap" and i < len(name) - 1 and name[i] != name[i + 1]:
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    if op == "double":
        return name[:i] + name[i] + name[i:]
    vowels = "aeiou"
    c = name[i].lower()
    new = rng.choice([v for v in vowels if v != c]) if c in vowels else "e"
    return name[:i] + new + name[i + 1 :]


def _singular(name: str) -> str:
    return name[:-1] if name.lower().endswith("s") and len(name) > 3 else name


def _fresh(candidates: list[str], taken: set[str]) -> str | None:
    for c in candidates:
        if c.lower() not in taken and c.upper() not in _KEYWORDS and c.isidentifier():
            return c
    return None


def _rename_column(
    tree: exp.Expression, schema: Schema, rng: random.Random, engine: str, kind: str, invent: bool
) -> Mutant | None:
    cols = _real_columns(tree, schema)
    if not cols:
        return None
    col, owner = rng.choice(cols)
    taken = _all_columns(schema) | {t.lower() for t in schema.table_names()}
    name = col.name
    if invent:
        table = _singular(owner).lower()
        options = [f"{table}_{name}", f"{name}_name", f"total_{name}", f"{name}_value"]
        if name.lower().endswith("_id"):
            options.insert(0, name[:-3] + "_number")
        rng.shuffle(options)
        new = _fresh(options, taken)
    else:
        new = _fresh([typo(name, rng) for _ in range(6)], taken) if len(name) >= 3 else None
    if new is None:
        return None
    col.set("this", exp.to_identifier(new))
    return Mutant(kind, "column_not_found", _out(tree, engine), (f"{owner}.{name}".lower(),))


def misspelled_column(tree, schema, rng, engine):
    """A column name with a typo (``amout``)."""
    return _rename_column(tree, schema, rng, engine, "misspelled_column", invent=False)


def invented_column(tree, schema, rng, engine):
    """A plausible column that does not exist (``singer_name`` for ``name``)."""
    return _rename_column(tree, schema, rng, engine, "invented_column", invent=True)


def wrong_table(tree, schema, rng, engine):
    """A table name the schema does not have (plural/singular, typo, prefix)."""
    ctes = _ctes(tree)
    tables = [t for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes]
    tables = [t for t in tables if schema.table(t.name) is not None]
    if not tables:
        return None
    t = rng.choice(tables)
    real = schema.table(t.name).name
    taken = {n.lower() for n in schema.table_names()} | _ctes(tree)
    options = [
        real[:-1] if real.lower().endswith("s") else real + "s",
        typo(real, rng),
        f"{real}_info",
        f"tbl_{real}",
    ]
    rng.shuffle(options)
    new = _fresh(options, taken)
    if new is None:
        return None
    old = t.name
    t.set("this", exp.to_identifier(new))
    if not t.alias:  # columns qualified with the old table name keep pointing at it
        for col in tree.find_all(exp.Column):
            if col.table and col.table.lower() == old.lower():
                col.set("table", exp.to_identifier(new))
    return Mutant("wrong_table", "table_not_found", _out(tree, engine), (real.lower(),))


def dropped_group_by(tree, schema, rng, engine):
    """One GROUP BY column dropped while it stays in the select list."""
    select = tree if isinstance(tree, exp.Select) else None
    if select is None or not select.args.get("group"):
        return None
    if not any(e.find(exp.AggFunc) for e in select.expressions):
        return None
    plain = {
        e.unalias().name.lower() for e in select.expressions if isinstance(e.unalias(), exp.Column)
    }
    group = select.args["group"]
    cands = [g for g in group.expressions if isinstance(g, exp.Column) and g.name.lower() in plain]
    if not cands:
        return None
    g = rng.choice(cands)
    owner = _owner(g, tree, schema)
    g.pop()
    if not group.expressions:
        group.pop()
    targets = (f"{owner}.{g.name}".lower(),) if owner else (g.name.lower(),)
    return Mutant("dropped_group_by", "aggregation_error", _out(tree, engine), targets)


def unqualified_shared_column(tree, schema, rng, engine):
    """A qualified column that two joined tables share, with its qualifier removed."""
    tables = _tables(tree, schema)
    if len(tables) < 2:
        return None
    cands = []
    for col, owner in _real_columns(tree, schema):
        if col.table and sum(_has_column(schema, t, col.name) for t in tables) >= 2:
            cands.append((col, owner))
    if not cands:
        return None
    col, owner = rng.choice(cands)
    name = col.name
    col.set("table", None)
    return Mutant(
        "unqualified_shared_column", "join_error", _out(tree, engine), (f"{owner}.{name}".lower(),)
    )


def text_vs_number(tree, schema, rng, engine):
    """Text compared with a number (``name > 0``) or a number with a word (``age = 'old'``)."""
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return None
    typed = [(c, o, _col_type(schema, o, c.name)) for c, o in _real_columns(select, schema)]
    for cmp in select.find_all(exp.EQ, exp.GT, exp.LT, exp.GTE, exp.LTE, exp.NEQ):
        left, right = cmp.this, cmp.expression
        if isinstance(left, exp.Column) and isinstance(right, exp.Literal):
            owner = _owner(left, tree, schema)
            typ = _col_type(schema, owner, left.name) if owner else ""
            if _is_text(typ) and right.is_string:
                right.replace(exp.Literal.number(rng.choice((0, 1, 100))))
                return Mutant("text_vs_number", "type_mismatch", _out(tree, engine))
            if _is_numeric(typ) and not right.is_string:
                right.replace(exp.Literal.string(rng.choice(("none", "N/A", "high"))))
                return Mutant("text_vs_number", "type_mismatch", _out(tree, engine))
    texts = [(c, o) for c, o, t in typed if _is_text(t)]
    if not texts:
        return None
    col, _ = rng.choice(texts)
    cond = exp.GT(this=col.copy(), expression=exp.Literal.number(0))
    (col.find_ancestor(exp.Select) or select).where(cond, copy=False)
    return Mutant("text_vs_number", "type_mismatch", _out(tree, engine))


_SLIPS = (
    ("SELECT ", "SELEC ", 1),
    (" FROM ", " FORM ", 1),
    (" WHERE ", " WHER ", 1),
    (" GROUP BY ", " GROUP ", 1),
    (" ORDER BY ", " ORDER ", 1),
    (", ", ",, ", 1),
)


def syntax_slip(tree, schema, rng, engine):
    """A misspelled keyword, a doubled comma or a missing closing parenthesis."""
    sql = _out(tree, engine)
    options = [(a, b) for a, b, _ in _SLIPS if a in sql]
    if ")" in sql:
        options.append((")", ""))
    if not options:
        return None
    a, b = rng.choice(options)
    if a == ")":  # the last parenthesis outside quoted names and strings
        code = re.sub(r"'(?:[^']|'')*'|\"[^\"]*\"", lambda m: " " * len(m.group(0)), sql)
        i = code.rfind(")")
        if i < 0:
            return None
        broken = sql[:i] + sql[i + 1 :]
    else:
        broken = sql.replace(a, b, 1)
    return Mutant("syntax_slip", "syntax_error", broken)


#: Functions of other dialects, absent from each engine: (name, argument template).
FOREIGN_FUNCTIONS = {
    "duckdb": [("nvl", "{c}, 0"), ("date_format", "{c}, '%Y'"), ("to_char", "{c}, 'YYYY'"),
               ("charindex", "'a', {c}"), ("substring_index", "{c}, ',', 1"), ("nvl2", "{c}, 1, 0")],
    "sqlite": [("nvl", "{c}, 0"), ("date_format", "{c}, '%Y'"), ("to_char", "{c}, 'YYYY'"),
               ("year", "{c}"), ("len", "{c}"), ("charindex", "'a', {c}")],
    "postgresql": [("nvl", "{c}, 0"), ("ifnull", "{c}, 0"), ("date_format", "{c}, '%Y'"),
                   ("strftime", "'%Y', {c}"), ("year", "{c}"), ("len", "{c}")],
}  # fmt: skip
FOREIGN_FUNCTIONS["spark"] = [
    ("strftime", "'%Y', {c}"), ("julianday", "{c}"), ("to_days", "{c}"),
    ("datefromparts", "{c}, 1, 1"), ("str_to_date", "{c}, '%Y'"), ("charindex", "'a', {c}"),
]  # fmt: skip


def foreign_function(tree, schema, rng, engine):
    """A selected column wrapped in another dialect's function (``NVL``, ``DATE_FORMAT``...)."""
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return None
    cols = [c for c, _ in _real_columns(select, schema)]
    if not cols:
        return None
    col = rng.choice(cols)
    name, args = rng.choice(FOREIGN_FUNCTIONS[engine])
    parsed = [
        col.copy() if a.strip() == "{c}" else exp.maybe_parse(a.strip()) for a in args.split(", ")
    ]
    col.replace(exp.Anonymous(this=name.upper(), expressions=parsed))
    return Mutant("foreign_function", "function_not_found", _out(tree, engine))


def aggregate_in_where(tree, schema, rng, engine):
    """An aggregate condition written in WHERE (HAVING moved up, or ``COUNT(*) > 1`` added)."""
    select = tree if isinstance(tree, exp.Select) else None
    if select is None:
        return None
    having = select.args.get("having")
    if having is not None:
        cond = having.this
        having.pop()
        select.where(cond, copy=False)
    else:
        if not select.args.get("group") and not any(
            e.find(exp.AggFunc) for e in select.expressions
        ):
            return None
        select.where(
            exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1)), copy=False
        )
    return Mutant("aggregate_in_where", "aggregation_error", _out(tree, engine))


def division_by_zero(tree, schema, rng, engine):
    """A selected numeric column divided by zero (DuckDB: integer division ``//``)."""
    select = tree if isinstance(tree, exp.Select) else None
    if select is None:
        return None
    nums = [
        c
        for c, o in _real_columns(select, schema)
        if _is_numeric(_col_type(schema, o, c.name))
        and c.find_ancestor(exp.Select) is select
        and not c.find_ancestor(exp.Where, exp.Group, exp.Order, exp.Join, exp.Having)
    ]
    op = exp.IntDiv if engine == "duckdb" else exp.Div
    if nums:
        col = rng.choice(nums)
        col.replace(exp.Paren(this=op(this=col.copy(), expression=exp.Literal.number(0))))
    else:
        select.select(op(this=exp.Literal.number(1), expression=exp.Literal.number(0)), copy=False)
    return Mutant("division_by_zero", "division_by_zero", _out(tree, engine))


MUTATIONS: dict[str, Mutation] = {
    "misspelled_column": misspelled_column,
    "invented_column": invented_column,
    "wrong_table": wrong_table,
    "dropped_group_by": dropped_group_by,
    "unqualified_shared_column": unqualified_shared_column,
    "text_vs_number": text_vs_number,
    "syntax_slip": syntax_slip,
    "foreign_function": foreign_function,
    "aggregate_in_where": aggregate_in_where,
    "division_by_zero": division_by_zero,
}


# Mistakes real models make (measured on predictions of text-to-SQL systems on Spider dev):
# a join dropped while its columns stay, a qualifier naming a table the query does not join,
# nested aggregates, an aggregate in ORDER BY without GROUP BY, a reply cut short, a bind
# placeholder instead of a literal, a table taken from another database.


def _own_select(tree: exp.Expression) -> exp.Select | None:
    return tree if isinstance(tree, exp.Select) else None


def dropped_join(tree, schema, rng, engine):
    """A JOIN removed while the query still uses its table's columns."""
    select = _own_select(tree)
    if select is None or not select.args.get("joins"):
        return None
    counts: dict[str, int] = {}
    for t in tree.find_all(exp.Table):
        counts[t.name.lower()] = counts.get(t.name.lower(), 0) + 1
    options = []
    for join in select.args["joins"]:
        table = join.this
        if not isinstance(table, exp.Table) or schema.table(table.name) is None:
            continue
        if counts.get(table.name.lower(), 0) != 1:
            continue  # a self-join: the table stays in the query
        real = schema.table(table.name).name
        ref = (table.alias or table.name).lower()
        used = [
            c
            for c in tree.find_all(exp.Column)
            if c.find_ancestor(exp.Join) is not join
            and c.name
            and (
                (c.table and c.table.lower() == ref)
                or (not c.table and _owner(c, tree, schema) == real)
            )
        ]
        if used:
            options.append((join, real, used))
    if not options:
        return None
    join, real, used = rng.choice(options)
    join.pop()
    targets = tuple(dict.fromkeys(f"{real}.{c.name}".lower() for c in used))
    return Mutant("dropped_join", "join_error", _out(tree, engine), targets, "missing_join")


def unjoined_qualifier(tree, schema, rng, engine):
    """A column qualified with a table of the schema that the query does not join."""
    tables = {t.lower() for t in _tables(tree, schema)}
    options = []
    for col, owner in _real_columns(tree, schema):
        if not col.table:
            continue
        others = [
            t.name
            for t in schema.tables
            if t.name.lower() not in tables and _has_column(schema, t.name, col.name)
        ]
        if others:
            options.append((col, owner, others))
    if not options:
        return None
    col, owner, others = rng.choice(options)
    other = rng.choice(others)
    quoted = other.upper() in _KEYWORDS or not other.isidentifier()  # ``"order".id``
    col.set("table", exp.to_identifier(other, quoted=quoted))
    return Mutant(
        "unjoined_qualifier",
        "join_error",
        _out(tree, engine),
        (f"{owner}.{col.name}".lower(),),
        "missing_join",
    )


def nested_aggregate(tree, schema, rng, engine):
    """An aggregate wrapped in another (``MAX(COUNT(*))``), as for "the most ..." questions."""
    select = _own_select(tree)
    if select is None:
        return None
    aggs = [
        a
        for e in select.expressions
        for a in e.find_all(exp.AggFunc)
        if a.find_ancestor(exp.Select) is select and not a.find_ancestor(exp.Window)
    ]
    if not aggs:
        return None
    agg = rng.choice(aggs)
    agg.replace(exp.Max(this=agg.copy()))
    return Mutant(
        "nested_aggregate", "aggregation_error", _out(tree, engine), (), "nested_aggregate"
    )


def aggregate_in_order_by(tree, schema, rng, engine):
    """GROUP BY dropped from a query that orders by an aggregate (``ORDER BY COUNT(*)``)."""
    select = _own_select(tree)
    if select is None or not select.args.get("group") or select.args.get("having"):
        return None
    order = select.args.get("order")
    if order is None or not any(
        a.find_ancestor(exp.Select) is select for a in order.find_all(exp.AggFunc)
    ):
        return None
    group = select.args["group"]
    # grouping by the GROUP BY columns, or by the columns selected without an aggregate,
    # are both fixes
    selected = [
        c
        for e in select.expressions
        for c in e.find_all(exp.Column)
        if not c.find_ancestor(exp.AggFunc) and c.find_ancestor(exp.Select) is select
    ]
    targets = []
    for g in [*group.expressions, *selected]:
        if isinstance(g, exp.Column):
            owner = _owner(g, tree, schema)
            targets.append(f"{owner}.{g.name}".lower() if owner else g.name.lower())
    targets = list(dict.fromkeys(targets))
    group.pop()
    return Mutant(
        "aggregate_in_order_by",
        "aggregation_error",
        _out(tree, engine),
        tuple(targets),
        "missing_group_by",
    )


_CUT_AFTER = re.compile(r"\b(WHERE|AND|OR|ON|JOIN|BY|FROM|SELECT)\b|,|=", re.I)


def cut_short(tree, schema, rng, engine):
    """The reply cut off mid-identifier (``WHERE countr``) or after a keyword (``GROUP BY``)."""
    sql = _out(tree, engine)
    code = re.sub(r"'(?:[^']|'')*'", lambda m: " " * len(m.group(0)), sql)
    real = {n.lower() for n in schema.table_names()} | _all_columns(schema)
    aliases = set(_aliases(tree))
    spots = []
    for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]{3,}", code):
        word = m.group(0)
        if word.lower() not in real or m.start() < 7:
            continue
        for k in range(max(2, (len(word) + 1) // 2), len(word) - 1):
            prefix = word[:k].lower()
            if prefix not in real and prefix not in aliases and prefix.upper() not in _KEYWORDS:
                spots.append((m.start() + k, word))
    if spots and rng.random() < 0.7:
        end, word = rng.choice(spots)
        return Mutant("cut_short", "syntax_error", sql[:end], (word.lower(),), "truncated")
    ends = [m.end() for m in _CUT_AFTER.finditer(code) if m.start() > 7]
    if not ends:
        return None
    return Mutant("cut_short", "syntax_error", sql[: rng.choice(ends)], (), "truncated")


_PLACEHOLDERS = ("@{c}", ":{c}", "?", "%s", "$1")


def placeholder_literal(tree, schema, rng, engine):
    """A literal of a comparison replaced by a bind placeholder (``= @country``)."""
    options = []
    for cmp in tree.find_all(exp.EQ, exp.GT, exp.LT, exp.GTE, exp.LTE, exp.NEQ, exp.Like):
        if isinstance(cmp.this, exp.Column) and isinstance(cmp.expression, exp.Literal):
            options.append(cmp)
    if not options:
        return None
    cmp = rng.choice(options)
    shape = rng.choice(_PLACEHOLDERS)
    cmp.expression.replace(exp.var("PLACEHOLDER_MARK"))
    text = shape.format(c=re.sub(r"\W+", "_", cmp.this.name.lower()))
    sql = _out(tree, engine).replace("PLACEHOLDER_MARK", text, 1)
    return Mutant("placeholder", "syntax_error", sql, (), "placeholders")


def _foreign_tables() -> list[str]:
    """Table names of the other databases of the benchmark data (models borrow them from the
    examples they saw); a few common example names when the data is absent."""
    global _FOREIGN
    if _FOREIGN is None:
        import json

        from workloads.gold import DATA

        names: list[str] = []
        path = DATA / "spider-dev" / "tables.json"
        if path.is_file():
            for db in json.loads(path.read_text()):
                names.extend(db["table_names_original"])
        names = [n for n in names if n.isidentifier() and not n.lower().startswith("sqlite_")]
        _FOREIGN = sorted(dict.fromkeys(names)) or [
            "employees", "departments", "students", "courses", "customers", "products",
        ]  # fmt: skip
    return _FOREIGN


_FOREIGN: list[str] | None = None


def foreign_table(tree, schema, rng, engine):
    """A table of the query replaced by a table of another database (its columns kept)."""
    ctes = _ctes(tree)
    options = []
    for t in tree.find_all(exp.Table):
        real = schema.table(t.name) if t.name and t.name.lower() not in ctes else None
        if real is None:
            continue
        ref = (t.alias or t.name).lower()
        used = [
            c
            for c, owner in _real_columns(tree, schema)
            if owner == real.name and (not c.table or c.table.lower() == ref)
        ]
        if used:
            options.append((t, real.name))
    if not options:
        return None
    t, real = rng.choice(options)
    taken = {n.lower() for n in schema.table_names()} | ctes | set(_aliases(tree))
    pool = [n for n in _foreign_tables() if n.lower() not in taken and n.upper() not in _KEYWORDS]
    if not pool:
        return None
    new = rng.choice(pool)
    old = t.name
    t.set("this", exp.to_identifier(new))
    if not t.alias:
        for col in tree.find_all(exp.Column):
            if col.table and col.table.lower() == old.lower():
                col.set("table", exp.to_identifier(new))
    return Mutant("foreign_table", "table_not_found", _out(tree, engine), (real.lower(),))


#: The realistic mistakes, scored per kind as well as per category.
REALISTIC: dict[str, Mutation] = {
    "dropped_join": dropped_join,
    "unjoined_qualifier": unjoined_qualifier,
    "nested_aggregate": nested_aggregate,
    "aggregate_in_order_by": aggregate_in_order_by,
    "cut_short": cut_short,
    "placeholder": placeholder_literal,
    "foreign_table": foreign_table,
}
MUTATIONS.update(REALISTIC)
