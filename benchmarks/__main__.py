"""``python -m benchmarks``: the performance benchmarks (see :mod:`benchmarks.perf`)."""

from benchmarks.perf import main

main()
