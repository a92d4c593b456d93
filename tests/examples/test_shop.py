"""The embedded sample shop: determinism, shape, integrity and sensible answers."""

from __future__ import annotations

import ast
import doctest
import hashlib
import sqlite3
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from cadet_magic.examples import shop as sample
from cadet_magic.examples.shop import (
    SHOP_TABLES,
    create_shop,
    generate_shop,
    shop_sql,
    shop_statements,
)

duckdb = pytest.importorskip("duckdb")

# sha256 of shop_sql(seed=7): pins the data across machines and Python versions.
# Change it only on purpose, together with the facts quoted in the quickstart.
GOLDEN_SHA256 = "83f656d0d31a21349c4a5c6e0e99be71a8bcc7f25835fa25a19043bc77cf30dd"

# One fingerprint per table, computed in SQL over the rows in key order.
CHECKSUM = """
SELECT '{table}' AS t, count(*) AS n,
       md5(string_agg(CAST(x AS VARCHAR), '|' ORDER BY CAST(x AS VARCHAR))) AS h
FROM {table} AS x
"""

REVENUE_2025_TOP5 = """
SELECT c.customer_id, c.name, sum(i.quantity * i.unit_price) AS revenue
FROM customers c
JOIN orders o USING (customer_id)
JOIN order_items i USING (order_id)
WHERE o.order_date >= DATE '2025-01-01' AND o.order_date < DATE '2026-01-01'
  AND o.status IN ('completed', 'shipped')
GROUP BY c.customer_id, c.name
ORDER BY revenue DESC
LIMIT 5
"""


@pytest.fixture(scope="module")
def shop():
    con = create_shop()
    yield con
    con.close()


def _checksums(con) -> list[tuple]:
    return [con.execute(CHECKSUM.format(table=t)).fetchall()[0] for t in SHOP_TABLES]


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:  # top level only; TYPE_CHECKING blocks are not run
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_module_imports_only_stdlib_at_top_level():
    """The shop and the example modules it reads its tables from import only the stdlib."""
    todo, seen, names = [Path(sample.__file__)], set(), set()
    while todo:
        path = todo.pop()
        seen.add(path)
        for name in _top_level_imports(path):
            if name.startswith("cadet_magic.examples."):
                own = Path(sample.__file__).with_name(name.rsplit(".", 1)[1] + ".py")
                if own not in seen:
                    todo.append(own)
            else:
                names.add(name.split(".")[0])
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names


def test_docstring_examples_run():
    result = doctest.testmod(sample, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_script_text_is_pinned():
    text = shop_sql()
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == GOLDEN_SHA256


def test_same_seed_same_data_other_seed_other_data():
    assert generate_shop(7) == generate_shop(7)
    assert shop_sql(seed=11) == shop_sql(seed=11)
    assert shop_sql(seed=11) != shop_sql(seed=7)
    a, b = create_shop(), create_shop()
    try:
        assert _checksums(a) == _checksums(b)
    finally:
        a.close()
        b.close()


def test_row_counts(shop):
    counts = {t: shop.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in SHOP_TABLES}
    assert counts["customers"] == 60
    assert counts["products"] == 30
    assert counts["orders"] == 600
    assert 1400 <= counts["order_items"] <= 1600
    categories = shop.execute("SELECT count(DISTINCT category) FROM products").fetchall()
    assert categories == [(6,)]


def test_domains_and_ranges(shop):
    statuses = shop.execute("SELECT DISTINCT status FROM orders ORDER BY 1").fetchall()
    assert statuses == [("cancelled",), ("completed",), ("returned",), ("shipped",)]
    segments = shop.execute("SELECT DISTINCT segment FROM customers ORDER BY 1").fetchall()
    assert segments == [("consumer",), ("corporate",), ("small_business",)]
    span = shop.execute("SELECT min(order_date), max(order_date) FROM orders").fetchall()[0]
    assert span[0].isoformat() >= "2024-01-01" and span[1].isoformat() <= "2025-12-31"
    bad = shop.execute(
        "SELECT count(*) FROM orders o JOIN customers c USING (customer_id) "
        "WHERE o.order_date < c.signup_date"
    ).fetchall()
    assert bad == [(0,)], "an order placed before its customer signed up"
    assert shop.execute("SELECT min(quantity) > 0 FROM order_items").fetchall() == [(True,)]
    emails = shop.execute("SELECT count(DISTINCT email) FROM customers").fetchall()
    assert emails == [(60,)]


def test_prices_paid_follow_list_prices(shop):
    rows = shop.execute(
        """
        SELECT year(o.order_date) AS y,
               bool_and(i.unit_price = p.unit_price) AS at_list,
               bool_and(i.unit_price = round(p.unit_price * 0.95, 2)) AS discounted
        FROM order_items i JOIN orders o USING (order_id) JOIN products p USING (product_id)
        GROUP BY y ORDER BY y
        """
    ).fetchall()
    assert rows == [(2024, False, True), (2025, True, False)]


def test_foreign_keys_hold_and_are_declared(shop):
    orphans = shop.execute(
        """
        SELECT
          (SELECT count(*) FROM orders o
             WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.customer_id = o.customer_id)),
          (SELECT count(*) FROM order_items i
             WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = i.order_id)),
          (SELECT count(*) FROM order_items i
             WHERE NOT EXISTS (SELECT 1 FROM products p WHERE p.product_id = i.product_id)),
          (SELECT count(*) FROM orders o
             WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.order_id))
        """
    ).fetchall()
    assert orphans == [(0, 0, 0, 0)]
    constraints = shop.execute(
        "SELECT table_name, constraint_type, referenced_table FROM duckdb_constraints() "
        "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') ORDER BY ALL"
    ).fetchall()
    assert constraints == [
        ("customers", "PRIMARY KEY", None),
        ("order_items", "FOREIGN KEY", "orders"),
        ("order_items", "FOREIGN KEY", "products"),
        ("order_items", "PRIMARY KEY", None),
        ("orders", "FOREIGN KEY", "customers"),
        ("orders", "PRIMARY KEY", None),
        ("products", "PRIMARY KEY", None),
    ]
    with pytest.raises(duckdb.ConstraintException):
        shop.execute("INSERT INTO orders VALUES (1, 9999, DATE '2025-01-01', 'completed')")


def test_every_table_and_column_has_a_comment(shop):
    tables = shop.execute(
        "SELECT table_name FROM duckdb_tables() WHERE comment IS NULL OR comment = ''"
    ).fetchall()
    assert tables == []
    columns = shop.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE NOT internal AND (comment IS NULL OR comment = '')"
    ).fetchall()
    assert columns == []


def test_analyst_questions_have_sensible_answers(shop):
    top5 = shop.execute(REVENUE_2025_TOP5).fetchall()
    assert len(top5) == 5
    revenues = [r[2] for r in top5]
    assert revenues == sorted(revenues, reverse=True)
    assert all(isinstance(r, Decimal) and r > 0 for r in revenues)
    assert len({r[1] for r in top5}) == 5

    by_category = shop.execute(
        "SELECT p.category, sum(i.quantity * i.unit_price) AS revenue "
        "FROM order_items i JOIN products p USING (product_id) GROUP BY ALL ORDER BY revenue DESC"
    ).fetchall()
    assert len(by_category) == 6
    assert by_category[0][0] == "Electronics"

    months = shop.execute(
        "SELECT count(DISTINCT date_trunc('month', order_date)) FROM orders"
    ).fetchall()
    assert months == [(24,)]
    per_year = dict(
        shop.execute("SELECT year(order_date), count(*) FROM orders GROUP BY ALL").fetchall()
    )
    assert per_year[2025] > per_year[2024], "the shop grows"

    never = shop.execute(
        "SELECT count(*) FROM customers c "
        "WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.customer_id)"
    ).fetchall()[0][0]
    assert 1 <= never <= 10


def test_names_with_quotes_survive(shop):
    rows = shop.execute("SELECT count(*) FROM customers WHERE name LIKE '%''%'").fetchall()
    assert rows[0][0] >= 1
    products = shop.execute("SELECT name FROM products WHERE name = 'Chef''s Knife'").fetchall()
    assert products == [("Chef's Knife",)]


def test_file_database_is_rebuilt_and_other_tables_kept(tmp_path):
    path = tmp_path / "shop.duckdb"
    con = create_shop(path)
    first = _checksums(con)
    con.execute("CREATE TABLE notes (x INTEGER)")
    con.execute("DELETE FROM order_items WHERE order_id < 1100")
    con.close()
    con = create_shop(str(path))
    try:
        assert _checksums(con) == first
        assert con.execute("SELECT count(*) FROM notes").fetchall() == [(0,)]
    finally:
        con.close()


def test_plain_script_loads_in_sqlite_with_the_same_answers(shop):
    lite = sqlite3.connect(":memory:")
    try:
        for statement in shop_statements(comments=False):
            lite.execute(statement)
        query = (
            "SELECT p.category, round(sum(i.quantity * i.unit_price), 2) AS revenue "
            "FROM order_items i JOIN products p ON p.product_id = i.product_id "
            "GROUP BY p.category ORDER BY p.category"
        )
        in_sqlite = lite.execute(query).fetchall()
        in_duckdb = [(c, float(r)) for c, r in shop.execute(query).fetchall()]
        assert in_sqlite == in_duckdb
    finally:
        lite.close()


@pytest.mark.postgres
def test_script_with_comments_loads_in_postgres(pg_url):
    import psycopg

    dsn = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as pg:
        pg.execute("CREATE SCHEMA shop_test")
        try:
            pg.execute("SET search_path TO shop_test")
            for statement in shop_statements():
                pg.execute(statement)
            (count,) = pg.execute("SELECT count(*) FROM order_items").fetchone()
            assert count == len(generate_shop().order_items)
            (comment,) = pg.execute(
                "SELECT obj_description('shop_test.orders'::regclass)"
            ).fetchone()
            assert comment.startswith("One row per order")
        finally:
            pg.execute("DROP SCHEMA shop_test CASCADE")
