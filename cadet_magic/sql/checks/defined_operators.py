"""Operators the database defines itself (PostgreSQL's ``CREATE OPERATOR``): each runs a
function of the database's own, and PostgreSQL picks it over its own operator whenever its
argument types fit the query better. The function catalog lists their symbols
(:attr:`FunctionCatalog.operators <cadet_magic.sql.functions.FunctionCatalog>`); a query whose
text that runs holds one in an operator (a run of operator characters, as PostgreSQL's lexer
reads them) is refused. Strings, quoted names and comments are not operators.

Example:
    >>> from cadet_magic.sql.functions import FunctionCatalog
    >>> cat = FunctionCatalog.build("postgres", ["lower"], ["lower"], operators=["===", "||"])
    >>> pg = Target.named("postgres").with_names(None, functions=cat)
    >>> defined_operator("SELECT a === b FROM t", pg).code
    'forbidden_function'
    >>> defined_operator("SELECT 'a || b', \\"x||y\\" FROM t -- ||", pg) is None
    True
"""

from __future__ import annotations

from sqlglot.tokens import TokenType

from cadet_magic.sql.checks.context import Issue
from cadet_magic.sql.target import Target

#: The characters an operator of PostgreSQL's may be made of.
OPERATOR_CHARS = frozenset("+-*/<>=~!@#%^&|`?")
_NOT_OPERATORS = (TokenType.STRING, TokenType.IDENTIFIER, TokenType.NATIONAL_STRING)


def operator_runs(sql: str, target: Target) -> list[str]:
    """The operators of ``sql`` as runs of adjacent operator characters outside strings,
    quoted names and comments (the tokens the dialect's tokenizer reads, joined where they
    touch)."""
    try:
        tokens = target.dialect.tokenize(sql)
    except Exception:  # noqa: BLE001 - the whole text then, character runs alone
        return _raw_runs(sql)
    runs: list[str] = []
    last_end = -2
    for token in tokens:
        text = token.text
        operator = token.token_type not in _NOT_OPERATORS and text and set(text) <= OPERATOR_CHARS
        if not operator:
            last_end = -2
            continue
        if runs and token.start == last_end + 1:
            runs[-1] += text
        else:
            runs.append(text)
        last_end = token.end
    return runs


def _raw_runs(sql: str) -> list[str]:
    runs, current = [], ""
    for ch in sql:
        if ch in OPERATOR_CHARS:
            current += ch
        elif current:
            runs.append(current)
            current = ""
    return runs + ([current] if current else [])


def defined_operator(sql: str, target: Target) -> Issue | None:
    """A ``forbidden_function`` issue when ``sql`` uses an operator the database defines."""
    catalog = target.functions
    if catalog is None or not catalog.operators:
        return None
    for run in operator_runs(sql, target):
        for symbol in sorted(catalog.operators):
            if symbol in run:
                return Issue(
                    "forbidden_function",
                    f"The operator {symbol} is defined by this database itself (it runs a "
                    f"function that is not {catalog.engine}'s own); write the comparison or "
                    "the computation with built-in functions instead.",
                )
    return None
