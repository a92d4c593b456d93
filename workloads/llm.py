"""The real local model on 127.0.0.1: llama-cpp-python's OpenAI-compatible server serving the GGUF
file that ``scripts/setup_llm.sh`` installed (``python -m cadet_magic.local install``: the pinned
Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, checked against its SHA-256) and linked as
``.cache/llm/qwen.gguf``, for the ``llm`` tests and the evaluation benchmark.

``llm_server()`` starts one on a free port and yields its base URL; the agent reaches it as
``ask(..., model="openai:qwen", base_url=url, api_key="local")``. The server caches the prompt
prefix between calls; replies are reproducible only with a pinned temperature.

Example:
    >>> from workloads.llm import MODEL_ALIAS, model_path
    >>> MODEL_ALIAS, model_path().name
    ('qwen', 'qwen.gguf')
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from workloads.postgres import _free_port

REPO = Path(__file__).resolve().parents[1]
#: The name the server answers to (``openai:qwen``).
MODEL_ALIAS = "qwen"
#: Context window the server is started with: the agent's longest prompts fit.
N_CTX = 8192


def model_path() -> Path:
    """The installed GGUF file (``CADET_LLM_GGUF`` overrides the project's link to it)."""
    return Path(os.environ.get("CADET_LLM_GGUF") or REPO / ".cache" / "llm" / "qwen.gguf")


def missing() -> str | None:
    """Why the local model cannot be served here, or None when it can."""
    path = model_path()
    if not path.is_file():
        return f"local model not found at {path} (bash scripts/setup_llm.sh installs it)"
    marker = path.with_name(path.name + ".ok")
    if "CADET_LLM_GGUF" not in os.environ and not marker.is_file():
        return f"{path} was not checked by the install (rerun bash scripts/setup_llm.sh)"
    try:
        import llama_cpp.server  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return "llama-cpp-python[server] not installed (bash scripts/setup_llm.sh builds it)"
    return None


@contextlib.contextmanager
def llm_server(
    threads: int | None = None, timeout: float = 120.0, n_ctx: int = N_CTX
) -> Iterator[str]:
    """Starts the server on 127.0.0.1 and yields its OpenAI base URL (``http://.../v1``).

    Raises:
        RuntimeError: when the model or the server package is missing, or the server does not
            answer within ``timeout`` seconds (its log's tail in the message).
    """
    why = missing()
    if why:
        raise RuntimeError(why)
    port = _free_port()
    threads = threads or min(2, os.cpu_count() or 1)
    log = Path(tempfile.mkstemp(prefix="cadet-llm-", suffix=".log")[1])
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(url, proc, log, timeout)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.unlink(missing_ok=True)


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama-cpp server exited ({proc.returncode}): {tail}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(
        f"llama-cpp server not ready after {timeout:.0f} s: {log.read_text()[-2000:]}"
    )
