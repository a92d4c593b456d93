"""What the fallback's check reads off a program's syntax tree besides its nodes (standard
library only): where a name gets its value (:class:`Bindings`, so a callable handed to
``agg``/``apply`` is known to be visible in the code), the name an attribute chain starts from,
and what makes a ``.format`` call walk objects.

Example:
    >>> import ast
    >>> root_name(ast.parse("pd.options.display[0]", mode="eval").body)
    'pd'
    >>> b = Bindings.of(ast.parse("f = 'su' + 'm'\\ng = len"))
    >>> b.static(ast.Name("f")), b.static(ast.Name("g"))
    (False, True)
    >>> format_problem(ast.Constant("{0.f_back}"))
    'format fields may not read attributes or items ({0.x}, {0[k]})'
"""

from __future__ import annotations

import ast
import string


def root_name(node: ast.AST) -> str | None:
    """The name an attribute/subscript chain starts from (``pd`` in ``pd.options.x[0]``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def format_problem(receiver: ast.expr) -> str | None:
    """Why ``receiver.format`` is refused: not a literal, or fields that walk attributes/items."""
    if not (isinstance(receiver, ast.Constant) and isinstance(receiver.value, str)):
        return "only on a literal string"
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(receiver.value) if f]
    except ValueError:
        return "the format string does not parse"
    if any("." in f or "[" in f for f in fields):
        return "format fields may not read attributes or items ({0.x}, {0[k]})"
    return None


class Bindings:
    """Where each name of a program gets its value: assignments, ``def``s, other bindings."""

    def __init__(self) -> None:
        self.values: dict[str, list[ast.expr]] = {}
        self.functions: set[str] = set()
        self.opaque: set[str] = set()  # loop targets, parameters, with/except names, ...

    @classmethod
    def of(cls, tree: ast.AST) -> Bindings:
        b = cls()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                b.functions.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    b._bind(target, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                b._bind(node.target, node.value)
            elif isinstance(node, ast.NamedExpr):
                b._bind(node.target, node.value)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)):
                b._opaque(node.target)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                b._opaque(node.optional_vars)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                b.opaque.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                b.opaque.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                b.opaque.add(node.rest)
            elif isinstance(node, ast.arg):
                b.opaque.add(node.arg)
        return b

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append(value)
        else:
            self._opaque(target)

    def _opaque(self, target: ast.expr) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.opaque.add(node.id)

    def static(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``node`` is visibly a literal, a function or a container of those."""
        if isinstance(node, (ast.Constant, ast.Lambda)):
            return True
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.opaque or name in seen:
                return False
            if name in self.values:
                return all(self.static(v, seen | {name}) for v in self.values[name])
            return True  # a def, a builtin, df, pd or np
        if isinstance(node, ast.Attribute):
            root = root_name(node)
            return root is not None and root not in self.values and root not in self.opaque
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return all(self.static(e, seen) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(self.static(v, seen) for v in node.values)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.static(node.elt, seen)
        if isinstance(node, ast.DictComp):
            return self.static(node.value, seen)
        if isinstance(node, ast.IfExp):
            return self.static(node.body, seen) and self.static(node.orelse, seen)
        if isinstance(node, ast.Call):
            root = root_name(node.func)
            return (
                isinstance(node.func, ast.Attribute)
                and root in ("pd", "np")
                and root not in self.values
                and all(self.static(a, seen) for a in node.args)
                and all(self.static(k.value, seen) for k in node.keywords)
            )
        return False
