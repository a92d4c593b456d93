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

import re

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_SQL_START = re.compile(
    r"^\s*(?:\(\s*)*(SELECT|WITH|VALUES|FROM|TABLE|SHOW|DESCRIBE|EXPLAIN|PRAGMA|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|ATTACH|COPY|SET|CALL|MERGE|TRUNCATE|GRANT|REPLACE)\b",
    re.I,
)


def content_text(content: object) -> str:
    """The text of a chat reply's ``.content`` (a string or a list of content blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") in (None, "text"):
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block as ``(language, body)``, language lower-cased ('' when absent)."""
    return [(m.group(1).lower(), m.group(2).strip()) for m in _FENCE.finditer(text)]


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


def extract_code(text: str) -> str | None:
    """The fallback's pandas code: a fenced ```python block (or an unlabelled fence that is
    not SQL and assigns ``result``), or None."""
    for language in _CODE_LANGUAGES:
        code = extract_block(text, language)
        if code:
            return code
    for lang, body in fenced_blocks(text):
        if lang == "" and body and not _SQL_START.match(body) and "result" in body:
            return body
    return None
