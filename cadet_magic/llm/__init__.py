"""The model clients (edge): from a model spec to a chat model, and the clients of their own.

- :mod:`.spec`: a spec (``provider:model``, ``scripted:PATH``, ``llamacpp:PATH``, ``local``,
  ``browser``), a
  notebook variable or a model object -> a chat model (LangChain's ``init_chat_model`` where it
  loads); none at all -> the installed local model (:mod:`cadet_magic.local`); the scripted
  stand-in model; labels and install hints.
- :mod:`.browser`: a small OpenAI-compatible client where LangChain cannot load (Pyodide), on
  the transports of :mod:`.transport`.
- :mod:`.llamacpp`: a GGUF file run in the kernel by llama-cpp-python.
- :mod:`.page`: the ``browser`` spec, the model run by the JupyterLite page itself.

The spec's names are importable from the package itself (``from cadet_magic.llm import
load_model``).
"""

from __future__ import annotations

from cadet_magic.llm.spec import (
    ENV_VAR,
    SCRIPTED_LABEL,
    ScriptedModel,
    ScriptedReply,
    install_hint,
    is_scripted,
    load_model,
    model_label,
    setup_error_text,
)

__all__ = [
    "ENV_VAR",
    "SCRIPTED_LABEL",
    "ScriptedModel",
    "ScriptedReply",
    "install_hint",
    "is_scripted",
    "load_model",
    "model_label",
    "setup_error_text",
]
