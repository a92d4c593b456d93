"""The tutorial series in notebooks/: each runs headless top to bottom with its stored, labelled
scripted replies, and every ``%%ask`` ends as the notebook says (cell metadata
``cadet.expect``: ``answer`` or ``no answer``); each ends with a cell for the reader's own
question (``cadet.own_question``), answered by the local model (here not installed: one line
on how to get it; answered in tests/test_binder.py). The quickstart has its own, closer test
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


#: What an own-question cell says when the local model is not installed (one line).
NOT_INSTALLED = "The local model is not installed"


def check_executed(
    path: Path, scripted: bool = True, require_expect: bool = True, local_model: bool = False
) -> None:
    """No error output anywhere; each %%ask cell ends as its metadata says. The reader's
    own-question cell (``cadet.own_question``) is answered by the real local model when
    ``local_model``, else says in one line how to install it."""
    nb = nbformat.read(path, as_version=4)
    asks = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if cell.metadata.get("cadet", {}).get("own_question"):
            check_own_question(path, cell, errors, local_model)
            continue
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


def check_own_question(path: Path, cell, errors: list, local_model: bool) -> None:
    """The own-question cell: the real local model's run (an answer or a clear no-answer,
    never scripted), or one line saying how to install it."""
    text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    if not local_model:  # IPython shows a UsageError as its one line on stderr
        said = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
        assert not errors and said.startswith("UsageError: "), (path.name, cell.outputs)
        assert NOT_INSTALLED in said and "python -m cadet_magic.local install" in said, said
        assert "\n" not in said.strip()
        return
    assert not errors, f"{path.name}: own question raised {errors[0].get('evalue')}"
    assert "Model: local" in text and "SCRIPTED" not in text, (path.name, text[-1500:])
    assert "\nAnswer" in text or "No answer" in text, (path.name, text[-1500:])
    assert "Attempt 1" in text


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
        own = [
            c
            for c in nbformat.read(p, as_version=4).cells
            if c.metadata.get("cadet", {}).get("own_question")
        ]
        assert len(own) == 1 and own[0].source.startswith("%%ask"), p.name  # the reader's cell


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
