"""What a diagnosis found is a typed record per category, which the feedback templates take;
the router is a tuple of refiners run in order; the diagnosis reads the checked query's tree
when it is handed the query, and parses the text (once) only when it is not."""

from __future__ import annotations

import dataclasses

import pytest
from sqlglot.dialects.dialect import Dialect

from cadet_magic.diagnose import router
from cadet_magic.diagnose.failures import diagnose
from cadet_magic.diagnose.feedback import TEMPLATES, render
from cadet_magic.diagnose.found import (
    KINDS,
    ColumnNotFound,
    Found,
    JoinProblem,
    MissingJoin,
    found,
    recast,
)
from cadet_magic.diagnose.model import Category
from cadet_magic.diagnose.sqlcontext import Where
from cadet_magic.errors import EngineError, EngineText, ErrorKind
from cadet_magic.schema.structure import Schema
from cadet_magic.sql.target import Target
from cadet_magic.sql.validate import validate_sql

SCHEMA = Schema.coerce({"orders": ["id", "amount", "customer_id"], "customers": ["id", "name"]})


def missing_column(name: str = "amout") -> EngineError:
    return EngineError(
        f"no such column: {name}", kind=ErrorKind.column_not_found, identifier=EngineText(name)
    )


@pytest.mark.parametrize("category", list(Category))
def test_every_category_has_its_record_and_its_template_takes_it(category):
    record = found(category)
    assert type(record) is KINDS.get(category, Found) and record.category is category
    assert dataclasses.is_dataclass(record) and type(record).__dataclass_params__.frozen
    if str(category) in TEMPLATES:
        assert render("SELECT 1", record, Target.named("sqlite")).startswith(
            "Your previous query failed:"
        )


def test_a_finding_moves_to_another_category_with_what_it_knows():
    f = found(Category.column_not_found, identifier=EngineText("T9.x"), position=8)
    f = f.replace(derived_alias=True, suggestions=("t.x",))
    j = recast(f, Category.join_error, missing_join=MissingJoin("x", "t"))
    assert isinstance(j, JoinProblem) and j.missing_join.table == "t"
    assert (j.identifier, j.position, j.suggestions) == (EngineText("T9.x"), 8, ("t.x",))
    s = recast(f, Category.syntax_error)
    assert s.derived_alias  # a field both records have goes along


def test_the_diagnosis_says_what_it_found_as_typed_fields():
    d = diagnose(missing_column(), sql="SELECT amout FROM orders", target="sqlite", schema=SCHEMA)
    assert isinstance(d.details, ColumnNotFound)
    assert d.details.identifier == EngineText("amout")  # the engine's words, typed as such
    assert d.details.name == "amout" and d.details.position == 8
    assert d.details.suggestions == ("orders.amount",) == tuple(d.suggestions)


def test_the_router_is_its_rules_in_order(monkeypatch):
    assert isinstance(router.RULES, tuple) and all(callable(r) for r in router.RULES)
    names = [r.__name__ for r in router.RULES]
    assert names.index("missing_join") < names.index("named") < names.index("case_only")
    sql = "SELECT amout FROM orders"
    full = diagnose(missing_column(), sql=sql, target="sqlite", schema=SCHEMA)
    monkeypatch.setattr(router, "RULES", ())
    bare = diagnose(missing_column(), sql=sql, target="sqlite", schema=SCHEMA)
    assert full.suggestions == ["orders.amount"] and bare.suggestions == []
    assert bare.details.position is None

    def shout(f: Found, at: Where) -> Found:
        return f.replace(suggestions=(at.sql.upper(),))

    monkeypatch.setattr(router, "RULES", (shout,))
    assert diagnose(missing_column(), sql=sql, schema=SCHEMA).suggestions == [sql.upper()]


@pytest.fixture
def parses(monkeypatch):
    seen: list[str] = []
    original = Dialect.parse

    def counting(self, sql, **opts):
        seen.append(sql)
        return original(self, sql, **opts)

    monkeypatch.setattr(Dialect, "parse", counting)
    return seen


def test_handed_the_checked_query_the_diagnosis_parses_nothing(parses):
    sql = "SELECT c.nme, sum(o.amount) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id"
    query = validate_sql(sql, "sqlite", SCHEMA.table_names()).query
    assert query is not None
    parses.clear()
    error = missing_column("c.nme")
    d = diagnose(error, sql=sql, target="sqlite", schema=SCHEMA, query=query)
    assert d.suggestions[0] == "customers.name" and "c.name" in d.feedback
    assert parses == []
    # given only the text, it is parsed: no tree is found again by the text of the query
    again = diagnose(error, sql=sql, target="sqlite", schema=SCHEMA)
    assert parses and again.feedback == d.feedback
