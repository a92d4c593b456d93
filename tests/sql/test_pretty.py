"""sqlparse lays out long SQL for people without changing a token."""

from __future__ import annotations

import pytest
import sqlparse

from cadet_magic.sql.pretty import format_sql

LONG = [
    "SELECT a, b, c FROM t JOIN u ON t.id = u.id WHERE t.x = 'two  spaces' AND u.y > 10 ORDER BY a",
    "WITH s AS (SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer) "
    "SELECT * FROM s WHERE total > 100 ORDER BY total DESC LIMIT 5",
    "SELECT '{% raw %}' AS a, '{{ x }}' AS b, 1 AS c FROM t WHERE t.name = 'x' UNION ALL SELECT 1, 2, 3",
]


def _tokens(sql: str) -> list[str]:
    return [t.value for t in sqlparse.parse(sql)[0].flatten() if not t.is_whitespace]


@pytest.mark.parametrize("sql", LONG)
def test_long_sql_is_laid_out_token_for_token(sql: str) -> None:
    laid_out = format_sql(sql)
    assert "\n" in laid_out
    assert _tokens(laid_out) == _tokens(sql)


@pytest.mark.parametrize("sql", ["SELECT 1", "SELECT a\nFROM t  -- the author's own layout"])
def test_short_or_laid_out_sql_is_kept(sql: str) -> None:
    assert format_sql(f"  {sql}  ") == sql
