"""The Spider dev questions the real-model benchmarks ask, and where the reference run lives.

- the **fixed sample** (:func:`questions`): :data:`N_QUESTIONS` questions drawn with
  :data:`SEED` over every database that has a file, grouped by database: every accuracy figure
  of the product and its peers is reported on it, and nothing is tuned on it;
- the **tuning set** (``questions(question_set="tuning")``): :data:`TUNING_N` other Spider
  dev questions over the same databases, drawn with :data:`TUNING_SEED`: where a change to the
  agent is tried and chosen before the fixed sample measures it once.

The **reference run** (:data:`REFERENCE`) is ``python -m benchmarks.eval``'s run of the shipped
defaults on the fixed sample: ``spider.MODE.jsonl`` per feedback mode and ``run.json`` (its
options, commit, model and data). A new run replaces it; no other result set is kept beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Questions in the fixed sample, and the seed they are drawn with.
N_QUESTIONS = 300
SEED = 0
#: Spider questions in the tuning set, and the seed they are drawn with.
TUNING_N = 200
TUNING_SEED = 1
#: The reference run of the shipped defaults.
REFERENCE = Path(__file__).resolve().parent / "eval" / "reference"
#: The feedback modes the evaluation runs, in order (targeted is the product's default).
MODES = ("targeted", "raw", "none")


def spider_dir() -> Path:
    """Spider dev, in the public data sets' folder (``$CADET_DATA``: see workloads.gold)."""
    from workloads.gold import DATA

    return DATA / "spider-dev"


def questions(
    n: int = N_QUESTIONS, seed: int = SEED, limit: int | None = None, question_set: str = "fixed"
) -> tuple[Any, list]:
    """The data set and its fixed sample (databases without a file are left out); ``limit``:
    only the sample's first questions, in its running order (a stable prefix: the same
    questions before and after a change). ``question_set`` ``"tuning"``: the tuning set
    instead."""
    from cadet_magic.eval import load, sample

    dataset = load(spider_dir())
    have = dataset.available()
    fixed = sample([q for q in dataset.questions if q.db_id in have], n, seed)
    if question_set == "tuning":
        taken = {q.key for q in fixed}
        dbs = {q.db_id for q in fixed}
        rest = [q for q in dataset.questions if q.db_id in dbs and q.key not in taken]
        chosen = sample(rest, TUNING_N, TUNING_SEED)
    elif question_set == "fixed":
        chosen = fixed
    else:
        raise ValueError(f"unknown question set {question_set!r} (fixed or tuning)")
    return dataset, chosen[:limit] if limit is not None else chosen
