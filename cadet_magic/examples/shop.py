"""An embedded, deterministic sample shop database for demos, docs and tests.

Four tables of a small online shop: ``customers``, ``products``, ``orders`` and
``order_items``. The data is generated from word lists in this module with
``random.Random(seed)``, using integer draws and :class:`~decimal.Decimal`
arithmetic only, so one seed yields byte-identical SQL text (and therefore
identical tables) on every machine and Python version.

Shape for the default seed: 60 customers (a few never ordered), 30 products in
6 categories, 600 orders dated 2024-01-01..2025-12-31 (more in 2025 and around
November/December), about 1,500 order items. ``products.unit_price`` is the
current list price; ``order_items.unit_price`` is the price actually paid
(2024 orders were sold 5% cheaper), so revenue is
``SUM(order_items.quantity * order_items.unit_price)``.

Importing this module is cheap: DuckDB is imported only by :func:`create_shop`.

Example:
    >>> from cadet_magic.examples.shop import create_shop
    >>> con = create_shop()
    >>> con.execute("SELECT count(*) FROM customers").fetchall()
    [(60,)]
    >>> con.execute("SELECT DISTINCT status FROM orders ORDER BY status").fetchall()
    [('cancelled',), ('completed',), ('returned',), ('shipped',)]
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from cadet_magic.examples.shop_schema import COMMENTS, DDL

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "DEFAULT_SEED",
    "SHOP_TABLES",
    "ShopData",
    "create_shop",
    "generate_shop",
    "shop_sql",
    "shop_statements",
]

DEFAULT_SEED = 7
"""The seed used by default; facts quoted in docs refer to this seed."""

SHOP_TABLES: tuple[str, ...] = ("customers", "products", "orders", "order_items")
"""Table names in creation order (drop them in reverse)."""

FIRST_DAY = date(2024, 1, 1)
LAST_DAY = date(2025, 12, 31)
N_CUSTOMERS = 60
N_ORDERS = 600
N_NEVER_ORDERED = 4

# --- word lists (written for this module; order matters for determinism) -----

_FIRST_NAMES = (
    "Ada", "Amara", "Andrea", "Aiko", "Benjamin", "Carlos", "Chloe", "Daniel",
    "Elena", "Emeka", "Fatima", "Felix", "Grace", "Hannah", "Hiroshi", "Ines",
    "Isaac", "Jonas", "Julia", "Kenji", "Laura", "Leo", "Lucia", "Mateo",
    "Maya", "Mohammed", "Nadia", "Noah", "Olivia", "Oscar", "Priya", "Rafael",
    "Rosa", "Samuel", "Sofia", "Tariq", "Theo", "Valentina", "William", "Zoe",
)  # fmt: skip

_LAST_NAMES = (
    "Adeyemi", "Andersen", "Bauer", "Becker", "Costa", "Dubois", "Eriksson",
    "Fischer", "Garcia", "Hansen", "Ivanova", "Jensen", "Kowalski", "Larsen",
    "Lopez", "Martin", "Meyer", "Moreau", "Nakamura", "Novak", "O'Brien",
    "Okafor", "Patel", "Rossi", "Schmidt", "Silva", "Sato", "Tanaka",
    "Thompson", "Walsh", "Weber", "Wilson", "Yilmaz", "Zhang",
)  # fmt: skip

# (city, country, weight): heavier weight, more customers.
_CITIES = (
    ("New York", "United States", 5),
    ("Chicago", "United States", 3),
    ("Austin", "United States", 2),
    ("Seattle", "United States", 2),
    ("Toronto", "Canada", 3),
    ("Vancouver", "Canada", 2),
    ("London", "United Kingdom", 4),
    ("Manchester", "United Kingdom", 2),
    ("Berlin", "Germany", 3),
    ("Munich", "Germany", 2),
    ("Paris", "France", 3),
    ("Lyon", "France", 1),
    ("Madrid", "Spain", 2),
    ("Amsterdam", "Netherlands", 2),
    ("Stockholm", "Sweden", 1),
    ("Sydney", "Australia", 2),
    ("Tokyo", "Japan", 2),
    ("São Paulo", "Brazil", 1),
)

_DOMAINS = ("example.com", "example.net", "example.org")

# (segment, weight)
_SEGMENTS = (("consumer", 14), ("small_business", 4), ("corporate", 2))

# (category, name, list price, popularity weight)
_PRODUCTS = (
    ("Electronics", "Wireless Earbuds", "79.99", 6),
    ("Electronics", "Bluetooth Speaker", "49.99", 5),
    ("Electronics", "USB-C Charger", "24.99", 8),
    ("Electronics", "Noise-Cancelling Headphones", "199.00", 3),
    ("Electronics", "Smartwatch", "249.00", 2),
    ("Home & Kitchen", "French Press", "34.50", 5),
    ("Home & Kitchen", "Chef's Knife", "89.00", 3),
    ("Home & Kitchen", "Cast Iron Skillet", "42.00", 4),
    ("Home & Kitchen", "Electric Kettle", "39.99", 5),
    ("Home & Kitchen", "Bamboo Cutting Board", "19.95", 6),
    ("Books", "Query Craft: Thinking in Tables", "29.99", 4),
    ("Books", "Patterns in the Noise", "24.00", 4),
    ("Books", "The Quiet Harbor", "16.99", 6),
    ("Books", "Field Guide to Garden Birds", "22.50", 3),
    ("Books", "Cooking with Five Ingredients", "27.00", 5),
    ("Sports & Outdoors", "Yoga Mat", "29.00", 6),
    ("Sports & Outdoors", "Trail Running Shoes", "119.00", 3),
    ("Sports & Outdoors", "Insulated Water Bottle", "24.00", 7),
    ("Sports & Outdoors", "Camping Lantern", "35.99", 3),
    ("Sports & Outdoors", "Resistance Bands Set", "18.50", 4),
    ("Toys & Games", "Strategy Board Game", "44.99", 4),
    ("Toys & Games", "1000-Piece Jigsaw Puzzle", "19.99", 5),
    ("Toys & Games", "Building Blocks Set", "59.99", 3),
    ("Toys & Games", "Remote Control Car", "64.00", 2),
    ("Toys & Games", "Party Card Game", "12.99", 6),
    ("Beauty & Personal Care", "Face Moisturizer", "28.00", 5),
    ("Beauty & Personal Care", "Electric Toothbrush", "69.99", 3),
    ("Beauty & Personal Care", "Hair Dryer", "89.99", 2),
    ("Beauty & Personal Care", "Sunscreen SPF 50", "15.50", 6),
    ("Beauty & Personal Care", "Shaving Kit", "39.00", 3),
)

# Relative order volume by month (January..December); November/December peak.
_MONTH_WEIGHT = (7, 6, 7, 7, 7, 7, 7, 7, 7, 8, 10, 10)
# Relative order volume by year: the shop grows.
_YEAR_WEIGHT = {2024: 8, 2025: 10}
# How many items an order has (count, weight), and quantities per item.
_ITEMS_PER_ORDER = ((1, 20), (2, 30), (3, 30), (4, 20))
_QUANTITY = ((1, 60), (2, 25), (3, 10), (4, 5))
# Customer activity levels (weight of being the customer of an order).
_ACTIVITY = (1, 1, 1, 2, 2, 2, 3, 3, 4, 6, 9)
# Order status (value, weight): older orders vs. the last ten days of 2025.
_STATUS_OLD = (("completed", 88), ("cancelled", 7), ("returned", 5))
_STATUS_RECENT = (("shipped", 75), ("completed", 20), ("cancelled", 5))
_RECENT_FROM = LAST_DAY - timedelta(days=9)

_CENT = Decimal("0.01")
_DISCOUNT_2024 = Decimal("0.95")


@dataclass(frozen=True)
class ShopData:
    """Generated rows of the sample shop, as tuples in column order.

    Attributes:
        customers: ``(customer_id, name, email, city, country, signup_date, segment)``.
        products: ``(product_id, name, category, unit_price)``.
        orders: ``(order_id, customer_id, order_date, status)``.
        order_items: ``(order_id, product_id, quantity, unit_price)``.
    """

    customers: list[tuple[int, str, str, str, str, date, str]]
    products: list[tuple[int, str, str, Decimal]]
    orders: list[tuple[int, int, date, str]]
    order_items: list[tuple[int, int, int, Decimal]]


def _weighted(rng: random.Random, pairs: tuple[tuple[object, int], ...]) -> object:
    """Picks a value from ``(value, weight)`` pairs with an integer draw."""
    total = sum(weight for _, weight in pairs)
    r = rng.randrange(total)
    for value, weight in pairs:
        if r < weight:
            return value
        r -= weight
    raise AssertionError("unreachable")


def _pair(value: object) -> tuple[str, str]:
    """A drawn ``(city, country)`` pair, typed."""
    assert isinstance(value, tuple) and len(value) == 2
    return str(value[0]), str(value[1])


def _weighted_index(rng: random.Random, weights: list[int]) -> int:
    """Returns an index into ``weights`` drawn proportionally to the weights."""
    r = rng.randrange(sum(weights))
    for index, weight in enumerate(weights):
        if r < weight:
            return index
        r -= weight
    raise AssertionError("unreachable")


def _day(rng: random.Random, first: date, last: date) -> date:
    return first + timedelta(days=rng.randrange((last - first).days + 1))


def generate_shop(seed: int = DEFAULT_SEED) -> ShopData:
    """Generates the sample shop's rows; the same seed gives the same rows.

    Args:
        seed: Seed for ``random.Random``.

    Returns:
        The rows of the four tables.

    Example:
        >>> data = generate_shop()
        >>> len(data.customers), len(data.products), len(data.orders)
        (60, 30, 600)
        >>> generate_shop(3) == generate_shop(3)
        True
    """
    rng = random.Random(seed)

    # Customers: unique names, then ids assigned in signup order.
    name_pairs = [(f, last) for f in _FIRST_NAMES for last in _LAST_NAMES]
    rng.shuffle(name_pairs)
    city_pairs = tuple(((city, country), weight) for city, country, weight in _CITIES)
    raw_customers = []
    for first, last in name_pairs[:N_CUSTOMERS]:
        city, country = _pair(_weighted(rng, city_pairs))
        signup = _day(rng, date(2023, 1, 1), date(2025, 9, 30))
        segment = _weighted(rng, _SEGMENTS)
        local = f"{first}.{last}".lower().replace("'", "")
        email = f"{local}@{rng.choice(_DOMAINS)}"
        raw_customers.append((signup, f"{first} {last}", email, city, country, segment))
    raw_customers.sort(key=lambda c: (c[0], c[1]))
    customers = [
        (i, name, email, city, country, signup, segment)
        for i, (signup, name, email, city, country, segment) in enumerate(raw_customers, 1)
    ]
    activity = [rng.choice(_ACTIVITY) for _ in customers]
    idle: list[int] = []
    while len(idle) < N_NEVER_ORDERED:
        index = rng.randrange(len(customers))
        if index not in idle:
            idle.append(index)
            activity[index] = 0

    products = [
        (i, name, category, Decimal(price))
        for i, (category, name, price, _) in enumerate(_PRODUCTS, 1)
    ]
    popularity = [weight for *_, weight in _PRODUCTS]

    # Orders: a seasonal date first, then a customer who had signed up by then.
    raw_orders: list[tuple[Any, ...]] = []
    while len(raw_orders) < N_ORDERS:
        day = _day(rng, FIRST_DAY, LAST_DAY)
        if rng.randrange(10) >= _MONTH_WEIGHT[day.month - 1]:
            continue
        if rng.randrange(10) >= _YEAR_WEIGHT[day.year]:
            continue
        weights = [a if c[5] <= day else 0 for a, c in zip(activity, customers, strict=True)]
        if not any(weights):
            continue
        customer_id = customers[_weighted_index(rng, weights)][0]
        status = _weighted(rng, _STATUS_RECENT if day >= _RECENT_FROM else _STATUS_OLD)
        n_items = _weighted(rng, _ITEMS_PER_ORDER)
        picked: list[int] = []
        while len(picked) < n_items:  # type: ignore[operator]
            index = _weighted_index(rng, popularity)
            if index not in picked:
                picked.append(index)
        lines = []
        for index in sorted(picked):
            price = products[index][3]
            if day.year == 2024:
                price = (price * _DISCOUNT_2024).quantize(_CENT, rounding=ROUND_HALF_UP)
            lines.append((products[index][0], _weighted(rng, _QUANTITY), price))
        raw_orders.append((day, len(raw_orders), customer_id, status, lines))
    raw_orders.sort(key=lambda o: (o[0], o[1]))

    orders: list[tuple[Any, ...]] = []
    order_items: list[tuple[Any, ...]] = []
    for order_id, (day, _, customer_id, status, lines) in enumerate(raw_orders, 1001):
        orders.append((order_id, customer_id, day, status))
        order_items.extend((order_id, pid, qty, price) for pid, qty, price in lines)
    return ShopData(customers, products, orders, order_items)  # type: ignore[arg-type]


def _literal(value: object) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, date):
        return f"'{value.isoformat()}'"
    if isinstance(value, int | Decimal):
        return str(value)
    raise TypeError(f"unsupported literal: {value!r}")


def _insert(table: str, rows: list[tuple]) -> str:
    values = ",\n".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in rows)
    return f"INSERT INTO {table} VALUES\n{values}"


def shop_statements(seed: int = DEFAULT_SEED, *, comments: bool = True) -> list[str]:
    """Returns the SQL statements that build the sample shop, without semicolons.

    The DDL uses portable types (INTEGER, VARCHAR, DATE, DECIMAL) and runs on
    DuckDB, PostgreSQL and SQLite; ``COMMENT ON`` statements (DuckDB and
    PostgreSQL only) are included when ``comments`` is true.

    Args:
        seed: Seed for the data generator.
        comments: Whether to append ``COMMENT ON TABLE/COLUMN`` statements.

    Returns:
        CREATE TABLE statements, one INSERT per table, then the comments.

    Example:
        >>> import sqlite3
        >>> con = sqlite3.connect(":memory:")
        >>> for statement in shop_statements(comments=False):
        ...     _ = con.execute(statement)
        >>> con.execute("SELECT count(*) FROM orders").fetchall()
        [(600,)]
    """
    data = generate_shop(seed)
    statements = list(DDL)
    for table in SHOP_TABLES:
        statements.append(_insert(table, getattr(data, table)))
    if comments:
        for table, column, text in COMMENTS:
            target = f"TABLE {table}" if column is None else f"COLUMN {table}.{column}"
            statements.append(f"COMMENT ON {target} IS {_literal(text)}")
    return statements


def shop_sql(seed: int = DEFAULT_SEED, *, comments: bool = True) -> str:
    """Returns the whole sample shop as one SQL script (statements end with ``;``).

    Args:
        seed: Seed for the data generator.
        comments: Whether to include ``COMMENT ON`` statements.

    Returns:
        The script text; identical for the same arguments everywhere.

    Example:
        >>> shop_sql().startswith("CREATE TABLE customers (")
        True
    """
    return "".join(f"{statement};\n" for statement in shop_statements(seed, comments=comments))


def create_shop(
    path: str | os.PathLike[str] = ":memory:", *, seed: int = DEFAULT_SEED
) -> duckdb.DuckDBPyConnection:
    """Builds the sample shop in DuckDB and returns an open connection.

    If the database file already holds the shop's tables they are dropped and
    recreated; other tables in it are left alone.

    Args:
        path: A DuckDB database file, or ``":memory:"``.
        seed: Seed for the data generator.

    Returns:
        A read-write connection to the database; the caller closes it.

    Example:
        >>> con = create_shop()
        >>> con.execute(
        ...     "SELECT p.category FROM order_items i JOIN products p USING (product_id) "
        ...     "GROUP BY ALL ORDER BY sum(i.quantity * i.unit_price) DESC LIMIT 1"
        ... ).fetchall()
        [('Electronics',)]
    """
    import duckdb

    con = duckdb.connect(os.fspath(path))
    try:
        con.execute("BEGIN TRANSACTION")
        for table in reversed(SHOP_TABLES):
            con.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in shop_statements(seed):
            con.execute(statement)
        con.execute("COMMIT")
    except BaseException:
        con.close()
        raise
    return con
