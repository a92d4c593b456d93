"""llama-cpp-python's build: flags that leave out AMX, a wheel reused only when it was built the
same way for the same CPU, and one line when no compiler is there. (The real build runs in the
set-up, scripts/setup_llm.sh, and takes minutes.)"""

from __future__ import annotations

import json

import pytest

from cadet_magic.errors import LocalModelError
from cadet_magic.local import runtime
from cadet_magic.local.machine import cpu_fingerprint


def test_every_build_leaves_out_amx():
    for portable in (False, True):
        flags = " ".join(runtime.build_stamp(portable)["flags"])
        assert "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" in flags
        assert "-DLLAVA_BUILD=OFF" in flags
    assert runtime.build_stamp()["cpu"] == cpu_fingerprint()
    assert runtime.build_stamp(portable=True)["cpu"] is None  # runs on other CPUs
    assert "-DGGML_NATIVE=OFF" in runtime.build_stamp(portable=True)["flags"]


@pytest.mark.parametrize(
    "kept, expected",
    [
        ("same", True),
        ("other-flags", False),
        ("other-cpu", False),
        ("none", False),
        ("written-by-someone-else", False),
        ("wheel-swapped-after-the-build", False),
        ("wheel-a-link", False),
    ],
)
def test_a_wheel_is_reused_only_when_built_the_same_way(tmp_path, monkeypatch, kept, expected):
    """``BUILD`` is keyed: a record the user's key did not seal, or a wheel that is not the
    file it names (by its hash), is built again rather than installed."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    folder = tmp_path / "wheels"
    folder.mkdir()
    wheel = folder / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"built here")
    stamp = runtime.build_stamp()
    if kept == "other-flags":
        stamp = {**stamp, "flags": stamp["flags"][:1]}
    elif kept == "other-cpu":
        stamp = {**stamp, "cpu": "another"}
    if kept == "written-by-someone-else":  # the old record, or anyone's without the key
        made = {"stamp": stamp, "wheel": wheel.name, "sha256": "0" * 64, "mac": "0" * 64}
        (folder / "BUILD").write_text(json.dumps(made))
    elif kept != "none":
        runtime._record_build(folder, stamp, wheel)
    if kept == "wheel-swapped-after-the-build":
        wheel.write_bytes(b"someone else's code")
    if kept == "wheel-a-link":
        (tmp_path / "elsewhere.whl").write_bytes(b"built here")
        wheel.unlink()
        wheel.symlink_to(tmp_path / "elsewhere.whl")
    found = runtime._cached_wheel(folder, runtime.build_stamp())
    assert (found == wheel) is expected


def test_no_compiler_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)
    with pytest.raises(LocalModelError) as e:
        runtime.build_wheel(tmp_path / "wheels", portable=False, say=print)
    assert "no C++ compiler was found" in str(e.value) and "\n" not in str(e.value)


def test_an_installed_runtime_is_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(runtime, "installed_version", lambda: "0.3.36")
    said: list[str] = []
    done = runtime.install_runtime(tmp_path, said.append)
    assert done == "llama-cpp-python 0.3.36 is installed" and said == []
