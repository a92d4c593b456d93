"""Error diagnosis: engine error -> category, suggestions and feedback (portable).

Modules: :mod:`.error_info` (read any wrapped engine error), :mod:`.classify` (category, in
priority order), :mod:`.suggest` (names from the engine and the schema), :mod:`.feedback`
(templates per category) and :mod:`.router` (``diagnose_error``, which ties them together);
what the failed query itself shows is read by :mod:`.joins` (a table it does not join, and the
join path), :mod:`.aggregates` (which aggregation mistake) and :mod:`.malformed` (cut off,
repeated words, placeholders, syntax the engine lacks, nested too deeply).

Example:
    >>> from cadet_magic.diagnose import diagnose_error
    >>> diagnose_error("division by zero").category.value
    'division_by_zero'
"""

from cadet_magic.diagnose.feedback import no_sql_feedback
from cadet_magic.diagnose.model import NOT_RETRYABLE, Category, Diagnosis
from cadet_magic.diagnose.router import diagnose_error

__all__ = ["NOT_RETRYABLE", "Category", "Diagnosis", "diagnose_error", "no_sql_feedback"]
