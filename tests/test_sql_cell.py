"""The offered ``%%sql`` cell is inert: run through the real ``%%sql`` magic (jupysql, which
renders cells as Jinja templates), it executes the final SQL as written and evaluates no
template expression in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cadet_magic.result import AskResult, Fallback, sql_cell


def _hostile(path: Path) -> str:
    """A string literal whose template expression would create ``path`` if evaluated."""
    return (
        "{{ __builtins__['open']('" + str(path) + "', 'w').close() "
        "if __builtins__ is mapping else __builtins__.open('" + str(path) + "', 'w').close() }}"
    )


@pytest.fixture
def shell(sql_duckdb):
    return sql_duckdb("cellcheck")


def _run(shell, cell: str) -> list:
    first, body = cell.split("\n", 1)
    assert first == "%%sql"
    result = shell.run_cell_magic("sql", "", body)
    return [tuple(r) for r in result]


def test_an_unescaped_cell_would_evaluate_the_template(shell, tmp_path: Path) -> None:
    """The hazard is real: jupysql evaluates the expression in a plain cell."""
    target = tmp_path / "made_by_template"
    _run(shell, "%%sql\nSELECT '" + _hostile(target) + "' AS s\n")
    assert target.exists()


@pytest.mark.parametrize(
    "literal",
    [
        "TEMPLATE",
        "{% raw %}TEMPLATE{% endraw %}",
        "{% endraw %}TEMPLATE",
        "{%- endraw -%}{{ 1 }}{# c #}TEMPLATE{%",
    ],
)
def test_sql_cell_runs_the_sql_as_written(shell, tmp_path: Path, literal: str) -> None:
    target = tmp_path / "made_by_template"
    value = literal.replace("TEMPLATE", _hostile(target))
    sql = "SELECT '" + value.replace("'", "''") + "' AS s, 1 + 1 AS two;"
    result = AskResult(question="q", ok=True, sql=sql)
    cell = result.sql_cell()
    assert cell == sql_cell(sql)
    rows = _run(shell, cell)
    assert rows == [(value, 2)]
    assert not target.exists()


def test_plain_sql_stays_plain_and_the_fallback_select_is_offered() -> None:
    assert AskResult(question="q", ok=True, sql="SELECT 1;").sql_cell() == "%%sql\nSELECT 1\n"
    fallback = Fallback(sql="SELECT a FROM t", ok=True)
    assert AskResult(question="q", ok=True, fallback=fallback).sql_cell() == (
        "%%sql\nSELECT a FROM t\n"
    )
    assert AskResult(question="q").sql_cell() is None


def test_a_long_query_is_laid_out_without_changing_a_token(shell) -> None:
    sql = (
        "SELECT x AS value, x + 1 AS next_value, '{{ not a template }}  kept' AS s "
        "FROM (SELECT 41 AS x) AS t WHERE x > 0 ORDER BY value"
    )
    cell = sql_cell(sql)
    assert cell.count("\n") > 3 and "{% raw %}" in cell
    assert _run(shell, cell) == [(41, 42, "{{ not a template }}  kept")]
