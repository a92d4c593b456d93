"""Error diagnosis: engine error -> category, suggestions and feedback (portable)."""

from cadet_magic.diagnose.classify import Category, Diagnosis, diagnose_error

__all__ = ["Category", "Diagnosis", "diagnose_error"]
