"""The fallback check's rule tables: which builtins, modules, attributes and strings pandas code
may not use, and why (standard library only). The visitor in
:mod:`cadet_magic.fallback.code_check` applies them on the syntax tree.

Example:
    >>> attr_problem("to_csv")[0], attr_problem("to_frame"), name_problem("open")[0]
    ('io', None, 'banned_name')
"""

from __future__ import annotations

#: Longest program the check accepts (characters).
MAX_CODE_CHARS = 20_000

#: Builtins that run code, reach objects or frames by name, or read input.
BANNED_BUILTINS = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "__import__",
        "breakpoint",
        "input",
        "help",
        "exit",
        "quit",
        "memoryview",
        "type",
        "object",
        "super",
        "dir",
        "classmethod",
        "staticmethod",
        "property",
        "__builtins__",
        "__build_class__",
        "BaseException",
        "SystemExit",
        "KeyboardInterrupt",
        "GeneratorExit",
    }
)

#: Module names: never bound in the namespace, refused so the feedback says why.
BANNED_MODULES = frozenset(
    {
        "os",
        "sys",
        "subprocess",
        "shutil",
        "socket",
        "pathlib",
        "importlib",
        "ctypes",
        "builtins",
        "pickle",
        "marshal",
        "inspect",
        "gc",
        "threading",
        "multiprocessing",
        "signal",
        "tempfile",
        "urllib",
        "requests",
        "runpy",
        "posix",
        "get_ipython",
        "IPython",
    }
)

#: ``to_*`` methods that only convert in memory.
SAFE_TO = frozenset(
    {
        "to_frame",
        "to_dict",
        "to_list",
        "to_numpy",
        "to_records",
        "to_period",
        "to_timestamp",
        "to_datetime",
        "to_numeric",
        "to_timedelta",
        "to_pydatetime",
        "to_pytimedelta",
        "to_series",
        "to_flat_index",
        "to_tuples",
        "to_julian_date",
        "to_offset",
        "to_dense",
        "to_datetime64",
        "to_timedelta64",
    }
)

#: Attributes that reach files, the network, processes, global settings or module internals.
#: Attributes that are modules of pandas/numpy or the standard library (``pd.io``, ``np.lib``).
MODULE_ATTRS = frozenset(
    {
        "os",
        "sys",
        "subprocess",
        "builtins",
        "io",
        "core",
        "compat",
        "util",
        "lib",
        "ctypeslib",
        "f2py",
        "distutils",
        "testing",
        "extensions",
    }
)

BANNED_ATTRS = frozenset(
    {
        # numpy I/O
        "load",
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "loadtxt",
        "genfromtxt",
        "fromfile",
        "tofile",
        "fromregex",
        "memmap",
        "DataSource",
        "dump",
        "dumps",
        # pandas I/O objects
        "HDFStore",
        "ExcelWriter",
        "ExcelFile",
        # modules reachable as attributes
        *MODULE_ATTRS,
        "plotting",
        # plotting and styling write files and run format strings
        "plot",
        "style",
        "open",
        "hist",
        "boxplot",
        "savefig",
        "fromtextfile",
        "recfromcsv",
        "recfromtxt",
        # global state of the user's pandas/numpy
        "options",
        "set_eng_float_format",
        "seed",
        "set_option",
        "reset_option",
        "describe_option",
        "show_versions",
        "set_printoptions",
        "seterr",
        "seterrcall",
        "setbufsize",
        # introspection
        "mro",
        "func_globals",
        "func_code",
    }
)

#: Attribute prefixes with the same fate: I/O readers and frame/code/generator internals.
BANNED_ATTR_PREFIXES = ("read_", "register_", "f_", "gi_", "cr_", "ag_", "tb_", "co_")

#: Attributes the code may assign.
ASSIGNABLE_ATTRS = frozenset({"columns", "index", "name", "names"})

#: Methods whose string argument is code evaluated by pandas.
EXPRESSION_METHODS = frozenset({"eval", "query"})

#: Methods that call what they are given, dispatching a string to the method of that name.
DISPATCH_METHODS = frozenset({"agg", "aggregate", "apply", "transform", "applymap"})

#: Functions whose ``aggfunc`` is dispatched the same way.
AGGFUNC_CALLS = frozenset({"pivot_table", "crosstab", "NamedAgg", "pivot"})

#: Method names pandas dispatches to by string (``df.agg("name")``) that must never be named.
BANNED_STRINGS = frozenset({"eval", "query", "exec", "open", "pipe", *DISPATCH_METHODS})

#: String methods that read attributes named inside the string (``"{0.attr}".format(x)``).
FORMAT_METHODS = frozenset({"format", "format_map"})

_WHY_IO = (
    "reads or writes files, the network or the clipboard; compute the answer in memory from df"
)
_WHY_MODULE = "reaches modules outside the frame"
_WHY_GLOBAL = "changes pandas or numpy for the whole kernel"


def _is_dunder(name: str) -> bool:
    return name.startswith("__")


def attr_problem(attr: str) -> tuple[str, str] | None:
    """Why an attribute name is refused, as ``(code, reason)``, or None when it is allowed.

    Example:
        >>> attr_problem("groupby") is None, attr_problem("to_frame") is None
        (True, True)
        >>> attr_problem("to_pickle")[0], attr_problem("__class__")[0], attr_problem("_mgr")[0]
        ('io', 'dunder', 'private')
    """
    if _is_dunder(attr):
        return "dunder", "dunder attributes reach Python internals"
    if attr.startswith("_"):
        return "private", "private attributes reach pandas internals"
    if attr.startswith("to_") and attr not in SAFE_TO:
        return "io", _WHY_IO
    if attr.startswith("read_"):
        return "io", _WHY_IO
    if attr in {"options", "set_option", "reset_option", "describe_option", "show_versions"}:
        return "global_state", _WHY_GLOBAL
    if attr in {
        "set_printoptions",
        "seterr",
        "seterrcall",
        "setbufsize",
        "set_eng_float_format",
        "seed",
    } or attr.startswith("register_"):
        return "global_state", _WHY_GLOBAL
    if attr in MODULE_ATTRS:
        return "module", _WHY_MODULE
    if attr in {"mro", "func_globals", "func_code"} or attr.startswith(BANNED_ATTR_PREFIXES):
        return "introspection", "frame, code and class introspection is not allowed"
    if attr in BANNED_ATTRS:
        return "io", _WHY_IO
    return None


def name_problem(name: str) -> tuple[str, str] | None:
    """Why a bare name is refused, as ``(code, reason)``, or None when it is allowed."""
    if name in BANNED_BUILTINS and not _is_dunder(name):
        return "banned_name", "it can run code, reach objects by name or read input"
    if _is_dunder(name):
        return "dunder", "dunder names reach Python internals"
    if name in BANNED_MODULES:
        return "module", "modules are not available; only df, pd and np are"
    return None
