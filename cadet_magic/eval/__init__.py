"""The evaluation harness: questions with gold SQL answered through :func:`cadet_magic.ask`
as a user's would be, measured by execution match.

``python -m cadet_magic.eval --data DIR --model SPEC`` or :func:`evaluate`; see
docs/evaluation.md. Modules: :mod:`~cadet_magic.eval.data` (the layouts and
the sample), :mod:`~cadet_magic.vote.execution_match` (the execution-match rule),
:mod:`~cadet_magic.eval.evaluation` (the loop and its results files),
:mod:`~cadet_magic.eval.usage` (calls and tokens), :mod:`~cadet_magic.eval.significance` and
:mod:`~cadet_magic.eval.report` (the figures, the Markdown and the chart).
"""

from cadet_magic.eval.data import Dataset, Question, load, sample
from cadet_magic.eval.evaluation import KEYS, MODES, Evaluation, evaluate
from cadet_magic.vote.execution_match import execution_match, has_outer_order

__all__ = [
    "KEYS",
    "MODES",
    "Dataset",
    "Evaluation",
    "Question",
    "evaluate",
    "execution_match",
    "has_outer_order",
    "load",
    "sample",
]
