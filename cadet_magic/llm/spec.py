"""From a model spec to a chat model (edge: the only module that imports LangChain).

A spec is ``provider:model`` for LangChain's ``init_chat_model`` (e.g.
``openai:gpt-4o-mini``, ``anthropic:claude-sonnet-4-5``, ``ollama:llama3.1``), or
``scripted:PATH`` for a :class:`ScriptedModel` whose replies are stored in a JSON
file, ``llamacpp:PATH`` for a GGUF model file run in this process
(:mod:`cadet_magic.llm.llamacpp`), or ``local`` for the model ``python -m cadet_magic.local
install`` installed (:mod:`cadet_magic.llm.local`; also the default when none is configured). Where LangChain cannot load (a Pyodide kernel in JupyterLite), ``openai:``, ``ollama:``
and OpenAI-compatible specs are served by :mod:`cadet_magic.llm.browser` instead. Anything with ``invoke(messages)`` returning an object with ``.content`` is a
model already and passes through.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadet_magic.errors import ConfigurationError, ModelCallError

ENV_VAR = "CADET_MODEL"
#: The local model, as a way to get a real one (CPython kernels only).
LOCAL_HINT = "--model local (installed once with python -m cadet_magic.local install) or "
SCRIPTED_LABEL = "scripted stand-in (replies stored in advance, not a real LLM)"
#: The providers whose LangChain package an extra of ours installs (pyproject.toml).
EXTRAS = {
    "langchain-openai": "openai",
    "langchain-anthropic": "anthropic",
    "langchain-ollama": "ollama",
}
#: Providers named when LangChain's own list cannot be read.
KNOWN_PROVIDERS = (
    "anthropic",
    "azure_openai",
    "google_genai",
    "groq",
    "mistralai",
    "ollama",
    "openai",
)


@dataclass
class ScriptedReply:
    content: str


#: Replies files already read and checked, by :func:`_file_key`: each ask loads the model again.
_REPLIES_READ: dict[tuple[str, int, int], Mapping[str, Sequence[str]]] = {}


def _file_key(path: Path) -> tuple[str, int, int] | None:
    """A file's path, size and modification time (None for a folder or a missing file)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return None if stat.S_ISDIR(st.st_mode) else (str(path), st.st_size, st.st_mtime_ns)


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
        """Replies from a JSON file: ``{"replies": {question: [reply, ...]}}`` or the mapping
        itself. Raises :class:`ConfigurationError` (one line) when the file is missing, a
        folder, not JSON, or not such a mapping."""
        path = Path(path).expanduser()
        key = _file_key(path)
        if key in _REPLIES_READ:  # unchanged since it was read (JupyterLite: one request, not 4)
            return cls(_REPLIES_READ[key], name=f"scripted:{path.name}")
        usage = (
            'it must hold {"question": ["reply", ...]} (optionally under "replies"), '
            "e.g. --model scripted:replies.json"
        )
        if not path.exists():
            raise ConfigurationError(f"Scripted replies file not found: {path}; {usage}.")
        if path.is_dir():
            raise ConfigurationError(
                f"scripted:{path} is a folder, not a file of replies; {usage}."
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigurationError(f"Cannot read scripted:{path}: {e}.") from e
        except json.JSONDecodeError as e:
            raise ConfigurationError(
                f"scripted:{path} is not valid JSON ({e.msg} at line {e.lineno}, column "
                f"{e.colno}); {usage}."
            ) from e
        replies = data.get("replies", data) if isinstance(data, dict) else data
        if (
            not isinstance(replies, dict)
            or not replies
            or not all(
                isinstance(r, list) and r and all(isinstance(x, str) for x in r)
                for r in replies.values()
            )
        ):
            raise ConfigurationError(
                f"scripted:{path} does not hold a list of replies per question; {usage}."
            )
        if key is not None:
            if len(_REPLIES_READ) >= 8:
                _REPLIES_READ.clear()
            _REPLIES_READ[key] = replies
        return cls(replies, name=f"scripted:{path.name}")

    def _question(self, messages: Sequence[Any]) -> str:
        """The question the prompt asks: the first turn that begins ``Question:`` (a retry
        appends its feedback after it), else the first line of the last turn."""
        texts = [
            str(m[1] if isinstance(m, tuple) else getattr(m, "content", str(m))) for m in messages
        ]
        asked = next((t for t in texts if t.startswith("Question:")), texts[-1] if texts else "")
        first = asked.split("\n", 1)[0]
        return first.removeprefix("Question:").strip()

    def invoke(self, messages: Sequence[Any], *args: Any, **kwargs: Any) -> ScriptedReply:
        question = self._question(messages)
        script = self.replies.get(question)
        if script is None:
            raise ModelCallError(
                f"The scripted replies ({self.name}) hold no answer for the question "
                f"{question!r}: a scripted stand-in only replays the replies stored for the "
                "questions in its file, word for word. To ask your own questions, use a real "
                f"model: {LOCAL_HINT if sys.platform != 'emscripten' else ''}--model "
                "openai:gpt-4o-mini (or %config AskMagic.model, or the "
                f"{ENV_VAR} environment variable)."
            )
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
    if getattr(model, "cadet_label", None):  # the local model names itself
        return str(model.cadet_label)
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
    timeout: float | None = None,
    temperature: float | None = None,
) -> Any:
    """A chat model from a spec, a notebook variable name, or a model object.

    Order: none given: ``CADET_MODEL``, else the installed local model (in JupyterLite: the
    page's model, when the site has one), else :class:`NoModelError`; a model object passes through; a name of a variable in ``namespace``
    holding a model; ``scripted:PATH``; ``local``; ``browser`` (the JupyterLite page's model);
    ``llamacpp:PATH``; then
    ``init_chat_model(spec)``, or, where LangChain cannot be imported, the browser client of :mod:`cadet_magic.llm.browser`.
    ``api_key`` and ``base_url`` (when given) go to the provider; ``timeout`` (seconds per
    request) goes to the provider client where it accepts one and bounds a browser client's call.
    ``temperature`` (when given) is the sampling temperature of a model loaded from a spec; a
    model object keeps its own.
    """
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        spec = os.environ.get(ENV_VAR) or None
        if spec is None:
            return _default_model(timeout, temperature)
    if not isinstance(spec, str):
        if hasattr(spec, "invoke"):
            return spec
        raise ConfigurationError(f"A {type(spec).__name__} is not a chat model (it has no invoke).")
    spec = spec.strip()
    if namespace is not None and spec.isidentifier() and spec in namespace:
        obj = namespace[spec]
        if hasattr(obj, "invoke"):
            return obj
        if spec != "local":  # a variable named local does not hide the local model
            raise ConfigurationError(
                f"The variable {spec!r} is not a chat model (it has no invoke)."
            )
    own = _own_spec(spec, 0.0 if temperature is None else temperature, timeout)
    if own is not None:
        return own
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:  # a Pyodide kernel: no LangChain there
        from cadet_magic.llm.browser import BrowserChatModel, endpoint

        limit = timeout if timeout is not None else 120.0
        return BrowserChatModel(
            endpoint(
                spec, base_url=base_url, api_key=api_key, timeout=limit, temperature=temperature
            )
        )
    extra: dict[str, Any] = {k: v for k, v in (("api_key", api_key), ("base_url", base_url)) if v}
    if temperature is not None:
        extra["temperature"] = temperature
    _warn_plaintext(spec, api_key, base_url)
    try:
        if timeout is None:
            return init_chat_model(spec, **extra)
        try:
            return init_chat_model(spec, timeout=timeout, **extra)
        except (TypeError, ValueError):  # a provider without a timeout option
            return init_chat_model(spec, **extra)
    except ImportError as e:
        raise ConfigurationError(
            f"The provider package for {spec!r} is not installed: run "
            f"{install_hint(spec, str(e))} in this kernel's environment, then run the cell again."
        ) from e
    except Exception as e:
        raise ConfigurationError(setup_error_text(spec, str(e))) from e


def _default_model(timeout: float | None, temperature: float | None) -> Any:
    """The model when none is configured: the installed local model (in JupyterLite, the
    page's), else one line on getting a model."""
    if sys.platform == "emscripten":
        from cadet_magic.llm.page import default_page_model

        return default_page_model(timeout, temperature)
    from cadet_magic.llm.local import default_model

    return default_model(0.0 if temperature is None else temperature)


def _own_spec(spec: str, temperature: float, timeout: float | None = None) -> Any:
    """The model of a spec served here rather than by a provider (``scripted:``, ``local``,
    ``browser``, ``llamacpp:``), or None. Local models are greedy unless a temperature is
    given."""
    if spec.startswith("scripted:"):
        return ScriptedModel.from_file(spec.removeprefix("scripted:"))
    if spec == "browser":  # the model in the JupyterLite page (lite/model/page.js)
        from cadet_magic.llm.page import load_page_model

        return load_page_model(timeout=timeout, temperature=temperature)
    if spec == "local":  # the installed local model (python -m cadet_magic.local install)
        from cadet_magic.llm.local import load_local

        return load_local(temperature)
    if spec.startswith("llamacpp:"):  # a GGUF file run in this process (llama-cpp-python)
        from cadet_magic.llm.llamacpp import load_llamacpp

        return load_llamacpp(spec, temperature=temperature)
    return None


def _providers() -> tuple[str, ...]:
    """The provider names ``init_chat_model`` knows (LangChain's table; ours if unreadable)."""
    try:
        from langchain.chat_models.base import _BUILTIN_PROVIDERS

        return tuple(sorted(_BUILTIN_PROVIDERS))
    except (ImportError, AttributeError):
        return KNOWN_PROVIDERS


def install_hint(spec: str, error: str = "") -> str:
    """The one install command for the provider of ``spec``: our extra when there is one,
    else the LangChain package the error (or LangChain's provider table) names.

    >>> install_hint("anthropic:claude-sonnet-4-5", "requires the langchain-anthropic package")
    "pip install 'cadet-magic[anthropic]'"
    >>> install_hint("groq:llama-3.3", "requires the langchain-groq package")
    'pip install langchain-groq'
    """
    found = re.search(r"requires the ([A-Za-z0-9_.-]+) package", error)
    package = found.group(1) if found else None
    if package is None:
        provider = spec.split(":", 1)[0].strip().lower()
        try:
            from langchain.chat_models.base import _BUILTIN_PROVIDERS

            module = _BUILTIN_PROVIDERS[provider][0]
        except (ImportError, AttributeError, KeyError):
            module = f"langchain_{provider}"
        package = module.split(".", 1)[0].replace("_", "-")
    extra = EXTRAS.get(package)
    return f"pip install 'cadet-magic[{extra}]'" if extra else f"pip install {package}"


def setup_error_text(spec: str, error: str) -> str:
    """One line for a model that could not be set up: a misspelt provider gets the closest
    one, a missing key says where to put it; anything else keeps the provider's first line.

    >>> setup_error_text("opneai:gpt-4o-mini", "Unable to infer model provider for model=...")
    "Unknown model provider 'opneai' in 'opneai:gpt-4o-mini': did you mean openai:gpt-4o-mini?"
    """
    first = (error.strip().splitlines() or [""])[0]
    if first.startswith("Unable to infer model provider"):
        provider, _, name = spec.partition(":")
        close = difflib.get_close_matches(provider.lower(), _providers(), n=1, cutoff=0.6)
        if name and close:
            return (
                f"Unknown model provider {provider!r} in {spec!r}: did you mean {close[0]}:{name}?"
            )
        return (
            f"Cannot tell the provider of {spec!r}: write it as provider:model, e.g. "
            f"openai:gpt-4o-mini (providers: {', '.join(_providers())})."
        )
    if re.search(r"api[_ ]?key", first, re.IGNORECASE):
        var = re.search(r"\b[A-Z][A-Z0-9_]*_API_KEY\b", first)
        where = var.group(0) if var else "the provider's API key variable"
        return (
            f"Cannot set up the model {spec!r}: no API key. Set it for this session with "
            f'%config AskMagic.api_key = "..." (then delete it from the cell; it is never '
            f"shown), or set {where} in the kernel's environment."
        )
    return f"Cannot set up the model {spec!r}: {first}"


def _warn_plaintext(spec: str, api_key: str | None, base_url: str | None) -> None:
    """Warns once when a provider's key would go over plain HTTP to another machine (the
    base URL given, else the provider's ``*_BASE_URL`` variable; the key given, else its
    ``*_API_KEY`` variable)."""
    from cadet_magic.llm.browser import warn_plaintext_key

    provider = spec.partition(":")[0].strip().upper()
    url = base_url or os.environ.get(f"{provider}_BASE_URL")
    key = api_key or os.environ.get(f"{provider}_API_KEY")
    warn_plaintext_key(url, key)
