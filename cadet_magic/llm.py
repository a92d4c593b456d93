"""From a model spec to a chat model (edge: the only module that imports LangChain).

A spec is ``provider:model`` for LangChain's ``init_chat_model`` (e.g.
``openai:gpt-4o-mini``, ``anthropic:claude-sonnet-4-5``, ``ollama:llama3.1``), or
``scripted:PATH`` for a :class:`ScriptedModel` whose replies are stored in a JSON
file. Where LangChain cannot load (a Pyodide kernel in JupyterLite), ``openai:``, ``ollama:``
and OpenAI-compatible specs are served by :mod:`cadet_magic.llm_browser` instead. Anything with ``invoke(messages)`` returning an object with ``.content`` is a
model already and passes through.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadet_magic.errors import ConfigurationError, NoModelError

ENV_VAR = "CADET_MODEL"
SCRIPTED_LABEL = "scripted stand-in (replies stored in advance, not a real LLM)"


@dataclass
class ScriptedReply:
    content: str


class ScriptedModel:
    """A stand-in model that replays stored replies, per question, in order.

    ``replies`` maps a question to the list of replies for its successive calls.
    It is never presented as a real model: its label says it is scripted.

    Example:
        >>> m = ScriptedModel({"How many?": ["```sql\\nSELECT 1\\n```"]})
        >>> m.invoke([("system", "..."), ("human", "Question: How many?")]).content
        '```sql\\nSELECT 1\\n```'
    """

    cadet_scripted = True

    def __init__(self, replies: Mapping[str, Sequence[str]], name: str = "scripted") -> None:
        self.replies = {q.strip(): list(r) for q, r in replies.items()}
        self.name = name
        self.calls: dict[str, int] = {}

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> ScriptedModel:
        data = json.loads(Path(path).read_text())
        return cls(data.get("replies", data), name=f"scripted:{Path(path).name}")

    def _question(self, messages: Sequence[Any]) -> str:
        text = ""
        for m in messages:
            content = m[1] if isinstance(m, tuple) else getattr(m, "content", str(m))
            text = str(content)
        first = text.split("\n", 1)[0]
        return first.removeprefix("Question:").strip()

    def invoke(self, messages: Sequence[Any], *args: Any, **kwargs: Any) -> ScriptedReply:
        question = self._question(messages)
        script = self.replies.get(question)
        if script is None:
            raise KeyError(f"no scripted reply stored for the question {question!r}")
        n = self.calls.get(question, 0)
        self.calls[question] = n + 1
        return ScriptedReply(script[min(n, len(script) - 1)])


def is_scripted(model: Any) -> bool:
    """True for stand-ins: our ScriptedModel and LangChain's fake chat models."""
    return bool(getattr(model, "cadet_scripted", False)) or "Fake" in type(model).__name__


def model_label(model: Any, spec: str | None = None) -> str:
    """What displays call the model; scripted models always say so."""
    if is_scripted(model):
        return f"{getattr(model, 'name', None) or type(model).__name__}: {SCRIPTED_LABEL}"
    if spec:
        return spec
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return f"{type(model).__name__}({name})" if name else type(model).__name__


def load_model(
    spec: Any,
    namespace: Mapping[str, Any] | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 120.0,
) -> Any:
    """A chat model from a spec, a notebook variable name, or a model object.

    Order: a model object passes through; a name of a variable in ``namespace``
    holding a model; ``scripted:PATH``; then ``init_chat_model(spec)``, or, where
    LangChain cannot be imported, the browser client of :mod:`cadet_magic.llm_browser`.
    ``api_key`` and ``base_url`` (when given) go to the provider; ``timeout`` bounds a
    browser client's call.
    """
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        spec = os.environ.get(ENV_VAR) or None
        if spec is None:
            raise NoModelError()
    if not isinstance(spec, str):
        if hasattr(spec, "invoke"):
            return spec
        raise ConfigurationError(f"A {type(spec).__name__} is not a chat model (it has no invoke).")
    spec = spec.strip()
    if namespace is not None and spec.isidentifier() and spec in namespace:
        obj = namespace[spec]
        if hasattr(obj, "invoke"):
            return obj
        raise ConfigurationError(f"The variable {spec!r} is not a chat model (it has no invoke).")
    if spec.startswith("scripted:"):
        path = Path(spec.removeprefix("scripted:")).expanduser()
        if not path.exists():
            raise ConfigurationError(f"Scripted replies file not found: {path}")
        return ScriptedModel.from_file(path)
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:  # a Pyodide kernel: no LangChain there
        from cadet_magic.llm_browser import BrowserChatModel, endpoint

        return BrowserChatModel(endpoint(spec, base_url=base_url, api_key=api_key, timeout=timeout))
    extra = {k: v for k, v in (("api_key", api_key), ("base_url", base_url)) if v}
    try:
        return init_chat_model(spec, **extra)
    except ImportError as e:
        raise ConfigurationError(
            f"The provider package for {spec!r} is missing: {e}. Install it, e.g. "
            "pip install 'cadet-magic[openai]'."
        ) from e
    except Exception as e:  # noqa: BLE001 - bad spec, missing API key, ...
        first = (str(e).strip().splitlines() or [""])[0]
        raise ConfigurationError(f"Cannot set up the model {spec!r}: {first}") from e
