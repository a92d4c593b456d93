"""The ``llamacpp:PATH`` spec: bad paths and a missing llama-cpp-python get one line each; a
loaded model answers through ``create_chat_completion`` with its usage. Here llama.cpp is a
scripted stand-in (the real GGUF file runs in tests/llm/, marker ``llm``)."""

from __future__ import annotations

import sqlite3
import sys

import pytest

from cadet_magic.api import ask
from cadet_magic.errors import ConfigurationError
from cadet_magic.llm import load_model, model_label
from cadet_magic.llm.llamacpp import LlamaCppChatModel
from cadet_magic.result import Tokens


@pytest.fixture
def files(tmp_path):
    (tmp_path / "folder.gguf").mkdir()
    (tmp_path / "notes.gguf").write_text("not a model")
    (tmp_path / "model.gguf").write_bytes(b"GGUF" + bytes(60))
    return tmp_path


@pytest.mark.parametrize(
    "name, says",
    [
        ("", "llamacpp: needs the path of a .gguf file"),
        ("missing.gguf", "llamacpp: model file not found:"),
        ("folder.gguf", "is a folder; give a .gguf file"),
        ("notes.gguf", "is not a GGUF model file"),
    ],
)
def test_bad_paths_get_one_line(files, name, says):
    spec = f"llamacpp:{files / name}" if name else "llamacpp:"
    with pytest.raises(ConfigurationError) as e:
        load_model(spec)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_without_llama_cpp_python_says_how_to_install(files, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails as if not installed
    with pytest.raises(ConfigurationError) as e:
        load_model(f"llamacpp:{files / 'model.gguf'}")
    assert "pip install 'cadet-magic[llamacpp]'" in str(e.value)


def test_a_broken_gguf_is_a_configuration_error(files):
    pytest.importorskip("llama_cpp")
    with pytest.raises(ConfigurationError) as e:
        load_model(f"llamacpp:{files / 'model.gguf'}")
    assert "llamacpp: could not load" in str(e.value)


class ScriptedLlama:
    """Stands in for ``llama_cpp.Llama`` (scripted replies, not a real model)."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls: list[dict] = []

    def create_chat_completion(self, messages, **options):
        self.calls.append({"messages": messages, **options})
        text = self.replies.pop(0)
        return {
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10 * len(messages), "completion_tokens": len(text.split())},
        }


def test_answers_with_usage_through_ask():
    llama = ScriptedLlama("```sql\nSELECT COUNT(*) AS n FROM t\n```")
    model = LlamaCppChatModel("qwen.gguf", llama=llama)
    model.cadet_scripted = True  # the stand-in is labelled as scripted
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (x INT)")
    r = ask("How many rows?", con=con, model=model)
    assert r.ok and r.rows == [(0,)]
    assert r.attempts[0].tokens == Tokens(20, 8)
    call = llama.calls[0]
    assert call["temperature"] == 0.0 and call["max_tokens"] == 1024
    assert [m["role"] for m in call["messages"]] == ["system", "user"]


def test_candidates_are_sampled_with_a_seed_each_on_the_same_prompt():
    llama = ScriptedLlama("a", "b", "c")
    model = LlamaCppChatModel("qwen.gguf", llama=llama)
    replies = model.cadet_sample([("human", "q")], count=3, seed=5, temperature=0.7)
    assert [r.content for r in replies] == ["a", "b", "c"]
    assert [(c["temperature"], c["seed"]) for c in llama.calls] == [(0.7, 5), (0.7, 6), (0.7, 7)]
    assert all(c["messages"] == llama.calls[0]["messages"] for c in llama.calls)
    assert model.temperature == 0.0  # the model's own replies stay greedy


def test_without_the_batched_path_the_answer_and_candidates_come_one_after_the_other():
    """A stand-in without llama.cpp's context (and so without its chat template) cannot
    decode replies together: the answer, then each candidate, from the same prompt."""
    llama = ScriptedLlama("a", "b", "c")
    model = LlamaCppChatModel("qwen.gguf", llama=llama)
    assert not model.cadet_batched
    replies = model.cadet_answer_and_sample([("human", "q")], count=2, seed=1, temperature=0.7)
    assert [r.content for r in replies] == ["a", "b", "c"]
    assert [(c["temperature"], c.get("seed")) for c in llama.calls] == [
        (0.0, None),
        (0.7, 1),
        (0.7, 2),
    ]


def test_context_overflow_is_a_model_error_line():
    class Overflow:
        def create_chat_completion(self, messages, **options):
            raise ValueError("Requested tokens (9000) exceed context window of 8192")

    model = LlamaCppChatModel("qwen.gguf", llama=Overflow())
    model.cadet_scripted = True
    con = sqlite3.connect(":memory:")
    r = ask("Anything?", con=con, model=model)
    assert r.attempts[0].outcome == "model_error"
    assert "AskMagic.schema_budget" in r.message


def test_label_is_the_spec():
    model = LlamaCppChatModel("/m/qwen.gguf", llama=ScriptedLlama())
    assert model_label(model, "llamacpp:/m/qwen.gguf") == "llamacpp:/m/qwen.gguf"
    assert model.name == "llamacpp:/m/qwen.gguf"


def test_the_temperature_option_reaches_the_gguf_model(files, monkeypatch):
    """``ask(temperature=...)`` (and the evaluation's pinned 0) reaches a ``llamacpp:`` model."""
    import cadet_magic.llm.llamacpp as module

    seen: list[float] = []

    def fake_load(spec: str, *, temperature: float = 0.0) -> object:
        seen.append(temperature)
        return object()

    monkeypatch.setattr(module, "load_llamacpp", fake_load)
    load_model(f"llamacpp:{files / 'model.gguf'}", temperature=0.7)
    load_model(f"llamacpp:{files / 'model.gguf'}")
    assert seen == [0.7, 0.0]


def test_loaded_models_are_freed_at_exit(monkeypatch):
    """``close_loaded`` (run at interpreter exit) frees every loaded model while
    llama-cpp-python still can, and a model that fails to close does not stop the others."""
    from cadet_magic.llm import llamacpp as llm_llamacpp

    closed = []

    class Loaded:
        def __init__(self, name, fails=False):
            self.name, self.fails = name, fails

        def close(self):
            closed.append(self.name)
            if self.fails:
                raise TypeError("'NoneType' object is not callable")

    monkeypatch.setattr(
        llm_llamacpp, "_LOADED", {("a",): Loaded("a", fails=True), ("b",): Loaded("b")}
    )
    llm_llamacpp.close_loaded()
    assert closed == ["a", "b"] and llm_llamacpp._LOADED == {}


def test_a_call_in_the_kernel_is_waited_for_past_the_model_timeout():
    """model_timeout guards calls over a network; llama.cpp's calls always end, and abandoning
    one would leave it running: the agent waits for it."""
    import time

    class Slow(ScriptedLlama):
        def create_chat_completion(self, messages, **options):
            time.sleep(0.6)
            return super().create_chat_completion(messages, **options)

    model = LlamaCppChatModel("qwen.gguf", llama=Slow("SELECT 1 AS one"))
    model.cadet_scripted = True
    r = ask("One?", con=sqlite3.connect(":memory:"), model=model, model_timeout=0.1)
    assert r.ok and r.rows == [(1,)] and r.attempts[0].outcome == "ok"


def test_the_vote_s_candidates_are_waited_for_past_the_model_timeout():
    """The vote draws its candidates through a wrapper of the model: it is waited for as the
    model's own calls are (a candidate cut at the timeout ended a run with no answer)."""
    import time

    class Slow(ScriptedLlama):
        def create_chat_completion(self, messages, **options):
            time.sleep(0.3)
            return super().create_chat_completion(messages, **options)

    model = LlamaCppChatModel("qwen.gguf", llama=Slow("SELECT 1 AS one", "SELECT 1 AS one"))
    model.cadet_scripted = True
    r = ask("One?", con=sqlite3.connect(":memory:"), model=model, model_timeout=0.1, candidates=2)
    assert r.ok and r.rows == [(1,)] and r.stop_reason == "success"
    assert [a.outcome for a in r.candidates] == ["ok"] and r.agreement is not None
    assert (r.agreement.votes, r.agreement.of) == (2, 2)
