"""Feedback templates: one short, specific correction per category (stdlib only).

Each template returns at most 60 words of guidance besides the names it lists: a column
taken from a join's alias is told the columns of that alias's table (up to 30 names), which
on wide tables makes the longest guidance about 120 words (both measured by the corruption
benchmark); :func:`render` puts the failed SQL in front of it. The advice names the usual
repair for each category: CTEs instead of derived-table aliases, NULLIF for division, the
dialect's own date functions, quoting case-sensitive identifiers, and for GROUP BY errors
"keep every aggregation".

Example:
    >>> print(render("SELECT amout FROM orders", "column_not_found",
    ...              {"identifier": "amout"}, ["orders.amount"], "duckdb"))
    Your previous query failed:
    ```sql
    SELECT amout FROM orders
    ```
    Column "amout" does not exist. Use a real column: orders.amount. Do not invent column names; qualify columns with their table when several tables are joined.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cadet_magic.sql.dialect import dialect_key

Template = Callable[[dict[str, Any], list[str], str], str]

_DATE_FUNCTIONS = {
    "duckdb": "DuckDB: CAST(x AS DATE), strptime(x, '%Y-%m-%d'), strftime(x, '%Y'), "
    "date_trunc('month', x), x + INTERVAL 1 DAY",
    "sqlite": "SQLite stores dates as text 'YYYY-MM-DD': date(x), strftime('%Y', x), "
    "date(x, '+1 day'), julianday(a) - julianday(b)",
    "postgres": "PostgreSQL: x::date, to_date(x, 'YYYY-MM-DD'), to_char(x, 'YYYY'), "
    "EXTRACT(YEAR FROM x), date_trunc('month', x), x + INTERVAL '1 day'",
    "mysql": "MySQL/MariaDB: CAST(x AS DATE), str_to_date(x, '%Y-%m-%d'), "
    "date_format(x, '%Y'), YEAR(x), x + INTERVAL 1 DAY, datediff(a, b)",
}


_dialect = dialect_key


def _names(names: list[str], n: int = 3) -> str:
    return ", ".join(names[:n])


def _nested_advice(mistake: dict[str, Any]) -> str:
    """Which aggregate is inside which, and the rewrite that fits the outer one.

    Example:
        >>> print(_nested_advice({"expression": "MAX(COUNT(*))", "outer": "MAX", "inner": "COUNT(*)"}))
        Aggregates cannot be nested: MAX(COUNT(*)) takes MAX over an aggregate. For the group with the largest value, GROUP BY the group, then ORDER BY COUNT(*) DESC LIMIT 1 (no MAX).
    """
    expr = mistake.get("expression") or "an aggregate of an aggregate"
    outer, inner = mistake.get("outer"), mistake.get("inner")
    if not (outer and inner):
        return (
            f"Aggregates cannot be nested ({expr}). For the largest or smallest group, "
            "GROUP BY, then ORDER BY the aggregate DESC (or ASC) LIMIT 1; or aggregate in a "
            "subquery first: SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM ... GROUP BY ...) AS t."
        )
    # The inner aggregate is named at most twice: model-written ones can be long, and the
    # advice must stay short.
    if inner in expr:  # MAX(COUNT(*)): the expression already shows the inner aggregate
        head = f"Aggregates cannot be nested: {expr} takes {outer} over an aggregate."
    else:  # MAX(n) with n an alias of COUNT(*)
        head = f"Aggregates cannot be nested: {expr} takes {outer} over {inner}, an aggregate."
    if outer.upper() in ("MAX", "MIN"):
        way, order = ("largest", "DESC") if outer.upper() == "MAX" else ("smallest", "ASC")
        return (
            f"{head} For the group with the {way} value, GROUP BY the group, then ORDER BY "
            f"{inner} {order} LIMIT 1 (no {outer.upper()})."
        )
    return (
        f"{head} Compute it per group in a subquery first, then {outer.upper()} over that: "
        f"SELECT {outer.upper()}(n) FROM (SELECT {inner} AS n FROM ... GROUP BY ...) AS t."
    )


def column_not_found(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    ident = details.get("identifier", "?")
    text = f'Column "{ident}" does not exist.'
    if details.get("double_quoted_string"):
        return (
            text + f" Write text values in single quotes ('{ident}'); double quotes name "
            "columns and tables."
        )
    if details.get("case_sensitive"):
        real = str(details["case_sensitive"])
        col = real.split(".")[-1]
        return (
            text + f" The real column is {real}: on this engine quoted names keep their case "
            f'and unquoted ones are folded to lower case, so write it exactly, in double quotes: "{col}".'
        )
    if details.get("derived_alias"):
        return (
            text + " It is not a column of the subquery it refers to. Use a CTE "
            "(WITH name AS (SELECT ...)) and select only columns the CTE defines."
        )
    if details.get("qualifier_table"):
        qualifier = str(ident).rpartition(".")[0]
        text += (
            f" {qualifier} is {details['qualifier_table']}, whose columns are "
            f"{_names(details.get('qualifier_columns') or [], 30)}."
        )
    written = details.get("as_written") or {}
    if suggestions:
        shown = [f"{written[s]} ({s})" if s in written else s for s in suggestions[:3]]
        text += f" Use a real column: {', '.join(shown)}."
    return text + (
        " Do not invent column names; qualify columns with their table when several "
        "tables are joined."
        if not written
        else " Do not invent column names; qualify each column with the alias of its table."
    )


def table_not_found(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    ident = details.get("identifier", "?")
    if details.get("derived_alias") or (ident and len(str(ident)) <= 2 and not suggestions):
        return (
            f'"{ident}" is not a table. Use a CTE instead of a derived-table alias: '
            "WITH t AS (SELECT ...) SELECT ... FROM t."
        )
    text = f'Table "{ident}" does not exist.'
    if details.get("case_sensitive"):
        real = details["case_sensitive"]
        return (
            text + f" The real table is {real}: on this engine quoted names keep their case and "
            f'unquoted ones are folded to lower case, so write it exactly, in double quotes: "{real}".'
        )
    if suggestions:
        text += f" Did you mean {_names(suggestions)}?"
    allowed = details.get("tables")
    if allowed:
        text += f" Use only these tables: {_names(allowed, 12)}."
    return text + " Do not abbreviate or invent table names."


def syntax_error(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    engine = dialect or "this engine"
    if details.get("too_deep"):
        return (
            f"The query is nested too deeply for {engine}'s parser. Flatten it: one IN (...) "
            "list instead of chained ORs, CTEs (WITH a AS (...)) instead of nested subqueries, "
            "fewer parentheses."
        )
    if details.get("placeholders"):
        shown = ", ".join(details["placeholders"][:3])
        return (
            f"The query has bind placeholders ({shown}), but no values are bound: nothing "
            "fills them in. Write the values themselves as literals ('text' in single quotes, "
            "numbers as they are), taken from the question."
        )
    if details.get("unsupported"):
        name, instead = details["unsupported"]
        return f"{engine} does not support {name}. Instead, {instead}."
    if details.get("repeated"):
        return (
            f'The reply repeats "{details["repeated"]}" over and over: the query is '
            "degenerate. Write it again from the start: one short, complete SELECT."
        )
    if details.get("truncated"):
        tail = details["truncated"]["tail"]
        text = f'The query is cut off: it ends with "{tail}" mid-statement.'
        if suggestions:
            text += f" Did you mean {_names(suggestions)}?"
        return text + " Write the whole query again, complete and shorter if needed."
    if details.get("derived_alias"):
        return (
            "A subquery in FROM needs an alias. Better: use a CTE, "
            "WITH t AS (SELECT ...) SELECT ... FROM t."
        )
    near = details.get("near")
    where = f' near "{near}"' if near else ""
    return (
        f"The SQL has a syntax error{where}. Check keyword spelling, commas between "
        f"select items, balanced parentheses and quotes, and use {dialect or 'the engine'} "
        "syntax. Return one complete SELECT statement."
    )


def type_mismatch(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    what = details.get("value")
    text = "A value was compared or combined with a column of another type"
    text += f" ({what})." if what else "."
    return text + (
        " Compare numbers with numbers and text with quoted text; where the types really "
        "differ, add an explicit CAST(column AS type) on one side."
    )


def join_error(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    missing = details.get("missing_join")
    if missing:
        column, table = missing["column"], missing["table"]
        qualifier = missing.get("qualifier")
        if qualifier and qualifier.lower() != table.lower():
            text = (
                f"{qualifier} is not a table or alias of the query. Column {column} is in {table}"
            )
        else:
            text = f"Column {column} is in {table}"
        text += ", which the query does not join"
        if missing.get("joins"):
            text += ": " + " ".join(missing["joins"]) + "."
        else:
            text += f": add {table} to FROM with a JOIN on its key."
        in_query = missing.get("in_query") or []
        others = [o for o in missing.get("owners", []) if o != table][:2]
        text += f" Then qualify it: {table}.{column}."
        if in_query:
            text += f" Or, if you meant a table the query has: {_names(in_query, 2)}."
        elif others:
            text += f" ({column} is also in {', '.join(others)}.)"
        return text
    ident = details.get("identifier", "?")
    text = f'Column "{ident}" is ambiguous: several joined tables have it.'
    if suggestions:
        text += f" Qualify it with its table: {_names(suggestions, 4)}."
    return text + " Qualify every column in SELECT, WHERE, GROUP BY and ORDER BY."


def aggregation_error(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    if details.get("aggregate_in_where"):
        return (
            "Aggregates such as COUNT or SUM cannot be used in WHERE. Move that condition to "
            "HAVING (after GROUP BY), keeping the other WHERE conditions."
        )
    mistake = details.get("aggregate_mistake") or {}
    kind = mistake.get("kind")
    if kind == "nested_aggregate":
        return _nested_advice(mistake)
    if kind == "missing_group_by":
        cols = _names(suggestions, 3) or ", ".join(mistake.get("columns", [])[:3])
        where = "ORDER BY" if mistake.get("in_order_by") else "SELECT"
        agg = mistake.get("aggregate") or "the aggregate"
        return (
            f"{agg} in {where} is computed per group, but the query has no GROUP BY. Add "
            f"GROUP BY {cols} (the columns selected without an aggregate). Keep every "
            "aggregation."
        )
    if kind == "not_grouped":
        cols = _names(suggestions, 4) or ", ".join(mistake.get("columns", [])[:4])
        return (
            f"{cols} is selected but neither grouped nor aggregated. Add it to GROUP BY, or "
            "wrap it in an aggregate (MIN, MAX). Keep every aggregation and the existing GROUP "
            "BY columns."
        )
    col = _names(suggestions, 3) or details.get("identifier", "the non-aggregated columns")
    return (
        f"Fix the GROUP BY clause: add {col} to GROUP BY. Keep every aggregation (COUNT, "
        "SUM, AVG, ...) and add only the missing GROUP BY columns."
    )


def function_not_found(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    fn = details.get("identifier", "?")
    text = f'Function "{fn}" does not exist in {dialect or "this engine"}.'
    if suggestions:
        text += f" Use {suggestions[0]} instead."
    date_help = _DATE_FUNCTIONS.get(_dialect(dialect))
    if date_help and details.get("date_function"):
        text += f" Date functions in {date_help}."
    return text + " Use only functions of this dialect."


def division_by_zero(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    return (
        "Division by zero. Protect every division: a / NULLIF(b, 0) (or CASE WHEN b = 0 "
        "THEN NULL ELSE a / b END)."
    )


def datetime_format(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    value = details.get("value")
    text = f"A date/time value could not be read{f' ({value})' if value else ''}."
    text += " Write dates as 'YYYY-MM-DD' literals and use the dialect's own functions"
    help_ = _DATE_FUNCTIONS.get(_dialect(dialect))
    return text + (f": {help_}." if help_ else ".")


def timeout(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    return (
        "The query ran past the time limit and was cancelled. Simplify it: filter early "
        "with WHERE, avoid cross joins (join on keys), aggregate before joining, add LIMIT."
    )


def permission_denied(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    return "The database refused access. Only read the tables you are allowed to; no writes."


def connection_error(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    return "The database connection failed; this is not a problem of the SQL."


def forbidden(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    issues = details.get("issues") or []
    text = " ".join(issues) if issues else "The safety check refused the query."
    return text + (
        " Write only a read-only SELECT (no CREATE, INSERT, UPDATE, DELETE, DROP); use a "
        "CTE (WITH ...) instead of temporary tables."
    )


def multiple_statements(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    issues = " ".join(details.get("issues") or [])
    return (issues + " " if issues else "") + (
        "Write exactly one SELECT statement; express the steps as CTEs (WITH a AS (...), "
        "b AS (...) SELECT ...)."
    )


def no_sql(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    return (
        "Your reply contained no SQL query. Reply with exactly one SELECT query in a "
        "fenced ```sql block, and nothing else."
    )


def unknown(details: dict[str, Any], suggestions: list[str], dialect: str) -> str:
    msg = str(details.get("primary") or details.get("message") or "").strip()
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


def render(
    sql: str | None,
    category: str,
    details: dict[str, Any],
    suggestions: list[str],
    dialect: str | None = None,
) -> str:
    """The feedback text: the failed SQL, then the category's guidance.

    Args:
        sql: the failed query (omitted from the text when None).
        category: a :class:`~cadet_magic.diagnose.model.Category` value.
        details: what the diagnosis read from the error.
        suggestions: ranked real names.
        dialect: the engine's dialect.
    """
    guidance = TEMPLATES.get(str(category), unknown)(details, suggestions, dialect or "")
    issues = details.get("issues")
    if issues and str(category) not in ("forbidden", "multiple_statements"):
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
    return no_sql({"reply": reply or ""}, [], "")
