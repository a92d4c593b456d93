"""The fallback's pandas code: checked on its syntax tree, run in a fresh namespace (portable).

:mod:`.code_check` is standard library only (it runs in Pyodide without pandas); :mod:`.in_process`
imports pandas and numpy lazily, inside the functions that need them.

Example:
    >>> from cadet_magic.fallback import check_code
    >>> check_code("result = df.groupby('a')['b'].sum()").ok
    True
    >>> check_code("import os").ok
    False
"""

from cadet_magic.fallback.code_check import CodeCheck, CodeIssue, check_code

__all__ = ["CodeCheck", "CodeIssue", "check_code"]
