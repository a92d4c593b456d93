"""The hostile corpus (escapes.json) and the canaries every test of the isolation checks."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

CORPUS = json.loads((Path(__file__).parent / "escapes.json").read_text())["programs"]

#: Value of the canary variable in the kernel's environment.
ENV_NAME = "CADET_CANARY_SECRET"
ENV_SECRET = "canary-env-5b1e9c"
#: The canary notebook variable and the DataFrame column the hostile code looks for.
VAR_SECRET = "canary-var-84d2a7"
DF_SECRET = "canary-df-3f0c61"

#: Generous slack on the time limit: the child is killed at the limit, the rest is the
#: shared machine's scheduling, process start-up (first run) and the agent's other steps.
TIME_SLACK = 15.0
#: Generous slack on the kernel's memory growth over one hostile run (bytes).
RSS_SLACK = 300 << 20


@dataclass(frozen=True)
class Hostile:
    name: str
    code: str
    check: bool
    expect: tuple[str, ...]


def programs(marker: Path, only_checked: bool = False) -> list[Hostile]:
    """The corpus with its placeholders filled in."""
    out = []
    for p in CORPUS:
        if only_checked and not p["check"]:
            continue
        code = (
            p["code"]
            .replace("{marker}", str(marker))
            .replace("{env}", ENV_NAME)
            .replace("{pid}", str(os.getpid()))
        )
        out.append(Hostile(p["name"], code, p["check"], tuple(p["expect"])))
    return out


def names(only_checked: bool = False) -> list[str]:
    return [p["name"] for p in CORPUS if p["check"] or not only_checked]


def rss() -> int:
    """This process's resident memory (bytes), from /proc (0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def secrets() -> tuple[str, ...]:
    return (ENV_SECRET, VAR_SECRET, DF_SECRET)


def leaked(text: object) -> list[str]:
    """The canaries found in ``text`` (the answer, a prompt, an error)."""
    return [s for s in secrets() if s in str(text)]
