"""The unit tier's members (marker ``unit``, ``bash scripts/test.sh --fast``): test files and
folders below tests/ whose tests start no server, no subprocess, no browser and no model (their
tripwires are tests/conftest.py's). Chosen by measuring: every test of the file passes with
``--tripwires``, none needs a server (not even one parameter), and its time is small
(``--durations``). Kept free of side effects: scripts/test.sh reads it."""

from __future__ import annotations

UNIT = (
    "vote",
    "result_check",
    *(f"schema/test_{n}.py" for n in ("exact_names", "rank", "representation", "schema_link",
                                       "schema_portable", "schema_render", "schema_samples")),
    *(f"sql/test_{n}.py" for n in ("checks", "dialect", "functions", "like", "limit", "pretty",
                                    "quotes", "validate")),
    *(f"diagnose/test_{n}.py" for n in ("alias_feedback", "duckdb15", "failures", "found",
                                         "router")),
    "display/test_certainty.py",
    *(f"agent/test_{n}.py" for n in ("fallback_prompts", "phases", "record", "reply", "routes")),
    *(f"test_{n}.py" for n in ("architecture", "docs", "layout", "llm_batched", "module_names",
                               "no_pandas", "options", "provenance", "shared_files", "text", "tiers")),
)  # fmt: skip


def unit_paths() -> list[str]:
    """The unit tier's files and folders, as pytest arguments from the repository's root."""
    return [f"tests/{u}" for u in UNIT]
