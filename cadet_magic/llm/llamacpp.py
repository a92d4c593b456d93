"""A GGUF model file run inside the kernel: the ``llamacpp:PATH`` model spec (edge).

``llamacpp:/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` loads the file with
llama-cpp-python (the optional extra ``cadet-magic[llamacpp]``; imported only here, only when
such a spec is used) and answers through ``Llama.create_chat_completion`` with the chat
template stored in the file. Nothing leaves the machine: no server, no port, no key.

The loaded model is kept for the process (keyed by the file, its size and modification time),
so the second question does not load it again; calls to one model run one at a time. Replies
are greedy by default (``temperature=0``): the same question on the same data gets the same
SQL. The usage llama.cpp reports (``prompt_tokens``, ``completion_tokens``) goes with each
reply, so every attempt records its tokens.

The agent waits for a call as long as it takes (``AskMagic.model_timeout`` guards calls over a
network, which may never end; this one always does, within ``max_tokens`` tokens, and abandoning
it would not stop it). A call given up by an interrupt cannot be stopped inside llama.cpp: it
finishes its reply in the background before the next call to the same model starts.

Example:
    >>> class FakeLlama:  # stands in for llama_cpp.Llama (scripted, not a real model)
    ...     def create_chat_completion(self, messages, **options):
    ...         return {"choices": [{"message": {"content": "SELECT 1"}}],
    ...                 "usage": {"prompt_tokens": 31, "completion_tokens": 4}}
    >>> model = LlamaCppChatModel("m.gguf", llama=FakeLlama())
    >>> reply = model.invoke([("system", "You write SQL."), ("human", "one?")])
    >>> reply.content, reply.usage
    ('SELECT 1', {'prompt_tokens': 31, 'completion_tokens': 4})
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadet_magic.errors import ConfigurationError, ModelCallError
from cadet_magic.llm import batched
from cadet_magic.llm.batched import Draw
from cadet_magic.llm.browser import chat_messages
from cadet_magic.local.machine import threads as default_threads

#: The spec prefix.
PREFIX = "llamacpp:"
#: Context window (tokens): the agent's prompt with a 6000-character schema, earlier attempts
#: and feedback fits with room for the reply.
N_CTX = 8192
#: Sequences the model's context decodes together at most (the vote's default five candidates
#: and the answer fit in one batch; more are decoded in groups of this many).
SEQUENCES = 8
#: Tokens a reply may have at most (SQL plus the fallback's pandas code fit well within).
MAX_TOKENS = 1024
INSTALL_HINT = (
    "pip install 'cadet-magic[llamacpp]' (llama-cpp-python: PyPI has only its source, so pip "
    "compiles llama.cpp, about ten minutes on two cores)"
)

#: Models loaded in this process, by (file, size, mtime, n_ctx, threads, repack).
_LOADED: dict[tuple, Any] = {}
_LOADING = threading.Lock()


@dataclass
class LocalReply:
    """A reply: its text and llama.cpp's usage report (read as the attempt's tokens)."""

    content: str
    usage: dict[str, Any] | None = None


class LlamaCppChatModel:
    """A chat model over a GGUF file: ``invoke(messages)`` returns a :class:`LocalReply`.

    Its calls run in this process and always end (at most ``max_tokens`` tokens): the agent
    waits for them whatever ``model_timeout`` says (``cadet_in_process``).

    Args:
        path: the GGUF file.
        temperature: sampling temperature (0: greedy, the same reply every time).
        max_tokens: tokens a reply may have at most.
        n_ctx, n_threads: llama.cpp's context window and threads (default
            :data:`N_CTX` and :func:`default_threads`).
        llama: an object with ``create_chat_completion`` to use instead of loading ``path``.
        batched: whether replies to one prompt may be decoded together (False: one after the
            other, as before the batched path; the benchmarks compare the two).
    """

    cadet_in_process = True

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        temperature: float = 0.0,
        max_tokens: int = MAX_TOKENS,
        n_ctx: int = N_CTX,
        n_threads: int | None = None,
        llama: Any = None,
        batched: bool = True,
    ) -> None:
        self.path = Path(path)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.llama = llama if llama is not None else load_gguf(self.path, n_ctx, n_threads)
        self.name = f"{PREFIX}{self.path}"
        self.model_name = self.path.name
        self._formatter: Any = None if batched else False  # False: no batched path here
        self._bindings: Any = None
        self._lock = getattr(self.llama, "_cadet_lock", None) or threading.Lock()
        try:  # one lock per loaded model, shared by every chat model over it
            self.llama._cadet_lock = self._lock
        except AttributeError:
            pass

    def invoke(self, messages: Sequence[Any], *args: Any, **kwargs: Any) -> LocalReply:
        return self._complete(messages, temperature=self.temperature)

    @property
    def cadet_batched(self) -> bool:
        """Whether several replies are decoded together (:mod:`cadet_magic.llm.batched`): the
        model was loaded by llama-cpp-python with the chat template stored in its file."""
        return self._chat_format() is not None

    def cadet_sample(
        self, messages: Sequence[Any], *, count: int, seed: int, temperature: float
    ) -> list[LocalReply]:
        """``count`` replies sampled at ``temperature``, the i-th with seed ``seed + i``, decoded
        together from the prompt read once (one after the other, each from llama.cpp's prefix
        cache, where they cannot be: :attr:`cadet_batched`)."""
        draws = [Draw(temperature, seed + i) for i in range(count)]
        together = self._together(messages, draws)
        if together is not None:
            return together
        return [
            self._complete(messages, temperature=temperature, seed=seed + i) for i in range(count)
        ]

    def cadet_answer_and_sample(
        self, messages: Sequence[Any], *, count: int, seed: int, temperature: float
    ) -> list[LocalReply]:
        """The answer (this model's own temperature: greedy by default) and ``count`` replies
        sampled as :meth:`cadet_sample` samples them, all decoded together: the vote's first
        candidates cost the answer's time, not their own."""
        draws = [
            Draw(self.temperature, seed - 1),
            *(Draw(temperature, seed + i) for i in range(count)),
        ]
        together = self._together(messages, draws)
        if together is not None:
            return together
        answer = self._complete(messages, temperature=self.temperature)
        return [
            answer,
            *self.cadet_sample(messages, count=count, seed=seed, temperature=temperature),
        ]

    def _chat_format(self) -> Any:
        """The chat template's formatter when the batched path can run here, else None."""
        if self._formatter is not None:
            return self._formatter or None
        self._formatter = False
        llama = self.llama
        template = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template")
        if not template or getattr(llama, "chat_format", None) != "chat_template.default":
            return None
        try:
            import llama_cpp.llama_cpp as bindings
            from llama_cpp import llama_chat_format
        except ImportError:
            return None
        if not batched.supported(bindings) or not hasattr(llama, "input_ids"):
            return None
        eos, bos = llama.token_eos(), llama.token_bos()
        self._formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        self._bindings = bindings
        return self._formatter

    def _together(
        self,
        messages: Sequence[Any],
        draws: Sequence[Draw],
        on_token: Callable[[int, Sequence[int]], None] | None = None,
    ) -> list[LocalReply] | None:
        """The replies of ``draws`` decoded together (None: the batched path cannot run)."""
        formatter = self._chat_format()
        if formatter is None:
            return None
        shaped = formatter(messages=chat_messages(messages))
        text = shaped.prompt.encode("utf-8")
        with self._lock:
            prompt = self.llama.tokenize(text, add_bos=not shaped.added_special, special=True)
            try:
                decoded = batched.decode_together(
                    self.llama, self._bindings, prompt, draws, self.max_tokens, on_token=on_token
                )
            except ValueError as e:
                raise ModelCallError(
                    f"The local model {self.path.name} could not take the prompt: {e}. Lower "
                    "%config AskMagic.schema_budget, or load the model with a larger n_ctx."
                ) from None
            except batched.DecodeError as e:
                raise ModelCallError(f"The local model {self.path.name} failed: {e}.") from None
            texts = [
                self.llama.detokenize(list(d.tokens)).decode("utf-8", "ignore") for d in decoded
            ]
        stops = (
            shaped.stop if isinstance(shaped.stop, list) else [shaped.stop] if shaped.stop else []
        )
        replies = []
        for d, reply in zip(decoded, texts, strict=True):
            for mark in stops:
                reply = reply.split(mark, 1)[0]
            usage = {"prompt_tokens": len(prompt), "completion_tokens": len(d.tokens)}
            replies.append(LocalReply(reply, usage))
        return replies

    def _complete(self, messages: Sequence[Any], **sampling: Any) -> LocalReply:
        with self._lock:
            try:
                out = self.llama.create_chat_completion(
                    messages=chat_messages(messages), max_tokens=self.max_tokens, **sampling
                )
            except ValueError as e:  # llama.cpp's "Requested tokens exceed context window"
                raise ModelCallError(
                    f"The local model {self.path.name} could not take the prompt: {e}. Lower "
                    "%config AskMagic.schema_budget, or load the model with a larger n_ctx."
                ) from None
        try:
            content = out["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise ModelCallError(
                f"The local model {self.path.name} returned no message (llama-cpp-python "
                "changed its reply format?)."
            ) from None
        usage = out.get("usage") if isinstance(out, dict) else None
        return LocalReply(content, dict(usage) if isinstance(usage, dict) else None)

    def __repr__(self) -> str:
        return f"LlamaCppChatModel({str(self.path)!r}, temperature={self.temperature:g})"


def check_gguf(path: Path) -> None:
    """Raises one :class:`ConfigurationError` line when ``path`` is not a readable GGUF file.

    Example:
        >>> check_gguf(Path("/no/such/model.gguf"))
        Traceback (most recent call last):
        ...
        cadet_magic.errors.ConfigurationError: llamacpp: model file not found: /no/such/model.gguf (give the path of a .gguf file, e.g. --model llamacpp:~/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf).
    """
    example = "e.g. --model llamacpp:~/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if not path.exists():
        raise ConfigurationError(
            f"llamacpp: model file not found: {path} (give the path of a .gguf file, {example})."
        )
    if path.is_dir():
        raise ConfigurationError(f"llamacpp:{path} is a folder; give a .gguf file ({example}).")
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise ConfigurationError(f"llamacpp: cannot read {path}: {e.strerror or e}.") from None
    if magic != b"GGUF":
        raise ConfigurationError(
            f"llamacpp:{path} is not a GGUF model file (llama.cpp's format; convert the model "
            "or download its .gguf)."
        )


def load_gguf(
    path: Path, n_ctx: int = N_CTX, n_threads: int | None = None, repack: bool = True
) -> Any:
    """The ``llama_cpp.Llama`` for ``path``, loaded once per process. ``repack=False`` keeps
    llama.cpp from copying the weights into its faster layouts for this CPU: the weights then
    stay only in the mapped file (about 0.6 GB less memory for the 1.5B model)."""
    path = path.expanduser().resolve()
    check_gguf(path)
    threads = n_threads or default_threads()
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, n_ctx, threads, repack)
    with _LOADING:
        if key in _LOADED:
            return _LOADED[key]
        try:
            import llama_cpp.llama_cpp as bindings
            from llama_cpp import Llama
        except ImportError:
            raise ConfigurationError(
                f"The llamacpp: spec needs llama-cpp-python, which is not installed: "
                f"{INSTALL_HINT}."
            ) from None
        try:
            with _model_params(bindings, repack):
                llama = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as e:
            first = (str(e).strip().splitlines() or [""])[0][:300]
            raise ConfigurationError(f"llamacpp: could not load {path}: {first}") from None
        if not _LOADED:
            atexit.register(close_loaded)
        _LOADED[key] = llama
        return llama


@contextlib.contextmanager
def _model_params(bindings: Any, repack: bool) -> Iterator[None]:
    """While a model loads: llama.cpp's model parameters with ``use_extra_bufts`` (weight
    repacking) as asked, and its context's with :data:`SEQUENCES` sequences in one unified
    cache (the vote's candidates decoded together share the prompt's cells; one sequence alone
    still has the whole window). ``Llama()`` takes no such arguments; it reads the defaults
    from the bindings' ``llama_model_default_params`` and ``llama_context_default_params``,
    replaced for the duration (under the load lock)."""
    model_default: Any = getattr(bindings, "llama_model_default_params", None)
    context_default: Any = getattr(bindings, "llama_context_default_params", None)

    def without_repack() -> Any:
        params = model_default()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    def with_sequences() -> Any:
        params = context_default()
        if hasattr(params, "n_seq_max") and hasattr(params, "kv_unified"):
            params.n_seq_max = SEQUENCES
            params.kv_unified = True
        return params

    if model_default is not None and not repack:
        bindings.llama_model_default_params = without_repack
    if context_default is not None:
        bindings.llama_context_default_params = with_sequences
    try:
        yield
    finally:
        if model_default is not None:
            bindings.llama_model_default_params = model_default
        if context_default is not None:
            bindings.llama_context_default_params = context_default


def close_loaded() -> None:
    """Frees the models :func:`load_gguf` loaded (registered to run at interpreter exit: by
    the time the objects are collected there, llama-cpp-python's functions are gone, and each
    model printed an ignored ``TypeError`` traceback as the kernel shut down)."""
    with _LOADING:
        loaded = list(_LOADED.values())
        _LOADED.clear()
    for llama in loaded:
        with contextlib.suppress(Exception):
            llama.close()


def load_llamacpp(spec: str, *, temperature: float = 0.0) -> LlamaCppChatModel:
    """The chat model for ``llamacpp:PATH`` (``~`` expanded; a relative path is relative to
    the kernel's working folder)."""
    path = spec.removeprefix(PREFIX).strip()
    if not path:
        raise ConfigurationError(
            "llamacpp: needs the path of a .gguf file, e.g. "
            "--model llamacpp:~/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf."
        )
    return LlamaCppChatModel(Path(path).expanduser(), temperature=temperature)
