"""The README's main job with the real local model (marker ``llm``): scripts/run_quickstart.py
without ``--scripted``, as ``bash scripts/quickstart.sh`` runs it once the model is installed.

What must hold whatever the model writes: the notebook runs to its end; every ``%%ask`` cell
names the local model (the default: none is configured) and ends with an answer or a clear
message saying why there is none; its attempts are shown, each with its safety check; nothing
on stderr, no error output; the HTML export shows every run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.conftest import installed_local_model

pytestmark = pytest.mark.llm
ROOT = Path(__file__).resolve().parents[2]
#: The lines of each run the test prints (what the model did, for the record).
SHOWN = ("Question", "Attempt", "    sql", "    error", "Answer", "No answer", "Warning", "(")


def test_the_main_job_answers_with_the_local_model(tmp_path):
    pytest.importorskip("llama_cpp")
    model = installed_local_model()
    env = {k: v for k, v in os.environ.items() if k not in ("CADET_MODEL", "CADET_LOCAL_MEMORY")}
    env.update(CADET_LOCAL_DIR=str(model.parent.parent), PLOOMBER_STATS_ENABLED="false")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_quickstart.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "with model: the local model" in done.stdout
    nb = nbformat.read(tmp_path / "quickstart.executed.ipynb", as_version=4)
    asks = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%ask")]
    assert len(asks) == 5
    for cell in asks:
        text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        print("\n".join(line for line in text.splitlines() if line.startswith(SHOWN)))
        assert "Model: local (no model configured" in text, text[:500]
        assert "SCRIPTED" not in text and "Traceback" not in text
        assert "Attempt 1" in text and "safety check" in text.lower(), text[-1500:]
        if "\nAnswer" not in text:  # no answer: a message says why
            assert re.search(r"No answer\S*\s*\S", text), text[-1500:]
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert [o for o in outputs if o.get("output_type") == "error"] == []
    assert [o for o in outputs if o.get("name") == "stderr"] == [], "stderr in the notebook"
    page = (tmp_path / "quickstart.executed.html").read_text()
    assert len(re.findall(r"class=.cadet-ask\b", page)) >= len(asks)
    assert "Loading widget" not in page
