"""SQL laid out for people, with sqlparse, without changing a token.

The SQL that runs is generated from the checked tree on one line. For the ``%%sql`` cell the
user is offered (and for display), :func:`format_sql` breaks a long line at the clauses and the
select list. Only whitespace between tokens changes: the result is compared token by token with
the input (sqlparse's lexer, comments and string literals included) and the input is returned
unchanged when anything else would differ.
"""

from __future__ import annotations

#: A one-line query longer than this is laid out over several lines.
WIDTH = 72


def _tokens(sql: str) -> list[tuple[object, str]]:
    import sqlparse  # lazily: `%load_ext` in JupyterLite runs before it is loaded

    return [
        (token.ttype, token.value)
        for statement in sqlparse.parse(sql)
        for token in statement.flatten()
        if not token.is_whitespace
    ]


def format_sql(sql: str, width: int = WIDTH) -> str:
    """``sql`` laid out one clause per line when it is one line longer than ``width``.

    Multi-line SQL (laid out by its author already) and short SQL come back stripped; so does
    any SQL whose tokens sqlparse's layout would change.

    Example:
        >>> print(format_sql("SELECT customer, SUM(amount) AS total FROM orders "
        ...                  "WHERE status = 'paid  in full' GROUP BY customer ORDER BY total DESC"))
        SELECT customer,
               SUM(amount) AS total
        FROM orders
        WHERE status = 'paid  in full'
        GROUP BY customer
        ORDER BY total DESC
        >>> format_sql("  SELECT 1  ")
        'SELECT 1'
    """
    text = sql.strip()
    if "\n" in text or len(text) <= width:
        return text
    import sqlparse

    try:
        laid_out = sqlparse.format(text, reindent=True).strip()
        same = _tokens(laid_out) == _tokens(text)
    except Exception:  # noqa: BLE001 - layout is a nicety: any sqlparse failure keeps the text
        return text
    return laid_out if same else text
