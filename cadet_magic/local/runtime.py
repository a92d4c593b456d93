"""What runs the local model: llama-cpp-python (the ``local`` extra), built once for this machine.

PyPI has only llama-cpp-python's source: pip compiles llama.cpp with CMake and the system's
C++ compiler (a few minutes on two cores), from the source archive pinned by its SHA-256
(:data:`~cadet_magic.local.pin.RUNTIME_SOURCE`, ``--require-hashes``: an index serving other
source code under that name gets nothing built), in an environment of the build's own that holds
only the build backend's wheels, each pinned by its hash
(:data:`~cadet_magic.local.pin.BUILD_REQUIREMENTS`; pip's isolated build environment would fetch
them unchecked). The installer builds the wheel once (in a folder of
its own, then moved into the cache folder's ``wheels/``; pip's own wheel cache is never used:
its key ignores the build flags) and installs it into this interpreter's environment; the flags,
the CPU it was built for and the wheel's SHA-256 are kept beside it in ``BUILD``, keyed
(:func:`~cadet_magic.local.model_store.seal`: a wheel or a record someone else put in the folder is
not installed, it is built again), and a wheel built otherwise is built again. The wheel is
installed from a private copy whose hash is checked, with ``--no-index --no-deps`` (nothing of
the same name from an index can stand in for it); its dependencies then come from the index as
wheels only (``--only-binary=:all:``).

The flags: llama.cpp is compiled for the CPU it is built on (``-march=native``), but without
Intel AMX: on a CPU that lists ``amx_tile`` under a hypervisor that does not hand the tile
registers to the process, a build with AMX died at its first matrix product. ``--portable``
builds for any x86-64 CPU with AVX2 instead (an image built on one machine and run on
others, e.g. Binder's).

Example:
    >>> build_stamp(portable=True)["flags"][-1]
    '-DGGML_F16C=ON'
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from cadet_magic.errors import LocalModelError
from cadet_magic.local.machine import cores, cpu_fingerprint
from cadet_magic.local.pin import BUILD_REQUIREMENTS, CMAKE, RUNTIME_SOURCE

#: The ``local`` extra's requirement (pyproject.toml says the same; a test keeps them equal).
REQUIREMENT = RUNTIME_SOURCE.requirement
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
#: CMake options of every build: no multimodal library (a text model never loads it), no AMX.
FLAGS = ("-DLLAVA_BUILD=OFF", f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}")
#: Added for a build that runs on other x86-64 CPUs than the builder's (AVX2 and FMA: any
#: x86-64 server of the last ten years).
PORTABLE = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
)
Say = Callable[[str], None]


def requirement(server: bool = False) -> str:
    """The requirement pip installs, with the server's extra where asked (extras come before
    the version in a requirement).

    >>> requirement()
    'llama-cpp-python==0.3.36'
    >>> requirement(server=True)
    'llama-cpp-python[server]==0.3.36'
    """
    name, version = REQUIREMENT.split("==")
    return f"{name}[server]=={version}" if server else REQUIREMENT


def build_stamp(portable: bool = False) -> dict[str, Any]:
    """How a wheel is built here: its requirement, CMake flags and (native builds) the CPU."""
    flags = FLAGS + (PORTABLE if portable else ())
    return {
        "requirement": REQUIREMENT,
        "flags": list(flags),
        "cpu": None if portable else cpu_fingerprint(),
    }


def installed_version() -> str | None:
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return None


def library_key() -> str | None:
    """Names the installed llama.cpp libraries (file names, sizes, times): a probe's result
    holds for exactly these."""
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "lib"
    parts = []
    for lib in sorted(folder.glob("*")):
        st = lib.stat()
        parts.append(f"{lib.name}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts) or None


def _built(wheels: Path, stamp: dict[str, Any]) -> tuple[Path, str] | None:
    """The wheel ``BUILD`` says was built here with ``stamp``, and its SHA-256 as recorded,
    when the record is this user's (:func:`~cadet_magic.local.model_store.sealed`)."""
    from cadet_magic.local.model_store import sealed
    from cadet_magic.shared_files import read_bytes

    try:
        kept = json.loads(read_bytes(wheels / "BUILD", limit=65536, follow=False) or b"")
    except Exception:  # noqa: BLE001 - no record to trust: built again
        return None
    if not isinstance(kept, dict):
        return None
    made = {k: kept.get(k) for k in ("stamp", "wheel", "sha256")}
    name, digest = made["wheel"], made["sha256"]
    if made["stamp"] != stamp or not sealed(made, kept.get("mac")):
        return None
    version = REQUIREMENT.split("==")[1]
    if not (isinstance(name, str) and isinstance(digest, str)):
        return None
    if not name.startswith("llama_cpp_python-") or f"-{version}-" not in name or "/" in name:
        return None
    return wheels / name, digest


def _cached_wheel(wheels: Path, stamp: dict[str, Any]) -> Path | None:
    """The wheel built here with ``stamp`` (:func:`_built`) when the file is the one recorded,
    by its hash (read without following a link)."""
    from cadet_magic.local.download import file_sha256

    built = _built(wheels, stamp)
    if built is None:
        return None
    try:
        return built[0] if file_sha256(built[0]) == built[1] else None
    except (OSError, LocalModelError):
        return None


def _record_build(wheels: Path, stamp: dict[str, Any], wheel: Path) -> None:
    from cadet_magic.local.download import file_sha256
    from cadet_magic.local.files import open_file
    from cadet_magic.local.model_store import seal

    made = {"stamp": stamp, "wheel": wheel.name, "sha256": file_sha256(wheel)}
    (wheels / "BUILD").unlink(missing_ok=True)
    fd = open_file(wheels / "BUILD", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps({**made, "mac": seal(made)}))


def cmake_args(flags: list[str], given: str = "") -> str:
    """``CMAKE_ARGS`` for the build: the user's ``given`` ones, then ``flags``, each quoted whole
    (the build splits the variable as a shell would, and the compiler flags hold spaces).

    Example:
        >>> import shlex
        >>> shlex.split(cmake_args(list(FLAGS)))[1]
        '-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16'
    """
    return " ".join([given, *(shlex.quote(flag) for flag in flags)]).strip()


def build_wheel(wheels: Path, portable: bool, say: Say) -> Path:
    """Compiles llama-cpp-python into ``wheels`` (once: a wheel built with the same flags for
    the same CPU is reused), saying what it does and how long it took."""
    stamp = build_stamp(portable)
    found = _cached_wheel(wheels, stamp)
    if found is not None:
        return found
    for old in wheels.glob("llama_cpp_python-*.whl"):
        old.unlink()
    (wheels / "BUILD").unlink(missing_ok=True)
    compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if compiler is None:
        raise LocalModelError(
            "llama-cpp-python must be compiled on this machine (PyPI has only its source) and "
            "no C++ compiler was found: install one (Debian/Ubuntu: apt-get install "
            "build-essential; macOS: xcode-select --install), then run the install again."
        )
    wheels.mkdir(parents=True, exist_ok=True)
    n = cores()
    target = "any x86-64 CPU with AVX2" if portable else "this machine's CPU"
    say(
        f"Compiling llama.cpp for {target} (llama-cpp-python: PyPI has only its source): "
        f"once, {'about 6 minutes' if n <= 2 else 'a few minutes'} on {n} idle core(s), "
        f"longer on a busy machine; the wheel is kept in {wheels}."
    )
    log = wheels / "build.log"
    env = dict(os.environ)
    env["CMAKE_ARGS"] = cmake_args(stamp["flags"], env.get("CMAKE_ARGS", ""))
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(n))
    started = time.monotonic()
    log.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="cadet-build-") as own:
        pinned = Path(own) / "requirements.txt"  # the source archive, by its hash
        pinned.write_text(RUNTIME_SOURCE.hashed_requirement() + "\n")
        out_dir = Path(own) / "built"
        with log.open("xb") as out:
            python = build_environment(Path(own) / "env", out)
            env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])
            done = subprocess.run(
                [str(python), "-m", "pip", "wheel", "--no-cache-dir", "--no-deps"]
                + ["--disable-pip-version-check", "--require-hashes", "--no-build-isolation"]
                + ["-w", str(out_dir), "-r", str(pinned)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        if done.returncode != 0:
            raise LocalModelError(
                f"Compiling llama-cpp-python failed (pip exited {done.returncode}): "
                f"{first_error(log.read_text(errors='replace'))[:200]}; the build's whole "
                f"output is in {log}."
            )
        built = sorted(out_dir.glob("llama_cpp_python-*.whl"))
        if not built:
            raise LocalModelError("pip reported a build but made no llama-cpp-python wheel.")
        wheel = wheels / built[-1].name
        wheel.unlink(missing_ok=True)
        shutil.move(str(built[-1]), wheel)
    _record_build(wheels, stamp, wheel)
    minutes, seconds = divmod(int(time.monotonic() - started), 60)
    say(f"Compiled in {minutes} min {seconds} s.")
    found = _cached_wheel(wheels, stamp)
    if found is None:
        raise LocalModelError(f"The wheel built in {wheels} changed before it was installed.")
    return found


def build_requirements(has_cmake: bool) -> list[str]:
    """The lines of the requirements file the build's own environment is made from: the build
    backend's wheels by their hashes, and CMake's when the machine has none.

    Example:
        >>> [line.split()[0] for line in build_requirements(has_cmake=False)][-2:]
        ['pathspec==1.1.1', 'cmake==4.4.5']
    """
    pins = [*BUILD_REQUIREMENTS, *(() if has_cmake else (CMAKE,))]
    return [pin.hashed_requirement() for pin in pins]


def build_environment(where: Path, out: Any) -> Path:
    """A virtual environment of the build's own at ``where``, holding only what the build
    backend needs, installed as wheels pinned by their hashes (pip's isolated build
    environment would fetch them from the index unchecked); its interpreter. ``out`` takes
    pip's output."""
    import venv

    venv.create(where, with_pip=True)  # pip from the interpreter's own copy: nothing fetched
    python = where / ("Scripts" if os.name == "nt" else "bin") / "python"
    wanted = where / "build-requirements.txt"
    wanted.write_text("\n".join(build_requirements(shutil.which("cmake") is not None)) + "\n")
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check"]
        + ["--require-hashes", "--only-binary=:all:", "--no-deps", "-r", str(wanted)],
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        out.flush()
        raise LocalModelError(
            f"Installing llama-cpp-python's build requirements failed (pip exited "
            f"{done.returncode}): {first_error(Path(out.name).read_text(errors='replace'))[:200]}"
            f"; the whole output is in {out.name}."
        )
    return python


def first_error(output: str) -> str:
    """The build output's first line that names an error (pip's own summary lines last).

    >>> first_error("x\\n  error: subprocess-exited-with-error\\n  CMake Error: Unknown argument\\n")
    'CMake Error: Unknown argument'
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    generic = ("error: subprocess-exited-with-error", "ERROR: Failed", "note:")
    for line in lines:
        if re.search(r"\berror\b", line, re.IGNORECASE) and not line.startswith(generic):
            return line
    return lines[-1] if lines else "no output"


def install_runtime(
    wheels: Path, say: Say, portable: bool = False, rebuild: bool = False, server: bool = False
) -> str:
    """Installs llama-cpp-python into this interpreter's environment (built here once, see
    :func:`build_wheel`); with ``server``, its OpenAI-compatible server too. Returns what was
    done, in words."""
    version = REQUIREMENT.split("==")[1]
    have = installed_version()
    wanted = requirement(server)
    if have == version and not rebuild and (not server or _has_server()):
        return f"llama-cpp-python {have} is installed"
    wheel = build_wheel(wheels, portable, say)
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if have is not None:
        subprocess.run(
            [sys.executable, "-m", "pip", "uninstall", "-q", "-y", "llama-cpp-python"],
            stdin=subprocess.DEVNULL,
            check=False,
        )
    from cadet_magic.local.download import file_sha256

    recorded = _built(wheels, build_stamp(portable))
    with tempfile.TemporaryDirectory(prefix="cadet-wheel-") as own:
        copy = Path(own) / wheel.name  # the file pip reads: no one else can change it
        shutil.copyfile(wheel, copy, follow_symlinks=False)
        if recorded is None or file_sha256(copy) != recorded[1]:
            raise LocalModelError(f"The wheel in {wheels} changed before it was installed.")
        steps = [
            [*pip, "--no-cache-dir", "--no-index", "--no-deps", str(copy)],
            [*pip, "--only-binary=:all:", wanted],  # its dependencies: wheels only
        ]
        for cmd in steps:
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise LocalModelError(
                    f"pip could not install {wanted} (exit {done.returncode}; its messages are "
                    "above)."
                )
    return f"llama-cpp-python {version} installed from {wheels}"


def _has_server() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("uvicorn", "fastapi", "sse_starlette"))
