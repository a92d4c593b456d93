"""Getting code out of a model's reply (stdlib only).

Example:
    >>> extract_code("```sql\\nSELECT 1\\n```\\n```python\\nresult = df.sum()\\n```")
    'result = df.sum()'
    >>> extract_sql("Here you go:\\n```sql\\nSELECT 1;\\n```\\nEnjoy")
    'SELECT 1;'
    >>> extract_sql("SELECT name FROM t") is not None
    True
    >>> extract_sql("I am not sure what you mean.") is None
    True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from cadet_magic.result import Tokens

#: Characters of a reply that are read at most (a reply is cut there before anything reads it):
#: far more than any answer needs (an answer is a query and some code, a few thousand), few
#: enough that no reading of a reply is long.
MAX_REPLY_CHARS = 32_000
FENCE = "```"
_SQL_START = re.compile(
    r"^\s*(?:\(\s*)*(SELECT|WITH|VALUES|FROM|TABLE|SHOW|DESCRIBE|EXPLAIN|PRAGMA|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|ATTACH|COPY|SET|CALL|MERGE|TRUNCATE|GRANT|REPLACE)\b",
    re.I,
)


def content_text(content: object) -> str:
    """The text of a chat reply's ``.content`` (a string or a list of content blocks), cut to
    :data:`MAX_REPLY_CHARS` before anything reads it.

    Example:
        >>> len(content_text("`" * 120_000)) == MAX_REPLY_CHARS
        True
    """
    if isinstance(content, str):
        return content[:MAX_REPLY_CHARS]
    if isinstance(content, list):
        parts, size = [], 0
        for block in content:
            if size >= MAX_REPLY_CHARS:
                break
            if isinstance(block, str):
                text = block
            elif isinstance(block, dict) and block.get("type") in (None, "text"):
                text = str(block.get("text", ""))[:MAX_REPLY_CHARS]
            else:
                continue
            parts.append(text)
            size += len(text)
        return "".join(parts)[:MAX_REPLY_CHARS]
    return "" if content is None else str(content)[:MAX_REPLY_CHARS]


def _language(header: str) -> str:
    """The language a fence's first line names: the word after the backticks (letters, digits,
    ``_``, ``+``, ``-``), '' when none."""
    header = header.lstrip(" \t")
    end = 0
    while end < len(header) and (header[end].isalnum() or header[end] in "_+-"):
        end += 1
    return header[:end]


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block as ``(language, body)``, language lower-cased ('' when absent): a
    fence is three backticks, the rest of its line names the language, and the block ends at
    the next three backticks (or the text's end). One pass over the text (each search starts
    where the last one ended): a reply of nothing but backticks costs its length.

    Example:
        >>> fenced_blocks("a\\n```SQL x\\nSELECT 1\\n```\\n``` \\nb")
        [('sql', 'SELECT 1'), ('', 'b')]
        >>> fenced_blocks("`" * 10)
        []
    """
    blocks = []
    at = text.find(FENCE)
    while at >= 0:
        line_end = text.find("\n", at + len(FENCE))
        if line_end < 0:
            break  # no line after this fence, nor after any later one
        close = text.find(FENCE, line_end + 1)
        body = text[line_end + 1 : close if close >= 0 else len(text)]
        blocks.append((_language(text[at + len(FENCE) : line_end]).lower(), body.strip()))
        if close < 0:
            break
        at = text.find(FENCE, close + len(FENCE))
    return blocks


def extract_block(text: str, language: str) -> str | None:
    """The first fenced block in ``language``, or None."""
    for lang, body in fenced_blocks(text):
        if lang == language and body:
            return body
    return None


def extract_sql(text: str) -> str | None:
    """The SQL of a reply: a fenced ```sql block, an unlabelled fence holding SQL, or a bare statement."""
    sql = extract_block(text, "sql")
    if sql:
        return sql
    for lang, body in fenced_blocks(text):
        if lang in ("", "postgresql", "postgres", "duckdb", "sqlite", "mysql") and _SQL_START.match(
            body
        ):
            return body
    bare = text.strip()
    if _SQL_START.match(bare):
        return bare
    return None


_CODE_LANGUAGES = ("python", "py", "python3", "pandas", "ipython")


#: Imports of the names the fallback's code is given (``pd``, ``np``): no-ops, left out.
_GIVEN_IMPORTS = (["import", "pandas", "as", "pd"], ["import", "numpy", "as", "np"])


def _given_import(line: str) -> bool:
    """Whether ``line`` is ``import pandas as pd`` or ``import numpy as np`` (spacing, a ``;``
    and a comment aside), read without a regular expression."""
    code = line.split("#", 1)[0].strip().removesuffix(";")
    return code.split() in _GIVEN_IMPORTS


def without_given_imports(code: str) -> str:
    """``code`` without its top-level ``import pandas as pd`` / ``import numpy as np`` lines:
    those names are given, and small models write the imports out of habit (the code check
    refuses every import).

    Example:
        >>> without_given_imports("import pandas as pd\\nimport os\\nresult = df")
        'import os\\nresult = df'
    """
    lines = [ln for ln in code.split("\n") if not _given_import(ln)]
    return "\n".join(lines).strip("\n")


def extract_code(text: str) -> str | None:
    """The fallback's pandas code: a fenced ```python block (or an unlabelled fence that is
    not SQL and assigns ``result``), without imports of the names it is given; or None."""
    for language in _CODE_LANGUAGES:
        code = extract_block(text, language)
        if code:
            return without_given_imports(code) or code
    for lang, body in fenced_blocks(text):
        if lang == "" and body and not _SQL_START.match(body) and "result" in body:
            return without_given_imports(body) or body
    return None


#: The usage keys of each provider's report, as (input, output) pairs: LangChain's
#: ``usage_metadata`` and Anthropic, OpenAI's ``usage`` (llama.cpp's server, vLLM, LM Studio,
#: Ollama's /v1 and a ``llamacpp:`` model too), and Ollama's native counts.
_USAGE_KEYS = (
    ("input_tokens", "output_tokens"),
    ("prompt_tokens", "completion_tokens"),
    ("prompt_eval_count", "eval_count"),
)


#: The largest count a usage report may give for one call: a larger one (or a negative, a
#: fraction, infinity, NaN) is not a count of tokens, and that side of the report is dropped.
MAX_REPORTED_TOKENS = 10**9


def _count(value: Any) -> int | None:
    """A reported count as an int, or None when it is not one (checked before any conversion:
    ``int(float("inf"))`` raises, a 5,000-digit int cannot be shown as text).

    Example:
        >>> [_count(v) for v in (812, 41.0, True, -3, 2.5, float("inf"), float("nan"), 10**5000)]
        [812, 41, None, None, None, None, None, None]
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    return value if 0 <= value <= MAX_REPORTED_TOKENS else None


def _tokens_in(report: Any) -> Tokens | None:
    if not isinstance(report, Mapping):
        return None
    for input_key, output_key in _USAGE_KEYS:
        tokens = Tokens(_count(report.get(input_key)), _count(report.get(output_key)))
        if tokens != (None, None):
            return tokens
    return None


def usage_of(reply: Any) -> Tokens | None:
    """The tokens a chat reply reports using, or None when it reports none.

    Read from LangChain's ``AIMessage.usage_metadata``, else its ``response_metadata``
    (``token_usage``, ``usage``, or Ollama's counts at the top level), else a ``usage`` mapping
    on the reply (the browser client, a ``llamacpp:`` model).

    Example:
        >>> class Reply:
        ...     usage_metadata = {"input_tokens": 812, "output_tokens": 41, "total_tokens": 853}
        >>> usage_of(Reply())
        Tokens(input=812, output=41)
        >>> class Browser:
        ...     usage = {"prompt_tokens": 90, "completion_tokens": 7}
        >>> usage_of(Browser())
        Tokens(input=90, output=7)
        >>> usage_of("SELECT 1") is None
        True
    """
    found = _tokens_in(getattr(reply, "usage_metadata", None))
    if found is not None:
        return found
    meta = getattr(reply, "response_metadata", None)
    if isinstance(meta, Mapping):
        for report in (meta.get("token_usage"), meta.get("usage"), meta):
            found = _tokens_in(report)
            if found is not None:
                return found
    return _tokens_in(getattr(reply, "usage", None))
