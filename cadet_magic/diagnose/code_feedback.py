"""What the model is told when a fallback attempt fails, per failure kind (standard library only).

SQL errors of the fallback's SELECT go through the usual diagnosis
(:func:`cadet_magic.diagnose.diagnose`); these templates cover what is particular to the
fallback: a reply without both blocks, a SELECT that is not simple, too many rows, refused
pandas code, a Python error (type, message, line), the time limit and a missing ``result``.

Example:
    >>> from cadet_magic.fallback.in_process import CodeError
    >>> print(python_error(CodeError("error", "KeyError", "'amout'", 2), ["customer", "amount"]))
    Your pandas code raised KeyError at line 2: 'amout': it uses a name df does not have. df has exactly these columns: customer, amount. Use only these names (or add the missing column to the SELECT).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from cadet_magic.sql.simple import RULE as SIMPLE_RULE

#: What the code may and may not do, as told to the model.
CODE_RULES = (
    "The pandas code gets the rows of your SELECT as the DataFrame `df` (its columns named as "
    "in the SELECT), with `pd` (pandas) and `np` (numpy) already available, and must assign the "
    "answer to `result` (a DataFrame, Series or single value). No imports, no files, network or "
    "clipboard (no read_*, to_csv, to_pickle, ...), no names or attributes with double "
    "underscores, no eval/exec/open/getattr, no bare `except:` or `finally:`; df.query/df.eval "
    "only with a literal string over df's columns (no @)."
)


def no_blocks(has_sql: bool, has_code: bool, fetched: bool = False) -> str:
    """What a reply without its blocks is told; after the product's own SELECT (``fetched``)
    only the code was asked for.

    Example:
        >>> print(no_blocks(True, False, fetched=True))
        Your reply had no ```python block that assigns `result`. Reply with exactly one ```python block: df already holds the rows.
    """
    if fetched:
        return (
            "Your reply had no ```python block that assigns `result`. Reply with exactly one "
            "```python block: df already holds the rows."
        )
    missing = [
        what
        for what, present in (
            ("a ```sql block with one simple SELECT", has_sql),
            ("a ```python block that assigns `result`", has_code),
        )
        if not present
    ]
    return (
        f"Your reply had no {' and no '.join(missing)}. Reply with exactly one ```sql block "
        "and one ```python block."
    )


def not_simple(issues: Sequence[Any]) -> str:
    said = " ".join(getattr(i, "message", str(i)) for i in issues)
    return f"{said} {SIMPLE_RULE}".strip()


def too_many_rows(limit: int) -> str:
    return (
        f"Your SELECT returned more than {limit} rows, and an answer computed on part of the data "
        "would be wrong. Add WHERE filters (the question's time range, status, ...) and select "
        "only the columns the pandas code needs."
    )


def code_refused(issues: Sequence[Any]) -> str:
    listed = "\n".join(f"- {i}" for i in issues)
    return f"Your pandas code was refused by the safety check:\n{listed}\n{CODE_RULES}"


#: An attribute asked of a single value (``'numpy.float64' object has no attribute 'quantile'``):
#: the code reduced to one number before it meant to (operator precedence, a missing step).
_SCALAR = re.compile(r"'(?:numpy\.)?(?:float|int|bool|str)\w*' object has no attribute")
#: Exceptions that say the code used a column ``df`` does not have.
MISSING_COLUMN = ("KeyError", "AttributeError", "UndefinedVariableError")
#: Exceptions (and words of their messages) that say a value's type did not fit the operation.
TYPE_ERRORS = ("TypeError", "ValueError", "DateParseError", "OutOfBoundsDatetime")
TYPE_WORDS = ("dtype", "accessor", "datetimelike", "unsupported operand", "convert", "type")


def python_error(
    error: Any,
    columns: Sequence[str],
    dtypes: Sequence[tuple[str, str]] = (),
    fetched: bool = False,
) -> str:
    """The feedback on the code's exception: a missing column -> ``df``'s columns; a type
    error -> their dtypes; otherwise the error and the columns.

    Example:
        >>> from cadet_magic.fallback.in_process import CodeError
        >>> e = CodeError("error", "TypeError", "Can only use .dt accessor with datetimelike values", 1)
        >>> print(python_error(e, ["d"], [("d", "object")], fetched=True))
        Your pandas code raised TypeError at line 1: Can only use .dt accessor with datetimelike values. A value's type does not fit the operation: df's columns and dtypes are d (object). Convert first where needed (pd.to_datetime, pd.to_numeric, .astype) and fix the code.
    """
    cols = ", ".join(str(c) for c in columns) or "(none)"
    kind = str(getattr(error, "type", "") or "")
    message = str(getattr(error, "message", "") or "")
    typed_kinds = (*TYPE_ERRORS, "AttributeError")  # "Can only use .str accessor with ..."
    if kind in typed_kinds and dtypes and any(w in message.lower() for w in TYPE_WORDS):
        typed = ", ".join(f"{c} ({t})" for c, t in dtypes)
        return (
            f"Your pandas code raised {error}. A value's type does not fit the operation: df's "
            f"columns and dtypes are {typed}. Convert first where needed (pd.to_datetime, "
            "pd.to_numeric, .astype) and fix the code."
        )
    if kind == "AttributeError" and _SCALAR.match(message) and "'reset_index'" in message:
        return (
            f"Your pandas code raised {error}: the answer is already a single value. Drop "
            ".reset_index() after the aggregate and assign the value to result as it is."
        )
    if kind == "AttributeError" and _SCALAR.match(message):
        return (
            f"Your pandas code raised {error}: at that point the value is a single number, not "
            "a column or a group, so the steps ran in another order than meant. Write one step "
            "per line: first the row values as a column (df.assign(value=...)), then groupby, "
            "then the aggregate, then assign result."
        )
    if kind in MISSING_COLUMN:
        where = "" if fetched else " (or add the missing column to the SELECT)"
        return (
            f"Your pandas code raised {error}: it uses a name df does not have. df has exactly "
            f"these columns: {cols}. Use only these names{where}."
        )
    fix = "Fix the code." if fetched else "Fix the code (or add the missing column to the SELECT)."
    return f"Your pandas code raised {error}. df holds the columns: {cols}. {fix}"


def code_timeout(error: Any) -> str:
    where = f" (stopped at line {error.line})" if getattr(error, "line", None) else ""
    return (
        f"Your pandas code did not finish within the time limit{where}. Use vectorised pandas "
        "operations (groupby, merge, sort_values, ...) instead of Python loops."
    )


def code_memory(error: Any) -> str:
    where = f" (at line {error.line})" if getattr(error, "line", None) else ""
    return (
        f"Your pandas code ran out of memory{where}: it exceeded the fallback's memory limit. "
        "Select fewer rows and columns, and avoid building large intermediate arrays or "
        "Python lists; aggregate with groupby instead."
    )


def no_result() -> str:
    return (
        "Your pandas code ran but never assigned the answer to `result`. End it with "
        "`result = ...` (a DataFrame, Series or single value)."
    )


def bad_result(error: Any) -> str:
    return f"{getattr(error, 'message', error)}. Assign a DataFrame, Series or single value."


def unavailable(error: Any) -> str:
    return f"The fallback cannot run here: {getattr(error, 'message', error)}."
