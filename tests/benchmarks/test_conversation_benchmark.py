"""benchmarks.conversation runs end to end against an OpenAI-compatible fake (scripted replies,
labelled as such), on Spider dev databases from CADET_DATA, and resumes from its results file."""

from __future__ import annotations

import json

from tests.conftest import need_data
from tests.fake_openai import FakeOpenAI


def test_conversation_benchmark_runs_and_resumes(tmp_path, monkeypatch):
    need_data()
    from benchmarks import conversation
    from benchmarks import eval as eval_benchmark

    # the scripted replies stay out of the checkout's store of the real model's replies (which
    # answers a request it has seen without asking the server: a second run sent nothing)
    monkeypatch.setattr(eval_benchmark, "REPLIES", tmp_path / "replies.jsonl")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the key kept pairs carry
    out = tmp_path / "results.jsonl"
    reply = "```sql\nSELECT count(*) FROM country\n```"
    with FakeOpenAI([reply] * 400) as server:
        argv = ["--base-url", server.base_url, "--out", str(out), "--no-write", "--minutes", "5"]
        assert conversation.main([*argv, "--parts", "follow"]) == 0
        records = [json.loads(line) for line in out.read_text().splitlines()]
        modes = {r["mode"] for r in records}
        assert {"follow", "alone"} <= modes and all(r["part"] == "follow" for r in records)
        followed = [r for r in server.requests if "previous-answer" in json.dumps(r)]
        assert followed  # the follow mode sent the previous answer
        calls = len(server.requests)
        assert conversation.main([*argv, "--parts", "follow"]) == 0  # resumes: all done
        assert len(server.requests) - calls < calls
        calls = len(server.requests)
        assert conversation.main([*argv, "--parts", "examples,share"]) == 0
        sent = [json.dumps(r) for r in server.requests[calls:]]
        assert any("<examples>" in s for s in sent)  # the kept pairs reached the prompt
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["mode"] for r in records} >= {"kept", "none", "schema", "stats", "samples"}
    table = conversation.summary(out)
    assert "follow" in table and "kept" in table and "schema" in table
