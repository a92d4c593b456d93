"""Error diagnosis: any failure of an attempt -> category, suggestions and feedback (portable).

:func:`diagnose` is the one entry: an engine's error (the
:class:`~cadet_magic.errors.EngineError` its engine's reader read at the edge, in
:mod:`cadet_magic.db`: its kind, the name or value it is about, the names the engine
proposes), a safety refusal, a reply without SQL, or one of the fallback's failures becomes a
:class:`Diagnosis` (:mod:`.failures`). Engine errors go through :mod:`.router` (category from
the error's kind) and the refiners of its ``RULES`` tuple, in order: what the failed query
itself shows (:mod:`.refine`, with :mod:`.joins`: a table it does not join, and the join
path; :mod:`.aggregates`: which aggregation mistake; :mod:`.malformed`: cut off, repeated
words, placeholders, syntax the engine lacks, nested too deeply), then the names to suggest
(:mod:`.naming`, ranked by :mod:`.suggest`). What was found travels as its category's typed
record (:mod:`.found`), which the feedback templates take (:mod:`.feedback`; the fallback's own
in :mod:`.code_feedback`). The diagnosis reads the failed query's checked tree when it is
handed the :class:`~cadet_magic.sql.query.CheckedQuery` (:class:`.sqlcontext.Where`). Below
the ``samples`` sharing level the feedback is built from what the model may see of the
failure (:mod:`.shared`). The check after a successful run is its own package,
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
