"""The tutorial series in notebooks/: each runs headless top to bottom with its stored, labelled
scripted replies, and every ``%%ask`` ends as the notebook says (cell metadata
``cadet.expect``: ``answer`` or ``no answer``). The quickstart has its own, closer test
(tests/test_quickstart.py)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from run_notebooks import run, tutorials  # noqa: E402

pytestmark = pytest.mark.notebooks
TUTORIALS = [p for p in tutorials() if p.stem != "quickstart"]


def check_executed(path: Path, scripted: bool = True, require_expect: bool = True) -> None:
    """No error output anywhere; each %%ask cell ends as its metadata says."""
    nb = nbformat.read(path, as_version=4)
    asks = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        assert not errors, f"{path.name}: {cell.source[:80]!r} raised {errors[0].get('ename')}"
        expect = cell.metadata.get("cadet", {}).get("expect")
        if expect is None:
            continue
        asks += 1
        text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert "Traceback" not in text
        if scripted:
            assert "SCRIPTED" in text, cell.source
        if expect == "answer":
            assert "\nAnswer" in text and "No answer" not in text, (path.name, text[-1500:])
        else:
            assert "No answer" in text, (path.name, text[-1500:])
    assert asks or not require_expect, f"{path.name} has no %%ask cell marked with cadet.expect"


def test_series_is_complete():
    names = {p.stem for p in tutorials()}
    assert {
        "quickstart",
        "self_correction",
        "fallback",
        "safety",
        "your_own_database",
        "models",
    } <= names
    for p in tutorials():
        assert (p.parent / f"{p.stem}_replies.json").exists(), p.name


@pytest.mark.parametrize("notebook", TUTORIALS, ids=lambda p: p.stem)
def test_notebook_runs(notebook, tmp_path, monkeypatch, request):
    monkeypatch.delenv("CADET_MODEL", raising=False)
    monkeypatch.setenv("PLOOMBER_STATS_ENABLED", "false")
    mysql = notebook.stem == "your_own_database" and _mysql_shop(request, monkeypatch)
    for f in notebook.parent.glob("*_replies.json"):
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(notebook, tmp_path / notebook.name)
    ok, _ = run(tmp_path / notebook.name, tmp_path)
    assert ok
    check_executed(tmp_path / notebook.name.replace(".ipynb", ".executed.ipynb"))
    assert os.listdir(tmp_path)
    if mysql:  # the MySQL cells ran against the throwaway MariaDB server and answered
        nb = nbformat.read(tmp_path / notebook.name.replace(".ipynb", ".executed.ipynb"), 4)
        cells = [c for c in nb.cells if "CADET_MYSQL_URL" in c.source and c.cell_type == "code"]
        texts = ["".join(o.get("data", {}).get("text/plain", "") for o in c.outputs) for c in cells]
        assert len(texts) == 2 and all("\nAnswer" in t and "SCRIPTED" in t for t in texts), texts


def _mysql_shop(request, monkeypatch) -> bool:
    """CADET_MYSQL_URL for the MySQL cells: the sample shop on the session's throwaway MariaDB
    server when its binaries are installed (else the cells say they are skipped)."""
    from cadet_magic.examples.shop import shop_statements
    from workloads.mariadb import create_database, mariadb_bin

    if mariadb_bin() is None:
        return False
    server = request.getfixturevalue("mysql_server")
    url = create_database(server, "shop", shop_statements(comments=False))
    monkeypatch.setenv("CADET_MYSQL_URL", url)
    return True
