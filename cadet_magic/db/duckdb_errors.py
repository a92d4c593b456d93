"""DuckDB's errors, as the portable fields the diagnosis reads (stdlib only: no driver here).

DuckDB classes its errors by exception class (``BinderException``, ``ParserException`` ...) and
by a prefix on the message's first line (``Binder Error:``); it echoes the statement's line
with a caret (``LINE 1: ...``) for parser and binder errors, and proposes names itself
(``Candidate bindings: "amount"``, ``Did you mean "orders"?``). Its binder shares much of
PostgreSQL's wording. Only its parser, binder and catalog name the query's own names
(:attr:`~cadet_magic.db.error_table.ErrorTable.naming`): they run before any row is read.

Example:
    >>> from cadet_magic.db.error_reader import read
    >>> from cadet_magic.errors import EngineError
    >>> e = read(EngineError('Binder Error: Referenced column "amout" not found in FROM clause!\\n'
    ...                      'Candidate bindings: "amount", "status"'), DUCKDB)
    >>> e.kind.value, e.identifier.text, [c.text for c in e.candidates], e.primary[:17]
    ('column_not_found', 'amout', ['amount', 'status'], 'Referenced column')
"""

from __future__ import annotations

from cadet_magic.db.error_table import ErrorTable, Name, Rule, Said, Value, datetime_state
from cadet_magic.errors import ErrorKind, Fact

K = ErrorKind

DUCKDB = ErrorTable(
    "duckdb",
    rules=(
        Rule(K.timeout, classes=("InterruptException",), pattern=r"^interrupted\b"),
        Rule(
            K.connection_error,
            classes=("ConnectionException",),
            pattern=r"connection already closed|database is closed",
        ),
        Rule(
            K.permission_denied,
            classes=("PermissionException",),
            pattern=r"^Permission Error|read-only mode",
        ),
        Rule(
            K.aggregation_error,
            pattern=r"must appear in the GROUP BY|cannot contain aggregates|"
            r"aggregate functions? (calls )?(are|is) not allowed|aggregate function calls cannot|"
            r"cannot be nested|GROUP BY clause cannot contain|must be part of an aggregate|"
            r"window functions are not allowed in",
        ),
        Rule(K.join_error, pattern=r"duplicate alias|duplicate table (name|alias)"),
        Rule(
            K.column_not_found,
            pattern=r"Referenced column .* not found|does not have a column named|"
            r"^column .* not found|^column .* does not exist|Values list .* does not have a column|"
            r"^Cannot extract field",
        ),
        Rule(
            K.table_not_found,
            pattern=r"^Table with name .* does not exist|^Referenced table .* not found|"
            r"^Schema with name .* does not exist|^View with name .* does not exist",
        ),
        Rule(
            K.datetime_format,
            pattern=r"date field|timestamp field|time field|invalid (date|time|timestamp)|"
            r"Could not convert .*",
            check=datetime_state,
        ),
        Rule(
            K.function_not_found,
            pattern=r"^(Scalar|Table|Aggregate|Pragma|Macro) Function with name|"
            r"^Function with name",
        ),
        Rule(
            K.type_mismatch,
            classes=("ConversionException", "MismatchTypeException"),
            pattern=r"could not convert|cannot compare|no function matches|Mismatch Type|"
            r"out of range for type|No operator matches|Unimplemented type for cast|"
            r"Conversion Error",
        ),
        Rule(K.syntax_error, classes=("ParserException",), pattern=r"^Parser Error"),
    ),
    names=(
        Name(K.column_not_found, r'Referenced column "([^"]+)" not found'),
        Name(K.column_not_found, r'Referenced column "([^"]+)" was not found'),
        Name(K.column_not_found, r'^column "([^"]+)" does not exist'),
        Name(K.column_not_found, r'Referenced column "?([^"\s]+)"? not found'),
        Name(K.column_not_found, r'does not have a column named "?([^"\s]+)"?'),
        Name(K.column_not_found, r'^column "?([^"\s]+?)"? does not exist'),
        Name(
            K.column_not_found,
            r"Cannot extract field '([^']+)' from expression \"?([^\"\s]+)\"?",
            "{1}.{0}",
        ),
        Name(K.table_not_found, r"Table with name \"?([^\"\s!]+)\"? does not exist"),
        Name(K.table_not_found, r'Referenced table "?([^"\s]+)"? not found'),
        Name(K.join_error, r'column reference "?([^"\s]+)"? is ambiguous'),
        Name(K.join_error, r'Ambiguous reference to (?:column name|table) "?([^"\s]+)"?'),
        Name(K.join_error, r'Duplicate alias "?([^"\s]+)"?'),
        Name(K.aggregation_error, r'column "?([^"\s]+?)"? must appear in the GROUP BY'),
        Name(K.function_not_found, r"Function with name \"?(\w+)\"? does not exist"),
        Name(K.syntax_error, r'at or near "([^"]*)"'),
    ),
    values=(
        Value(r"Could not convert string ([\"'].*?[\"']) to ([\w(),]+)", "{0} as {1}"),
        Value(r"Cannot compare values of type (\w+) and type (\w+)", "{0} compared with {1}"),
        Value(r"argument types '([^']+)'"),
        Value(r"(?:field format|out of range): (\".*?\")"),
    ),
    facts=(Said(Fact.qualifier, r"Referenced table", (K.table_not_found,), "primary"),),
    proposals=("Candidate bindings:", "Did you mean", "(use:"),
    prefixes=(r"^(?P<prefix>[A-Z][A-Za-z ]*? Error): ?",),
    echoes=(r"^LINE \d+: ?(?P<text>.*)$",),
    # its parser, binder and catalog: a function's error at run time (a regular expression
    # that does not compile, a JSON path) quotes what the query and the rows make it say
    naming=(
        "ParserException",
        "BinderException",
        "CatalogException",
        "Parser Error",
        "Binder Error",
        "Catalog Error",
    ),
)
