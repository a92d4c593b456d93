"""The sample shop's tables (:mod:`cadet_magic.examples.shop`): the ``CREATE TABLE``
statements of ``customers``, ``products``, ``orders`` and ``order_items`` with their keys, and
the comment of each table and column (what the model reads in the schema).
"""

from __future__ import annotations

#: The four tables, in creation order (portable types).
DDL = (
    """CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL,
    email VARCHAR NOT NULL UNIQUE,
    city VARCHAR NOT NULL,
    country VARCHAR NOT NULL,
    signup_date DATE NOT NULL,
    segment VARCHAR NOT NULL
)""",
    """CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL,
    category VARCHAR NOT NULL,
    unit_price DECIMAL(10, 2) NOT NULL
)""",
    """CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (customer_id),
    order_date DATE NOT NULL,
    status VARCHAR NOT NULL
)""",
    """CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders (order_id),
    product_id INTEGER NOT NULL REFERENCES products (product_id),
    quantity INTEGER NOT NULL,
    unit_price DECIMAL(10, 2) NOT NULL,
    PRIMARY KEY (order_id, product_id)
)""",
)

#: (table, column or None for the table, comment): COMMENT ON statements (DuckDB, PostgreSQL).
COMMENTS: tuple[tuple[str, str | None, str], ...] = (
    ("customers", None, "People and companies who signed up to the shop."),
    ("customers", "customer_id", "Customer identifier; increases with signup_date."),
    ("customers", "name", "Full name (first and last name)."),
    ("customers", "email", "Contact email address, unique per customer."),
    ("customers", "city", "City of the billing address."),
    ("customers", "country", "Country of the billing address, in English."),
    ("customers", "signup_date", "Day the customer created an account."),
    ("customers", "segment", "Customer segment: consumer, small_business or corporate."),
    ("products", None, "Catalogue of products for sale."),
    ("products", "product_id", "Product identifier."),
    ("products", "name", "Product name as shown in the shop."),
    ("products", "category", "Product category, e.g. Electronics or Books."),
    ("products", "unit_price", "Current list price in USD (prices were 5% lower in 2024)."),
    ("orders", None, "One row per order placed by a customer."),
    ("orders", "order_id", "Order identifier; increases with order_date."),
    ("orders", "customer_id", "The customer who placed the order."),
    ("orders", "order_date", "Day the order was placed."),
    ("orders", "status", "Order status: completed, shipped, cancelled or returned."),
    ("order_items", None, "Order lines: which products an order contains, and how many."),
    ("order_items", "order_id", "The order this line belongs to."),
    ("order_items", "product_id", "The product ordered."),
    ("order_items", "quantity", "Number of units ordered."),
    ("order_items", "unit_price", "Price paid per unit in USD; revenue = quantity * unit_price."),
)
