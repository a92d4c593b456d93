"""Kept answers in a folder others can write to: the examples file is data, never instructions.
Through a real IPython shell with jupysql on real DuckDB, with scripted hostile models
(labelled as such), real shells sourcing the file and a real vim reading it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from cadet_magic.kept_answers import FORMAT, line, read_examples, signature, user_key
from tests.helpers import CountingModel, fake_model, sql_reply, usage_error

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX shells, links and modes")

ORDERS = (
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, status VARCHAR, amount DOUBLE);"
    "INSERT INTO orders VALUES (1, 'paid', 10), (2, 'cancelled', 7.5);"
)
#: What a steered model's checked SQL can hold in its literals, and a question can hold: each
#: would run ``touch`` (a file named after the case) if a shell read the kept line as commands.
HOSTILE_TEXTS = [
    ("dollar_paren", "$(touch {m})"),
    ("backquote", "`touch {m}`"),
    ("double_quote_break", '"; touch {m}; "'),
    ("single_quote_break", "'; touch {m}; '"),
    ("newline", "x\ntouch {m}\n"),
    ("brace_and_dollar", "${{IFS}}$((1))$(touch {m})"),
    ("process_substitution", "<(touch {m})"),
    ("backslash_end", '\\"; touch {m}; echo \\'),
    ("history", "!touch {m}"),
    ("vim_modeline", "x vim: set textwidth=33 : y"),
    ("unicode", "café ‮$(touch {m})"),
]


@pytest.fixture
def ip(sql_duckdb, tmp_path, monkeypatch):
    shell = sql_duckdb("kept", ORDERS)
    magics = shell.magics_manager.registry["AskMagic"]
    saved = (magics.examples_path, magics.live, magics.share, magics.last)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    magics.examples_path = ".cadet/examples.jsonl"
    yield shell
    magics.examples_path, magics.live, magics.share, magics.last = saved


def ask(ip, sql, question="Orders per status?"):
    """Asks with a scripted model (labelled: scripted) answering ``sql``."""
    model = CountingModel(fake_model(sql_reply(sql)))
    ip.user_ns["model"] = model
    ip.run_cell_magic("ask", "--model model", question)
    return ip.user_ns["_ask"], model


def shells() -> list[list[str]]:
    """Each real shell here, as the command that makes it read ``rc`` (``{rc}``)."""
    found = [["bash", "--norc", "-c", ". ./{rc}"], ["bash", "--rcfile", "{rc}", "-i"]]
    found += [[s, "-c", ". ./{rc}"] for s in ("dash", "sh", "zsh", "ksh", "mksh")]
    found += [["sh", "{rc}"], ["bash", "{rc}"]]
    return [c for c in found if shutil.which(c[0])]


@pytest.mark.parametrize("case,text", HOSTILE_TEXTS, ids=[c[0] for c in HOSTILE_TEXTS])
def test_a_kept_line_is_inert_to_real_shells_and_vim(tmp_path, case, text):
    marker = tmp_path / f"ran-{case}"
    hostile = text.format(m=marker)
    pair = {"format": FORMAT, "question": f"Why {hostile}?", "sql": f"SELECT '{hostile}' AS a"}
    kept = line(pair)
    assert "\n" not in kept and json.loads(kept) == pair and kept.isascii()
    rc = tmp_path / "examples.jsonl"
    rc.write_text(kept + "\n" + kept + "\n")
    for command in shells():
        argv = [a.format(rc=rc.name) for a in command]
        subprocess.run(
            argv, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=60
        )
        assert not marker.exists(), f"{argv} ran the kept line"
        assert not (tmp_path / marker.name).exists()
    if shutil.which("vim"):  # modelines on, as a user may have them: none is found
        out = tmp_path / "tw.txt"
        subprocess.run(
            ["vim", "-es", "-N", "-u", "NONE", "-i", "NONE", "--cmd", "set modeline modelines=5"]
            + [str(rc), "-c", f"redir! > {out} | silent echo &tw | redir END", "-c", "qa!"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
        )
        assert out.read_text().strip() == "0"


def test_the_shells_and_vim_would_run_a_plain_line(tmp_path):
    """The control: the same texts written as plain JSON (what keeping wrote before) do run."""
    marker = tmp_path / "ran"
    rc = tmp_path / "examples.jsonl"
    rc.write_text(json.dumps({"question": "q", "sql": f"SELECT '$(touch {marker})'"}) + "\n")
    subprocess.run(["bash", "--norc", "-c", f". {rc}"], capture_output=True, timeout=60)
    assert marker.exists()


def test_keep_through_a_link_in_a_shipped_folder_is_refused(ip, tmp_path):
    """A cloned repository ships .cadet/examples.jsonl -> ../.bashrc and a steered model's
    checked SQL holds $(...) in a literal: keeping refuses the link in one line, writes nothing."""
    bashrc = tmp_path / ".bashrc"
    bashrc.write_text("# the user's shell start-up\n")
    (tmp_path / ".cadet").mkdir()
    (tmp_path / ".cadet" / "examples.jsonl").symlink_to("../.bashrc")
    r, _ = ask(ip, f"SELECT status, '$(touch {tmp_path}/pwned)' AS note FROM orders")
    assert r.ok
    line_ = usage_error(ip, "cadet", "keep")
    assert "symbolic link" in line_ and "\n" not in line_
    assert bashrc.read_text() == "# the user's shell start-up\n"
    # the folder itself a link: refused too
    (tmp_path / ".cadet" / "examples.jsonl").unlink()
    (tmp_path / ".cadet").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / ".cadet").symlink_to("elsewhere")
    assert "symbolic link" in usage_error(ip, "cadet", "keep")
    assert not list((tmp_path / "elsewhere").iterdir())


def test_kept_for_the_user_only_inert_and_used(ip, tmp_path):
    sql = f"SELECT status, count(*) AS n, '$(touch {tmp_path}/pwned)' AS x FROM orders GROUP BY 1"
    ask(ip, sql)
    ip.run_line_magic("cadet", "keep")
    path = tmp_path / ".cadet" / "examples.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    key = tmp_path / "config" / "cadet_magic" / "kept.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    subprocess.run(["bash", "--norc", "-c", f". {path}"], capture_output=True, timeout=60)
    assert not (tmp_path / "pwned").exists()
    _, model = ask(ip, "SELECT 1 AS n", question="Orders per status in 2025?")
    assert "<examples>" in model.prompts[0][-1][1] and "$(touch" in model.prompts[0][-1][1]


def plant_shipped(ip, tmp_path, signed_by: bytes | None) -> Path:
    """A shipped examples file whose pair matches the database's fingerprint (computable from
    the table names alone), unsigned or signed with another key."""
    first, _ = ask(ip, "SELECT status, count(*) AS n FROM orders GROUP BY status")
    path = tmp_path / ".cadet" / "examples.jsonl"
    path.parent.mkdir(exist_ok=True)
    pair = {
        "question": "Orders per status, the approved way?",
        "sql": "SELECT status, 'SHIPPED-INSTRUCTION' AS n FROM orders",
        "database": first.provenance["database"]["fingerprint"],
    }
    if signed_by is not None:
        pair["signature"] = signature(signed_by, path, pair)
    path.write_text(json.dumps(pair) + "\n")
    return path


@pytest.mark.parametrize("share", ["schema", "samples"])
@pytest.mark.parametrize("signed_by", [None, b"another user's key"], ids=["unsigned", "other"])
def test_shipped_examples_never_enter_a_prompt(ip, tmp_path, share, signed_by):
    plant_shipped(ip, tmp_path, signed_by)
    ip.magics_manager.registry["AskMagic"].share = share
    r, model = ask(ip, "SELECT 1 AS n", question="Orders per status?")
    assert all("SHIPPED-INSTRUCTION" not in m[1] for call in model.prompts for m in call)
    assert r.provenance["examples"]["used"] == []
    assert "not kept by you in this folder" in r.provenance["examples"]["dropped"][-1]
    listing = repr(ip.run_line_magic("cadet", "examples"))
    assert "0 kept answer(s)" in listing and "never used" in listing


def test_a_pair_copied_into_another_folder_is_not_used_there(ip, tmp_path, monkeypatch):
    ask(ip, "SELECT status, count(*) AS n FROM orders GROUP BY status")
    ip.run_line_magic("cadet", "keep")
    mine = tmp_path / ".cadet" / "examples.jsonl"
    assert len(read_examples(mine, key=user_key()).pairs) == 1
    other = tmp_path / "other" / ".cadet" / "examples.jsonl"
    other.parent.mkdir(parents=True)
    other.write_bytes(mine.read_bytes())
    found = read_examples(other, key=user_key())
    assert found.pairs == [] and len(found.not_kept_here) == 1


@pytest.mark.parametrize("kind", ["fifo", "dev_zero_link", "folder", "too_large"])
def test_nothing_in_the_folder_blocks_a_question(ip, tmp_path, monkeypatch, kind):
    from cadet_magic import kept_answers as kept

    path = tmp_path / ".cadet" / "examples.jsonl"
    path.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero_link":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        monkeypatch.setattr(kept, "FILE_BYTES", 64)
        path.write_text("x" * 65)
    done: list = []
    asking = threading.Thread(target=lambda: done.append(ask(ip, "SELECT 1 AS n")), daemon=True)
    asking.start()
    asking.join(120)  # an open of a FIFO or a read of /dev/zero would never return
    assert not asking.is_alive()
    r, model = done[0]
    assert r.ok and "<examples>" not in model.prompts[0][-1][1]
    assert "kept answers not read" in r.provenance["examples"]["dropped"][0]
    assert "\n" not in usage_error(ip, "cadet", "keep")


def test_a_key_others_can_read_is_no_secret(ip, tmp_path):
    ask(ip, "SELECT status FROM orders")
    ip.run_line_magic("cadet", "keep")
    key = tmp_path / "config" / "cadet_magic" / "kept.key"
    key.chmod(0o644)  # as a key shipped in a folder, or copied, arrives
    said = usage_error(ip, "cadet", "keep")
    assert "can be read by others" in said and "\n" not in said
    r, model = ask(ip, "SELECT 1 AS n", question="Orders per status?")
    assert r.ok and "<examples>" not in model.prompts[0][-1][1]
