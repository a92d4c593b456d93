"""Feedback templates: one short, specific correction per category (stdlib and the Target).

Each template returns at most 60 words of guidance besides the names it lists: a column
taken from a join's alias is told the columns of that alias's table (up to 30 names), which
on wide tables makes the longest guidance about 120 words (both measured by the corruption
benchmark); :func:`render` puts the failed SQL in front of it. The advice names the usual
repair for each category: CTEs instead of derived-table aliases, NULLIF for division, the
dialect's own date functions, quoting case-sensitive identifiers, and for GROUP BY errors
"keep every aggregation".

Each template takes what the diagnosis found, as the typed record of its category
(:mod:`.found`), and the :class:`~cadet_magic.sql.target.Target` (its dialect's name,
which the advice names, and its key, under which :mod:`.advice` keeps each dialect's own).

Example:
    >>> from cadet_magic.diagnose.found import found
    >>> f = found(Category.column_not_found, identifier="amout", suggestions=("orders.amount",))
    >>> print(render("SELECT amout FROM orders", f, Target.named("duckdb")))
    Your previous query failed:
    ```sql
    SELECT amout FROM orders
    ```
    Column "amout" does not exist. Use a real column: orders.amount. Do not invent column names; qualify columns with their table when several tables are joined.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cadet_magic.diagnose.advice import nested_advice
from cadet_magic.diagnose.found import (
    AggregationProblem,
    ColumnNotFound,
    DatetimeFormat,
    Found,
    FunctionNotFound,
    JoinProblem,
    NoSQLReply,
    SyntaxProblem,
    TableNotFound,
    TypeMismatch,
    said,
)
from cadet_magic.diagnose.model import Category
from cadet_magic.sql.target import Target

#: A template: what the diagnosis found (its category's record) and the target -> guidance.
Template = Callable[[Any, Target], str]


def _names(names: list[str], n: int = 3) -> str:
    return ", ".join(names[:n])


def column_not_found(f: ColumnNotFound, target: Target) -> str:
    ident = f.name if f.identifier is not None else "?"
    suggestions = list(f.suggestions)
    text = f'Column "{ident}" does not exist.'
    if f.double_quoted_string:
        return (
            text + f" Write text values in single quotes ('{ident}'); double quotes name "
            "columns and tables."
        )
    if f.case_sensitive:
        real = f.case_sensitive
        col = real.split(".")[-1]
        return (
            text + f" The real column is {real}: on this engine quoted names keep their case "
            f'and unquoted ones are folded to lower case, so write it exactly, in double quotes: "{col}".'
        )
    if f.derived_alias:
        return (
            text + " It is not a column of the subquery it refers to. Use a CTE "
            "(WITH name AS (SELECT ...)) and select only columns the CTE defines."
        )
    if f.qualifier_table:
        qualifier = str(ident).rpartition(".")[0]
        text += (
            f" {qualifier} is {f.qualifier_table}, whose columns are "
            f"{_names(list(f.qualifier_columns), 30)}."
        )
    written = f.as_written
    if suggestions:
        shown = [f"{written[s]} ({s})" if s in written else s for s in suggestions[:3]]
        text += f" Use a real column: {', '.join(shown)}."
    return text + (
        " Do not invent column names; qualify columns with their table when several "
        "tables are joined."
        if not written
        else " Do not invent column names; qualify each column with the alias of its table."
    )


def table_not_found(f: TableNotFound, target: Target) -> str:
    ident = f.name if f.identifier is not None else "?"
    suggestions = list(f.suggestions)
    if f.derived_alias or (ident and len(str(ident)) <= 2 and not suggestions):
        return (
            f'"{ident}" is not a table. Use a CTE instead of a derived-table alias: '
            "WITH t AS (SELECT ...) SELECT ... FROM t."
        )
    text = f'Table "{ident}" does not exist.'
    if f.case_sensitive:
        real = f.case_sensitive
        return (
            text + f" The real table is {real}: on this engine quoted names keep their case and "
            f'unquoted ones are folded to lower case, so write it exactly, in double quotes: "{real}".'
        )
    if suggestions:
        text += f" Did you mean {_names(suggestions)}?"
    allowed = list(f.tables)
    if allowed:
        text += f" Use only these tables: {_names(allowed, 12)}."
    return text + " Do not abbreviate or invent table names."


def syntax_error(f: SyntaxProblem, target: Target) -> str:
    engine = target.name or "this engine"
    suggestions = list(f.suggestions)
    if f.too_deep:
        return (
            f"The query is nested too deeply for {engine}'s parser. Flatten it: one IN (...) "
            "list instead of chained ORs, CTEs (WITH a AS (...)) instead of nested subqueries, "
            "fewer parentheses."
        )
    if f.placeholders:
        shown = ", ".join(f.placeholders[:3])
        return (
            f"The query has bind placeholders ({shown}), but no values are bound: nothing "
            "fills them in. Write the values themselves as literals ('text' in single quotes, "
            "numbers as they are), taken from the question."
        )
    if f.unsupported:
        name, instead = f.unsupported
        return f"{engine} does not support {name}. Instead, {instead}."
    if f.degenerate:
        return (
            f'The reply repeats "{f.degenerate}" over and over: the query is '
            "degenerate. Write it again from the start: one short, complete SELECT."
        )
    if f.truncated is not None:
        tail = f.truncated.tail
        text = f'The query is cut off: it ends with "{tail}" mid-statement.'
        if suggestions:
            text += f" Did you mean {_names(suggestions)}?"
        return text + " Write the whole query again, complete and shorter if needed."
    if f.derived_alias:
        return (
            "A subquery in FROM needs an alias. Better: use a CTE, "
            "WITH t AS (SELECT ...) SELECT ... FROM t."
        )
    near = said(f.near)
    where = f' near "{near}"' if near else ""
    return (
        f"The SQL has a syntax error{where}. Check keyword spelling, commas between "
        f"select items, balanced parentheses and quotes, and use {target.name or 'the engine'} "
        "syntax. Return one complete SELECT statement."
    )


def type_mismatch(f: TypeMismatch, target: Target) -> str:
    what = said(f.value)
    text = "A value was compared or combined with a column of another type"
    text += f" ({what})." if what else "."
    return text + (
        " Compare numbers with numbers and text with quoted text; where the types really "
        "differ, add an explicit CAST(column AS type) on one side."
    )


def join_error(f: JoinProblem, target: Target) -> str:
    suggestions = list(f.suggestions)
    missing = f.missing_join
    if missing is not None:
        column, table = missing.column, missing.table
        qualifier = missing.qualifier
        if qualifier and qualifier.lower() != table.lower():
            text = (
                f"{qualifier} is not a table or alias of the query. Column {column} is in {table}"
            )
        else:
            text = f"Column {column} is in {table}"
        text += ", which the query does not join"
        if missing.joins:
            text += ": " + " ".join(missing.joins) + "."
        else:
            text += f": add {table} to FROM with a JOIN on its key."
        in_query = list(missing.in_query)
        others = [o for o in missing.owners if o != table][:2]
        text += f" Then qualify it: {table}.{column}."
        if in_query:
            text += f" Or, if you meant a table the query has: {_names(in_query, 2)}."
        elif others:
            text += f" ({column} is also in {', '.join(others)}.)"
        return text
    ident = f.name if f.identifier is not None else "?"
    text = f'Column "{ident}" is ambiguous: several joined tables have it.'
    if suggestions:
        text += f" Qualify it with its table: {_names(suggestions, 4)}."
    return text + " Qualify every column in SELECT, WHERE, GROUP BY and ORDER BY."


def aggregation_error(f: AggregationProblem, target: Target) -> str:
    suggestions = list(f.suggestions)
    if f.in_where:
        return (
            "Aggregates such as COUNT or SUM cannot be used in WHERE. Move that condition to "
            "HAVING (after GROUP BY), keeping the other WHERE conditions."
        )
    mistake = f.mistake
    kind = mistake.kind if mistake is not None else None
    if mistake is not None and kind == "nested_aggregate":
        return nested_advice(mistake)
    if mistake is not None and kind == "missing_group_by":
        cols = _names(suggestions, 3) or ", ".join(mistake.columns[:3])
        where = "ORDER BY" if mistake.in_order_by else "SELECT"
        agg = mistake.aggregate or "the aggregate"
        return (
            f"{agg} in {where} is computed per group, but the query has no GROUP BY. Add "
            f"GROUP BY {cols} (the columns selected without an aggregate). Keep every "
            "aggregation."
        )
    if mistake is not None and kind == "not_grouped":
        cols = _names(suggestions, 4) or ", ".join(mistake.columns[:4])
        return (
            f"{cols} is selected but neither grouped nor aggregated. Add it to GROUP BY, or "
            "wrap it in an aggregate (MIN, MAX). Keep every aggregation and the existing GROUP "
            "BY columns."
        )
    col = _names(suggestions, 3) or (
        f.name if f.identifier is not None else "the non-aggregated columns"
    )
    return (
        f"Fix the GROUP BY clause: add {col} to GROUP BY. Keep every aggregation (COUNT, "
        "SUM, AVG, ...) and add only the missing GROUP BY columns."
    )


def function_not_found(f: FunctionNotFound, target: Target) -> str:
    fn = f.name if f.identifier is not None else "?"
    suggestions = list(f.suggestions)
    text = f'Function "{fn}" does not exist in {target.name or "this engine"}.'
    if suggestions:
        text += f" Use {suggestions[0]} instead."
    date_help = target.facts.date_functions
    if date_help and f.date_function:
        text += f" Date functions in {date_help}."
    return text + " Use only functions of this dialect."


def division_by_zero(f: Found, target: Target) -> str:
    return (
        "Division by zero. Protect every division: a / NULLIF(b, 0) (or CASE WHEN b = 0 "
        "THEN NULL ELSE a / b END)."
    )


def datetime_format(f: DatetimeFormat, target: Target) -> str:
    value = said(f.value)
    text = f"A date/time value could not be read{f' ({value})' if value else ''}."
    text += " Write dates as 'YYYY-MM-DD' literals and use the dialect's own functions"
    help_ = target.facts.date_functions
    return text + (f": {help_}." if help_ else ".")


def timeout(f: Found, target: Target) -> str:
    return (
        "The query ran past the time limit and was cancelled. Simplify it: filter early "
        "with WHERE, avoid cross joins (join on keys), aggregate before joining, add LIMIT."
    )


def permission_denied(f: Found, target: Target) -> str:
    return "The database refused access. Only read the tables you are allowed to; no writes."


def connection_error(f: Found, target: Target) -> str:
    return "The database connection failed; this is not a problem of the SQL."


def forbidden(f: Found, target: Target) -> str:
    issues = list(f.issues)
    text = " ".join(issues) if issues else "The safety check refused the query."
    return text + (
        " Write only a read-only SELECT (no CREATE, INSERT, UPDATE, DELETE, DROP); use a "
        "CTE (WITH ...) instead of temporary tables."
    )


def multiple_statements(f: Found, target: Target) -> str:
    issues = " ".join(f.issues)
    return (issues + " " if issues else "") + (
        "Write exactly one SELECT statement; express the steps as CTEs (WITH a AS (...), "
        "b AS (...) SELECT ...)."
    )


def no_sql(f: Found, target: Target) -> str:
    return (
        "Your reply contained no SQL query. Reply with exactly one SELECT query in a "
        "fenced ```sql block, and nothing else."
    )


def unknown(f: Found, target: Target) -> str:
    msg = str(f.primary or f.message or "").strip()
    return (
        f"The engine said: {msg[:200]}. Fix the query accordingly, using only tables and "
        "columns of the schema."
    )


TEMPLATES: dict[str, Template] = {
    name: fn
    for name, fn in globals().items()
    if callable(fn)
    and name
    in {
        "column_not_found",
        "table_not_found",
        "syntax_error",
        "type_mismatch",
        "join_error",
        "aggregation_error",
        "function_not_found",
        "division_by_zero",
        "datetime_format",
        "timeout",
        "permission_denied",
        "connection_error",
        "forbidden",
        "multiple_statements",
        "no_sql",
        "unknown",
    }
}


def render(sql: str | None, found: Found, target: Target | None = None) -> str:
    """The feedback text: the failed SQL, then the guidance of the category's template.

    Args:
        sql: the failed query (omitted from the text when None).
        found: what the diagnosis found (its category's record: the template's argument).
        target: the database the query was written for (its dialect's name and advice;
            None: generic SQL).
    """
    category = str(found.category)
    guidance = TEMPLATES.get(category, unknown)(found, target or Target.named(None))
    issues = found.issues
    if issues and category not in ("forbidden", "multiple_statements"):
        guidance = " ".join(issues) + " " + guidance  # the safety check's own words
    if not sql:
        return guidance
    return f"Your previous query failed:\n```sql\n{sql.strip()}\n```\n{guidance}"


def no_sql_feedback(reply: str | None = None) -> str:
    """The feedback for a reply that held no SQL (the agent detects that case itself).

    Example:
        >>> no_sql_feedback().startswith("Your reply contained no SQL")
        True
    """
    return no_sql(NoSQLReply(Category.no_sql, reply=reply or ""), Target.named(None))
