"""The local model: a real LLM that runs in the kernel, installed with one command.

``python -m cadet_magic.local install`` downloads the pinned model (:mod:`~cadet_magic.local.pin`:
Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, 1.1 GB) into the user's cache folder
(:mod:`~cadet_magic.local.model_store`), resuming an interrupted download and checking every part
against its SHA-256 (:mod:`~cadet_magic.local.download`, :mod:`~cadet_magic.local.sources`), and
installs llama-cpp-python (the ``local`` extra), compiled once for this machine
(:mod:`~cadet_magic.local.runtime`). ``python -m cadet_magic.local status`` says what is
installed and where.

``%%ask --model local`` then runs it in the kernel, and ``%%ask`` with no model configured uses
it (:mod:`~cadet_magic.llm.local`). Nothing here is imported until one of them is used.
"""

from __future__ import annotations

from cadet_magic.local.pin import PIN, ModelPin

__all__ = ["PIN", "ModelPin"]
