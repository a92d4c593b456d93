"""The package's import structure: no import cycles, and the portable core never imports an edge;
the benchmark programs (``benchmarks/``) import one way too, the package never imports them.

The core (the agent, the SQL check, the diagnosis, the schema, the fallback, and the plain-data
modules they share) runs in Pyodide: it imports the standard library, sqlglot, sqlparse and
other core modules only (pandas and pyarrow lazily, inside the functions that run the
fallback's code). The edges (the magic, the API, the model loaders, the displays, the database
runners) adapt the core to IPython, widgets, databases and providers; they may import the core,
never the other way round. Every import counts, lazy ones inside functions too, except those
under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import cadet_magic

ROOT = Path(cadet_magic.__file__).parent
#: The benchmark programs and their tools, beside the package.
BENCHMARKS = ROOT.parent / "benchmarks"

#: Packages and modules of the portable core (dotted, under cadet_magic).
CORE_PACKAGES = ("agent", "sql", "diagnose", "result_check", "schema", "fallback", "vote")
CORE_MODULES = (
    "result",
    "kinds",
    "options",
    "prices",
    "text",
    "errors",
    "runner",
    "provenance",
    "conversation",
    "kept_answers",
    "shared_files",
    "db.base",
    "db.bounded_fetch",
    "db.error_table",
    "db.error_reader",
)
#: Third-party packages the core may import (anywhere), and those it may import lazily only.
CORE_LIBRARIES = {"sqlglot", "sqlparse"}
#: (landlock, pyseccomp: confinement bindings, imported only in the fallback's worker process.)
LAZY_LIBRARIES = {"pandas", "pyarrow", "numpy", "landlock", "pyseccomp"}
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
BENCHMARK_MODULES = {module_name(p): p for p in sorted(BENCHMARKS.rglob("*.py"))}


def is_core(name: str) -> bool:
    short = name.removeprefix("cadet_magic.")
    return short in CORE_MODULES or short.split(".")[0] in CORE_PACKAGES


def _resolve(target: str, modules: dict[str, Path] = MODULES) -> str | None:
    """The module of ``modules`` an import names (``from pkg import mod`` names a module too)."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def imports(
    name: str, modules: dict[str, Path] = MODULES, type_only: bool = False
) -> list[tuple[str, bool]]:
    """(imported name, at module level) for every import of module ``name`` (with
    ``type_only``, those under ``if TYPE_CHECKING:`` too)."""
    path = modules[name]
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and "TYPE_CHECKING" in ast.unparse(child.test)
                and not type_only
            ):
                for sub in child.orelse:
                    visit(sub, top)
                continue
            if isinstance(child, ast.Import):
                out.extend((a.name, top) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name if is_pkg else name.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        base = base.rpartition(".")[0]
                    module = f"{base}.{child.module}" if child.module else base
                else:
                    module = child.module or ""
                out.append((module, top))
                out.extend((f"{module}.{a.name}", top) for a in child.names)
            inner = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, top and not inner)

    visit(tree, True)
    return out


def graph(
    modules: dict[str, Path] = MODULES, package: str = "cadet_magic", type_only: bool = False
) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (a package's own __init__ excluded;
    with ``type_only``, the imports for the type checker count too)."""
    edges: dict[str, set[str]] = {}
    for name in modules:
        targets = set()
        for target, _ in imports(name, modules, type_only):
            if target.split(".")[0] != package:
                continue
            resolved = _resolve(target, modules)
            if resolved and resolved != name and not name.startswith(resolved + "."):
                targets.add(resolved)
        edges[name] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm).

    >>> cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_import_cycles_among_the_benchmarks():
    """The benchmark programs import one way: shared pieces (``report``, ``measure``,
    ``sample``, ``peer_runs``, ``lite_site`` ...) import no benchmark that uses them."""
    edges = graph(BENCHMARK_MODULES, "benchmarks")
    assert len(edges) > 30  # the benchmarks were read
    assert cycles(edges) == []


def test_a_benchmark_imports_another_at_module_level():
    """No import of one benchmark module by another hides inside a function, where it could
    close a cycle the module-level structure does not show."""
    hidden = sorted(
        (name, target)
        for name in BENCHMARK_MODULES
        for target, top in imports(name, BENCHMARK_MODULES)
        if target.split(".")[0] == "benchmarks" and not top
    )
    assert hidden == []


def test_the_package_never_imports_the_benchmarks():
    found = sorted(
        (name, target)
        for name in MODULES
        for target, _ in imports(name)
        if target.split(".")[0] == "benchmarks"
    )
    assert found == []


def test_cycle_finder_sees_a_lazy_import_cycle():
    """The shim the package once had (a module ``__getattr__`` importing back) is a cycle."""
    assert cycles({"classify": {"router"}, "router": {"classify"}}) == [["classify", "router"]]


CORE = sorted(n for n in MODULES if is_core(n))


def test_core_is_listed():
    for package in CORE_PACKAGES:
        assert f"cadet_magic.{package}" in CORE
    assert "cadet_magic.display" not in CORE and "cadet_magic.api" not in CORE


@pytest.mark.parametrize("name", CORE)
def test_core_never_imports_an_edge(name):
    for target, top in imports(name):
        root = target.split(".")[0]
        if root == "cadet_magic":
            resolved = _resolve(target)
            assert resolved is None or is_core(resolved), f"{name} imports the edge {resolved}"
        elif top:
            assert root in STDLIB | CORE_LIBRARIES, f"{name} imports {root} at module level"
        else:
            assert root in STDLIB | CORE_LIBRARIES | LAZY_LIBRARIES, f"{name} imports {root}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if ".examples" not in n))
def test_the_runtime_never_imports_the_example_data(name):
    """The sample shop is example data for notebooks, docs and benchmarks, not the runtime's."""
    for target, _ in imports(name):
        assert not target.startswith("cadet_magic.examples"), f"{name} imports {target}"


def test_the_sql_phase_declares_no_field_of_a_later_phase():
    """The run's state and the SQL attempt's record know the SQL phase; the fallback phase
    declares the fields of its attempts (the pandas code, its check and run, the SELECT the
    product wrote and the dtypes its prompt showed) itself, in its own kind of attempt record."""
    from dataclasses import fields

    from cadet_magic.agent.fallback_phase import CodeWork
    from cadet_magic.agent.sql_phase import SqlWork
    from cadet_magic.agent.state import AskState, Work

    own = {f.name for f in fields(CodeWork)} - {f.name for f in fields(Work)}
    assert own == {"code", "code_check", "code_run", "fetched", "dtypes"}
    assert not own & {f.name for f in fields(SqlWork)}
    assert not own & {f.name for f in fields(AskState)}


def package_graph(type_only: bool = False) -> dict[str, set[str]]:
    """Package -> the packages it imports (``agent`` for every ``cadet_magic.agent.*``; a
    top-level module counts as its own package; ``type_only``: as :func:`graph`)."""

    def package(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else parts[0]

    edges: dict[str, set[str]] = {}
    for name, targets in graph(type_only=type_only).items():
        edges.setdefault(package(name), set()).update(
            package(t) for t in targets if package(t) != package(name)
        )
    return edges


def test_no_package_cycles():
    """Packages, not only modules, import one way: the agent (the attempt pipeline and its
    phases' declarations) uses diagnose/ and fallback/ (the pandas code's check and run),
    which import neither the agent nor each other."""
    edges = package_graph()
    assert cycles(edges) == []
    for core in ("diagnose", "fallback"):
        assert "agent" not in edges[core], core
    assert "fallback" not in edges["diagnose"] and "diagnose" not in edges["fallback"]


def test_no_package_cycle_through_the_type_checkers_imports():
    """Not even an import for the type checker alone closes a circle between packages: the
    dialect layer (``sql/``) declares what it reads of a schema (``sql.target.KnownSchema``)
    rather than importing ``schema/``, which builds on it."""
    edges = package_graph(type_only=True)
    assert "sql" in edges["schema"]  # the walk sees the schema's imports of the dialect layer
    assert cycles(edges) == []


def test_the_diagnosis_holds_no_engine_wording():
    """diagnose/ holds none of the engines' exception classes, codes or hint markers: each
    engine's error table (db/) reads them into the EngineError fields the diagnosis reads."""
    from cadet_magic.db.error_reader import ENGINES, table_for

    words: set[str] = set()
    for name in ENGINES:
        table = table_for(name)
        for rule in table.rules:
            words |= set(rule.classes) | set(rule.codes)
        words |= set(table.hint_lines)
    assert len(words) > 40  # the engines' tables were read
    found = sorted(
        (path.name, word)
        for path in (ROOT / "diagnose").rglob("*.py")
        for word in words
        if word in path.read_text()
    )
    assert not found


def _result_fields() -> tuple[set[str], set[str]]:
    """The fields of the result records (AskResult, Attempt, Fallback), and those of them that
    hold a container (a list or a dict, whose contents could be changed in place)."""
    from dataclasses import fields

    from cadet_magic.result import AskResult, Attempt, Fallback

    names: set[str] = set()
    containers: set[str] = set()
    for record in (AskResult, Attempt, Fallback):
        for f in fields(record):
            names.add(f.name)
            if str(f.type).startswith(("list", "dict")):
                containers.add(f.name)
    return names, containers


#: Objects that are no result records but have attributes named like a result's fields.
NOT_RESULTS = {
    "ctx": "the steps' Context: the run's counters (model calls, prompts sent)",
    "bar": "a widget of the panel's (its SQL bar)",
    "self.actions": "the panel's action bar (the result it acts on)",
    "frame": "a pandas DataFrame (its columns renamed)",
    "args": "argparse's namespace (the magic's line)",
}

#: The methods that change a list or a dict in place.
_CHANGING = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "sort"}


def result_changes(tree: ast.AST, names: set[str], containers: set[str]) -> list[str]:
    """Where ``tree`` assigns a result's field after construction (``r.sql = ...``, ``r.a, r.b
    = ...``, ``r.rows += ...``), or changes a container field in place
    (``r.provenance["k"] = ...``, ``r.warnings.append(...)``); ``self``'s own attributes are a
    class's business (every result record is frozen: see the test below).

    Example:
        >>> code = "r.ok = True\\nself.sql = 1\\nr.provenance['n'] = 2\\nr.warnings.append(3)"
        >>> result_changes(ast.parse(code), {"ok", "sql"}, {"provenance", "warnings"})
        ['1: r.ok', "3: r.provenance['n']", '4: r.warnings.append']
    """

    def owner(node: ast.Attribute) -> bool:
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            return False
        return ast.unparse(node.value) not in NOT_RESULTS

    found: list[str] = []

    def target(node: ast.expr, line: int) -> None:
        if isinstance(node, ast.Tuple | ast.List):
            for element in node.elts:
                target(element, line)
        elif isinstance(node, ast.Starred):
            target(node.value, line)
        elif isinstance(node, ast.Attribute) and node.attr in names and owner(node):
            found.append(f"{line}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in containers
            and owner(node.value)
        ):
            found.append(f"{line}: {ast.unparse(node)}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                target(t, node.lineno)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            target(node.target, node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _CHANGING
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr in containers
            and owner(node.func.value)
        ):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return found


def test_no_result_is_changed_after_it_is_built():
    """A result is built once: nowhere in the package is a field of an AskResult, Attempt or
    Fallback assigned, or a list or dict it holds changed, after construction (an edge adds
    what only it has to a copy, with dataclasses.replace)."""
    names, containers = _result_fields()
    assert {"provenance", "warnings", "attempts"} <= containers
    changes = {
        name: found
        for name, path in MODULES.items()
        if (found := result_changes(ast.parse(path.read_text()), names, containers))
    }
    assert changes == {}


def test_the_result_records_are_frozen_and_typed():
    import dataclasses
    import typing

    from cadet_magic.diagnose.category import Category
    from cadet_magic.result import AskResult, Attempt, Fallback, Outcome, Phase, StopReason

    for record in (AskResult, Attempt, Fallback):
        assert record.__dataclass_params__.frozen, record  # type: ignore[attr-defined]
    hints = {r: typing.get_type_hints(r) for r in (AskResult, Attempt, Fallback)}
    assert hints[Attempt]["outcome"] is Outcome and hints[Attempt]["phase"] is Phase
    assert hints[Attempt]["category"] == Category | None
    assert hints[Fallback]["reason"] is StopReason
    assert hints[AskResult]["stop_reason"] == StopReason | None
    with pytest.raises(dataclasses.FrozenInstanceError):
        AskResult("q").ok = True  # type: ignore[misc]


def test_category_is_built_from_error_kind():
    """Category's members include every ErrorKind value by construction: its class body
    writes none of ErrorKind's values (it takes them from ErrorKind), and what it declares for
    the type checker alone names exactly the members so taken."""
    from cadet_magic.diagnose.category import Category
    from cadet_magic.errors import ErrorKind

    source = (ROOT / "diagnose" / "category.py").read_text()
    body = next(
        n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "Category"
    ).body
    written = {
        n.value.value
        for n in body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
    }
    checker_only = {
        a.target.id
        for n in body
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
        for a in n.body
        if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name)
    }
    kinds = {k.value for k in ErrorKind}
    assert written and not written & kinds
    assert kinds <= {c.value for c in Category}
    assert checker_only == {c.name for c in Category if c.value not in written}
    assert [Category(k.value).name for k in ErrorKind] == [k.name for k in ErrorKind]


def _dialect_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters of ``function`` that take a dialect (named ``dialect``, ``read``, ..., or a
    ``Target``) and whose annotation lets it be a string.

    Example:
        >>> tree = ast.parse("def f(sql: str, dialect: Target | str, read: Dialect, "
        ...                  "target: Target | str, table: str): ...")
        >>> _dialect_parameters(tree.body[0])
        ['dialect', 'target']
    """
    arguments = function.args
    found = []
    for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if a.annotation is None:
            continue
        names = {n.id for n in ast.walk(a.annotation) if isinstance(n, ast.Name)}
        names |= {n.value for n in ast.walk(a.annotation) if isinstance(n, ast.Constant)}
        if "str" in names and ("dialect" in a.arg or a.arg == "read" or "Target" in names):
            found.append(a.arg)
    return found


def dialect_string_functions() -> list[str]:
    """``module.function`` for every function of the package taking a dialect as a string."""
    return sorted(
        f"{name}.{node.name}"
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _dialect_parameters(node)
    )


def test_few_functions_take_the_dialect_as_a_string():
    """A dialect's name is resolved once, where it enters (the resolvers of ``sql.dialect`` and
    ``sql.target``, the edges that read it from a driver or a record); the steps below take
    the resolved object (a :class:`~cadet_magic.sql.target.Target` or sqlglot's dialect)."""
    found = dialect_string_functions()
    assert "cadet_magic.sql.dialect.resolve_dialect" in found  # the walk reads annotations
    assert len(found) <= 15, found


#: Engines and drivers by name: what the diagnosis asks a Target about, never names itself.
ENGINE_WORDS = re.compile(
    r"sqlite|duckdb|postgres|mysql|mariadb|spark|psycopg|pyodbc|sqlalchemy|tsql|mssql|oracle|"
    r"bigquery|snowflake|redshift|presto|trino|clickhouse|databricks|hive|jupysql|pymysql",
    re.IGNORECASE,
)


def engine_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of each string literal (docstrings aside) and each name in ``tree``'s code
    that names an engine or a driver.

    Example:
        >>> engine_names(ast.parse('"Doc: sqlite."\\nFACTS = {"duckdb": 1}\\nis_mysql = x'))
        [(2, 'duckdb'), (3, 'is_mysql')]
    """
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            text = n.value
        elif isinstance(n, ast.Name):
            text = n.id
        elif isinstance(n, ast.Attribute | ast.FunctionDef | ast.ClassDef | ast.arg | ast.alias):
            text = getattr(n, "attr", None) or getattr(n, "name", None) or getattr(n, "arg", "")
        elif isinstance(n, ast.ImportFrom | ast.keyword):
            text = getattr(n, "module", None) or getattr(n, "arg", None) or ""
        else:
            continue
        if ENGINE_WORDS.search(text):
            found.append((getattr(n, "lineno", 0), text))
    return sorted(found)


def test_the_diagnosis_names_few_engines():
    """diagnose/ asks the Target for what differs between engines (``target.facts``: their date
    functions, function equivalents, constructs they lack, how they compare names' case); its
    code names at most a handful of engines or drivers."""
    found = [
        (path.name, *hit)
        for path in sorted((ROOT / "diagnose").rglob("*.py"))
        for hit in engine_names(ast.parse(path.read_text()))
    ]
    assert len(found) <= 5, found
