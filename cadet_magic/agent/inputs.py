"""What a run is given besides the question, the model and the connection, as one frozen record
(standard library only): the model's label, the prompt's context (a follow-up, kept examples),
the number the session gives the answer and, for a rerun, the answer recorded earlier.

The edges (``ask()``, the magic, the LangGraph node) make it before the run; the run builds its
:class:`~cadet_magic.result.AskResult` from it once, provenance included, so nothing is patched
into a result afterwards.

Example:
    >>> inputs = RunInputs(model_label="scripted", scripted=True)
    >>> inputs.rerun is None, inputs.context_record()
    (True, {'model_spec': None, 'followed': None})
    >>> again = RunInputs(rerun=Recorded("SELECT 1", provenance={"model": "m", "x": 1}))
    >>> again.context_record()
    {'rerun_of': {'created': None, 'model': 'm', 'source': None, 'database': None}}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cadet_magic.conversation import FollowUp

#: The keys of a recorded answer's provenance a rerun's own provenance repeats (``rerun_of``).
RERUN_OF_KEYS = ("created", "model", "source", "database")


@dataclass(frozen=True)
class Recorded:
    """An answer recorded earlier, run again without a model: its SQL (a fallback answer's
    SELECT), its pandas code (a fallback answer's; None for an SQL answer) and the provenance
    it was recorded with (its database's schema fingerprint tells whether the schema changed)."""

    sql: str
    code: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def schema_fingerprint(self) -> str | None:
        """The fingerprint of the schema the answer was recorded on (None: unknown)."""
        database = self.provenance.get("database") or {}
        return database.get("schema_fingerprint")


@dataclass(frozen=True)
class RunInputs:
    """The run's inputs besides the question, the model and the connection.

    Attributes:
        model_label: what the result calls the model (``AskResult.model``).
        scripted: whether the model is a scripted stand-in (``AskResult.scripted``).
        preamble: what follows the question in the prompts (a follow-up's previous answer,
            kept examples; see :mod:`cadet_magic.conversation`).
        model_spec: the model as the user named it (a spec string; None for a model object).
        followed: the earlier answer this question builds on (None: none).
        examples: the provenance record of the kept examples the prompt carries (None: none
            were looked up).
        number: the number the session gives the answer when it has SQL to follow (None: the
            caller does not number answers).
        rerun: the recorded answer a rerun runs again (None: the model is asked).
    """

    model_label: str = ""
    scripted: bool = False
    preamble: str = ""
    model_spec: str | None = None
    followed: FollowUp | None = None
    examples: Mapping[str, Any] | None = None
    number: int | None = None
    rerun: Recorded | None = None

    def context_record(self) -> dict[str, Any]:
        """The provenance's keys for what the run was given: the model spec, what was followed
        and the examples used; a rerun's: which recorded answer it ran again."""
        if self.rerun is not None:
            recorded = self.rerun.provenance
            return {"rerun_of": {k: recorded.get(k) for k in RERUN_OF_KEYS}}
        extra: dict[str, Any] = {
            "model_spec": self.model_spec,
            "followed": None if self.followed is None else self.followed.as_dict(),
        }
        if self.examples is not None:
            extra["examples"] = dict(self.examples)
        return extra
