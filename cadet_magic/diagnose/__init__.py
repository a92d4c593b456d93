"""Error diagnosis: any failure of an attempt -> category, suggestions and feedback (portable).

:func:`diagnose` is the one entry: an engine's error (the
:class:`~cadet_magic.errors.EngineError` its runner read, any exception, or a message), a
safety refusal, a reply without SQL, or one of the fallback's failures becomes a
:class:`Diagnosis` (:mod:`.failures`). Engine errors go through :mod:`.error_info` (read the
error), :mod:`.rules` (category, in priority order), :mod:`.suggest` (names from the engine and
the schema) and :mod:`.feedback` (templates per category; the fallback's own in
:mod:`.code_feedback`), tied together by :mod:`.router`; what the failed query itself shows is
read by :mod:`.refine` with :mod:`.joins` (a table it does not join, and the join path),
:mod:`.aggregates` (which aggregation mistake) and :mod:`.malformed` (cut off, repeated words,
placeholders, syntax the engine lacks, nested too deeply); :mod:`.naming` picks the names to
suggest. After a run, :mod:`.result_check` (on :mod:`.values`) checks that the values the query
filters on occur.

Example:
    >>> from cadet_magic.diagnose import diagnose
    >>> diagnose("division by zero").category.value
    'division_by_zero'
"""

from cadet_magic.diagnose.failures import combine, diagnose
from cadet_magic.diagnose.feedback import no_sql_feedback
from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis

__all__ = ["NOT_RETRYABLE", "Category", "Diagnosis", "combine", "diagnose", "no_sql_feedback"]
