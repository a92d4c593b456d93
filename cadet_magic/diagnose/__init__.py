"""Error diagnosis: any failure of an attempt -> category, suggestions and feedback (portable).

:func:`diagnose` is the one entry: an engine's error (the
:class:`~cadet_magic.errors.EngineError` its engine's reader read at the edge, in
:mod:`cadet_magic.db`: its kind, the name or value it is about, the names the engine
proposes), a safety refusal, a reply without SQL, or one of the fallback's failures becomes a
:class:`Diagnosis` (:mod:`.failures`). Engine errors go through :mod:`.router` (the category
from the error's kind), :mod:`.suggest` (names from the engine and the schema) and
:mod:`.feedback` (templates per category; the fallback's own in :mod:`.code_feedback`); what
the failed query itself shows is read by :mod:`.refine` with :mod:`.joins` (a table it does
not join, and the join path), :mod:`.aggregates` (which aggregation mistake) and
:mod:`.malformed` (cut off, repeated words, placeholders, syntax the engine lacks);
:mod:`.naming` picks the names to suggest. The check after a successful run is
:mod:`cadet_magic.result_check`.

Example:
    >>> from cadet_magic.diagnose import diagnose
    >>> from cadet_magic.errors import EngineError, ErrorKind
    >>> diagnose(EngineError("division by zero", kind=ErrorKind.division_by_zero)).category.value
    'division_by_zero'
"""

from cadet_magic.diagnose.failures import combine, diagnose
from cadet_magic.diagnose.feedback import no_sql_feedback
from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis

__all__ = ["NOT_RETRYABLE", "Category", "Diagnosis", "combine", "diagnose", "no_sql_feedback"]
