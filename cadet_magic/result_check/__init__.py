"""The result check (portable core): after a query ran, do the values it filters on occur?

- :mod:`.probe_database`: :func:`~.probe_database.check_result`, asking the database within its
  budget;
- :mod:`.values`: the text filters, read on the checked tree (each column resolved to its base
  table); :mod:`.number_filters`: comparisons with numbers;
- :mod:`.probe_sql`: the small read-only queries it sends;
- :mod:`.close_values`: the stored values close to a missing one;
- :mod:`.findings`: what it found (:class:`~.findings.ValueCheck`) and its wording.

The SQL phase runs it as its ``check_result`` step; a suspect result is diagnosed
``value_not_found`` by :mod:`cadet_magic.diagnose`.
"""
