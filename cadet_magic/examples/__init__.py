"""Example data for notebooks, docs and benchmarks: not part of the extension's runtime.

Nothing under ``cadet_magic`` outside this package imports it; ``shop`` builds the sample shop
the tutorials ask about.
"""
