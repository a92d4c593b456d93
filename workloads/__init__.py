"""What the test suite and the benchmarks share, independent of cadet_magic.

``gold`` reads the SQL workloads (refusal/acceptance corpus, Spider, BIRD, TPC-H, TPC-DS) as
datasets; ``postgres`` starts a throwaway PostgreSQL cluster. Neither imports cadet_magic, and
tests never import ``benchmarks`` (only ``tests/benchmarks`` checks the benchmark programs).
"""
