"""The fallback's safety check for pandas code, on the Python syntax tree (standard library only).

The code the model writes for the fallback must only compute an answer from ``df`` with
``pd`` and ``np``. Every decision is taken on the :mod:`ast` tree, never on the text:

* no ``import`` / ``from ... import``, no ``global``/``nonlocal``, no classes, no ``async``;
* no dunder names or attributes (``__class__``, ``__globals__``, ``__builtins__``, ...) and
  no private attributes (``df._mgr``), no frame or code introspection (``gi_frame``,
  ``f_globals``, ``tb_frame``, ``co_code``, ``mro``);
* none of the builtins that run code, read input or reach objects by name (``exec``,
  ``eval``, ``compile``, ``open``, ``globals``, ``locals``, ``vars``, ``getattr``,
  ``setattr``, ``delattr``, ``__import__``, ``breakpoint``, ``input``, ``type``, ...) and no
  module names (``os``, ``sys``, ``subprocess``, ...);
* no file, network, clipboard or process access, pandas and numpy I/O included: every
  ``read_*``, every ``to_*`` that can write (``to_csv``, ``to_pickle``, ``to_sql``,
  ``to_clipboard``, ``to_html``, ...; ``to_frame``/``to_dict``/``to_numpy``/``to_datetime`` and
  the like stay allowed), ``np.load``/``np.save``/``tofile``/``memmap``, ``pd.io``,
  ``np.lib``, plotting and global settings (``set_option``, ``pd.options``);
* ``DataFrame.eval``/``query`` and ``pd.eval`` only called directly with a literal string that
  stays inside the frame: no ``@`` references, no dunders, and the same rules inside;
* strings passed to calls may not name a banned method (``df.agg("to_pickle")`` dispatches by
  name) nor contain ``__``; what ``agg``/``aggregate``/``apply``/``transform`` (and ``aggfunc=``)
  receive must be visible in the code: a literal, a lambda, a ``def``, a builtin or a ``pd``/``np``
  function, or a container of those, never a string computed at run time
  (``df.agg("ev" + "al", ...)``), and those methods are only called directly;
* ``.format``/``.format_map`` only on a literal string whose fields read no attributes or items
  (``"{0.f_back}".format(x)`` walks objects);
* attributes may only be assigned for ``columns``, ``index``, ``name`` and ``names``, and never
  on ``pd``/``np`` (that would change pandas for the whole kernel);
* no bare ``except:`` and no ``finally:`` (both could keep running past the time limit).

Example:
    >>> check_code("result = df.groupby('customer')['amount'].sum().nlargest(3)").ok
    True
    >>> c = check_code("x = 1\\nresult = df.__class__")
    >>> c.ok, c.issues[0].line, c.issues[0].code
    (False, 2, 'dunder')
    >>> print(check_code("df.to_csv('out.csv')").message)
    Refused: line 1: `to_csv` reads or writes files, the network or the clipboard; compute the answer in memory from df.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from cadet_magic.fallback.code_bindings import Bindings, format_problem, root_name
from cadet_magic.fallback.code_rules import (  # noqa: F401 - the tables stay importable here
    _WHY_GLOBAL,
    AGGFUNC_CALLS,
    ASSIGNABLE_ATTRS,
    BANNED_ATTR_PREFIXES,
    BANNED_ATTRS,
    BANNED_BUILTINS,
    BANNED_MODULES,
    BANNED_STRINGS,
    DISPATCH_METHODS,
    EXPRESSION_METHODS,
    FORMAT_METHODS,
    MAX_CODE_CHARS,
    MODULE_ATTRS,
    SAFE_TO,
    attr_problem,
    name_problem,
)


@dataclass(frozen=True)
class CodeIssue:
    """One reason the code was refused, with its 1-based line (None when unknown)."""

    line: int | None
    code: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(frozen=True)
class CodeCheck:
    """The verdict on a program: ``ok``, the ``issues`` found and a one-line ``message``."""

    ok: bool
    issues: list[CodeIssue] = field(default_factory=list)
    message: str = "ok"


class _Checker(ast.NodeVisitor):
    """Walks a program (or an eval/query expression) and collects the issues."""

    def __init__(self, line_offset: int = 0, fixed_line: int | None = None) -> None:
        self.issues: list[CodeIssue] = []
        self.called: set[int] = set()
        self.line_offset = line_offset
        self.fixed_line = fixed_line
        self.module_aliases: set[str] = {"pd", "np"}
        self.bindings = Bindings()

    def visit_Module(self, node: ast.Module) -> None:
        self.bindings = Bindings.of(node)
        self.generic_visit(node)

    def add(self, node: ast.AST | None, code: str, message: str) -> None:
        line = self.fixed_line
        if line is None and node is not None:
            line = getattr(node, "lineno", None)
            line = line + self.line_offset if line is not None else None
        self.issues.append(CodeIssue(line, code, message))

    # statements -------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        names = ", ".join(a.name for a in node.names)
        self.add(node, "import", f"`import {names}`: imports are not allowed; pd and np are given")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.add(
            node,
            "import",
            f"`from {node.module or '.'} import ...`: imports are not allowed; pd and np are given",
        )

    def visit_Global(self, node: ast.Global) -> None:
        self.add(node, "scope", "`global` is not allowed")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.add(node, "scope", "`nonlocal` is not allowed")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.add(node, "class", f"class `{node.name}`: class definitions are not allowed")
        self.generic_visit(node)

    def _async(self, node: ast.AST) -> None:
        self.add(node, "async", "async code is not allowed")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_AsyncFor = visit_AsyncWith = visit_Await = _async

    def visit_Try(self, node: ast.Try) -> None:
        for handler in node.handlers:
            if handler.type is None:
                self.add(handler, "bare_except", "a bare `except:` is not allowed; name the error")
        if node.finalbody:
            self.add(node.finalbody[0], "finally", "`finally:` is not allowed")
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]  # the same checks for try/except*

    def _targets(self, node: ast.AST, targets: list[ast.expr]) -> None:
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, (ast.Attribute, ast.Subscript)):
                    root = root_name(t)
                    if root in self.module_aliases:
                        self.add(t, "global_state", f"assigning into `{root}` {_WHY_GLOBAL}")
                    elif isinstance(t, ast.Attribute) and t.attr not in ASSIGNABLE_ATTRS:
                        self.add(
                            t,
                            "attribute_assign",
                            f"assigning the attribute `{t.attr}` is not allowed "
                            "(only columns, index, name, names)",
                        )

    def visit_Assign(self, node: ast.Assign) -> None:
        self._targets(node, node.targets)
        # `P = pd.DataFrame` makes P an alias whose attributes must not be assigned either.
        if isinstance(node.value, ast.Attribute) and root_name(node.value) in self.module_aliases:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.module_aliases.add(target.id)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets(node, [node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets(node, [node.target])
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                self.add(target, "attribute_assign", "deleting attributes is not allowed")
        self._targets(node, [t for t in node.targets if not isinstance(t, ast.Attribute)])
        self.generic_visit(node)

    # expressions ------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        problem = name_problem(node.id)
        if problem:
            self.add(node, problem[0], f"`{node.id}`: {problem[1]}")

    def visit_arg(self, node: ast.arg) -> None:
        problem = name_problem(node.arg)
        if problem:
            self.add(node, problem[0], f"`{node.arg}`: {problem[1]}")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        problem = attr_problem(node.attr)
        if problem:
            self.add(node, problem[0], f"`{node.attr}` {problem[1]}")
        elif node.attr in EXPRESSION_METHODS and id(node) not in self.called:
            self.add(
                node,
                "expression",
                f"`.{node.attr}` may only be called directly, with a literal string",
            )
        elif node.attr in DISPATCH_METHODS and id(node) not in self.called:
            self.add(node, "dispatch", f"`.{node.attr}` may only be called directly")
        elif node.attr in FORMAT_METHODS:
            wrong = format_problem(node.value)
            if wrong:
                self.add(node, "format", f"`.{node.attr}`: {wrong}")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "__" in node.value:
            self.add(node, "dunder", "strings with `__` are not allowed (they can reach internals)")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        self.called.add(id(func))
        if isinstance(func, ast.Attribute) and func.attr in EXPRESSION_METHODS:
            self._expression_call(node, func.attr)
        self._dispatch_call(node)
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            for sub in ast.walk(arg):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    problem = attr_problem(sub.value) if sub.value.isidentifier() else None
                    if sub.value in BANNED_STRINGS or (
                        problem and problem[0] not in ("private", "module")
                    ):
                        self.add(
                            sub,
                            "string_dispatch",
                            f"the string {sub.value!r} names a method that is not allowed",
                        )
        self.generic_visit(node)

    def _dispatch_call(self, node: ast.Call) -> None:
        """What agg/apply/transform and ``aggfunc=`` receive must be visible in the code."""
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        given: list[ast.expr] = []
        if name in DISPATCH_METHODS:
            given += node.args[:1]
            given += [k.value for k in node.keywords if k.arg in ("func", "arg")]
            # named aggregation: total=("amount", "sum")
            given += [
                k.value
                for k in node.keywords
                if k.arg not in ("func", "arg", "args") and isinstance(k.value, ast.Tuple)
            ]
        if name in AGGFUNC_CALLS:
            given += [k.value for k in node.keywords if k.arg == "aggfunc"]
            if name == "NamedAgg":
                given += node.args[1:2]
        for value in given:
            if not self.bindings.static(value):
                self.add(
                    value,
                    "dispatch",
                    f"`{name}` must be given a function, a lambda or a literal name (or a list or "
                    "dict of those), not a value computed at run time",
                )

    def _expression_call(self, node: ast.Call, method: str) -> None:
        """``df.query(...)``, ``df.eval(...)``, ``pd.eval(...)``: literal, frame-only strings."""
        for k in node.keywords:
            if k.arg in ("local_dict", "global_dict", "resolvers", "level", "target"):
                self.add(k.value, "expression", f"`{method}(..., {k.arg}=...)` is not allowed")
        expr = node.args[0] if node.args else None
        for k in node.keywords:
            if k.arg == "expr":
                expr = k.value
        if not (isinstance(expr, ast.Constant) and isinstance(expr.value, str)):
            self.add(
                node,
                "expression",
                f"`.{method}()` needs a literal string expression (no variables or f-strings)",
            )
            return
        text = expr.value
        if "@" in text:
            self.add(
                expr,
                "expression",
                f"`.{method}()` strings may not use `@` references: they reach outside the frame",
            )
        if "__" in text:
            return  # reported by visit_Constant
        # Backtick-quoted column names become plain placeholder names before parsing.
        plain = re.sub(r"`[^`]*`", "_col", text.replace("@", " "))
        try:
            tree = ast.parse(plain.strip(), mode="exec")
        except SyntaxError:
            self.add(
                expr,
                "expression",
                f"`.{method}()` string {text!r} could not be checked; "
                "use column comparisons, arithmetic and & | ~",
            )
            return
        inner = _Checker(fixed_line=getattr(expr, "lineno", None))
        inner.module_aliases = set()
        inner.visit(tree)
        for issue in inner.issues:
            self.issues.append(
                CodeIssue(issue.line, issue.code, f"in the `.{method}()` string: {issue.message}")
            )


def check_code(code: str) -> CodeCheck:
    """Checks pandas code on its syntax tree before it may run.

    Args:
        code: the Python the model wrote; it should compute ``result`` from ``df``.

    Returns:
        A :class:`CodeCheck`; ``issues`` name each problem with its line, ``message``
        summarises them in one line.

    Example:
        >>> check_code("result = df.sort_values('amount').head(3)").ok
        True
        >>> c = check_code("import os\\nresult = open('x').read()")
        >>> [(i.line, i.code) for i in c.issues]
        [(1, 'import'), (2, 'banned_name')]
    """
    if not isinstance(code, str) or not code.strip():
        return _verdict(
            [CodeIssue(None, "empty", "the code is empty; assign the answer to result")]
        )
    if len(code) > MAX_CODE_CHARS:
        return _verdict(
            [CodeIssue(None, "too_long", f"the code is longer than {MAX_CODE_CHARS} characters")]
        )
    try:
        tree = ast.parse(code, filename="<fallback>", mode="exec")
    except SyntaxError as e:
        return _verdict([CodeIssue(e.lineno, "syntax", f"SyntaxError: {e.msg}")])
    except ValueError as e:  # e.g. NUL bytes
        return _verdict([CodeIssue(None, "syntax", f"the code could not be parsed: {e}")])
    checker = _Checker()
    checker.visit(tree)
    return _verdict(checker.issues)


def _verdict(issues: list[CodeIssue]) -> CodeCheck:
    unique = list(dict.fromkeys(issues))
    if not unique:
        return CodeCheck(ok=True, issues=[], message="ok")
    text = "; ".join(str(i) for i in unique[:5])
    if len(unique) > 5:
        text += f" (and {len(unique) - 5} more)"
    end = "" if text.endswith((".", "?", "!")) else "."
    return CodeCheck(ok=False, issues=unique, message=f"Refused: {text}{end}")
