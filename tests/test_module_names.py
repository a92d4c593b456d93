"""Each module of cadet_magic/ is named after what it holds, so no two share a file name: a
``run.py`` in three packages (the agent's loop, the fallback's runner, the evaluation) left a
reader, a traceback or an editor's tab asking which run. ``__init__.py`` and ``__main__.py``
are Python's own names and may repeat.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import cadet_magic

PACKAGE = Path(cadet_magic.__file__).parent
#: File names Python gives a meaning of its own, which every package may have.
PYTHONS_OWN = frozenset({"__init__.py", "__main__.py"})


def shared_names(root: Path) -> dict[str, list[str]]:
    """File names held by more than one module below ``root``, with the modules' paths."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.name not in PYTHONS_OWN:
            by_name[path.name].append(path.relative_to(root).as_posix())
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def test_no_two_modules_share_a_name():
    shared = shared_names(PACKAGE)
    assert not shared, f"modules sharing a file name (name each after what it holds): {shared}"


def test_the_rule_sees_a_shared_name(tmp_path):
    for folder in ("agent", "eval", "eval/inner"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "agent" / "run.py").write_text("")
    (tmp_path / "eval" / "inner" / "run.py").write_text("")
    (tmp_path / "eval" / "evaluation.py").write_text("")
    assert shared_names(tmp_path) == {"run.py": ["agent/run.py", "eval/inner/run.py"]}
