"""Where a benchmark's section lands: each section lives in one page (the current figures in
BENCHMARKS.md, the history of changes in docs/benchmarks-history.md), is rewritten in place
there, and names its data without a path of the machine that ran it."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks import compare, eval_change, report

SECTION = re.compile(r"^<!-- ([\w.-]+):start -->", re.M)


def _pages(tmp_path: Path) -> tuple[Path, Path]:
    current, history = tmp_path / "BENCHMARKS.md", tmp_path / "docs" / "history.md"
    history.parent.mkdir()
    current.write_text("# Benchmarks\n\n<!-- perf:start -->\n## old\n<!-- perf:end -->\n")
    history.write_text(
        "# History\n\n<!-- compare-a-b:start -->\n## old\n<!-- compare-a-b:end -->\n"
    )
    return current, history


def test_a_section_is_rewritten_in_the_page_that_holds_it(tmp_path, capsys):
    current, history = _pages(tmp_path)
    pages = (current, history)
    assert report.write_section("perf", "Perf", "new perf", pages=pages) == current
    assert report.write_section("compare-a-b", "Cmp", "new cmp", pages=pages) == history
    assert "new perf" in current.read_text() and "## old" not in current.read_text()
    assert "new cmp" in history.read_text() and "## old" not in history.read_text()
    assert "new cmp" not in current.read_text() and "new perf" not in history.read_text()


def test_a_new_section_goes_to_the_current_figures_unless_its_writer_names_the_history(
    tmp_path, capsys
):
    current, history = _pages(tmp_path)
    pages = (current, history)
    assert report.write_section("lite", "Lite", "figures", pages=pages) == current
    assert (
        report.write_section("compare-c-d", "Cmp", "change", page=history, pages=pages) == history
    )
    assert current.read_text().rstrip().endswith("<!-- lite:end -->")
    assert history.read_text().rstrip().endswith("<!-- compare-c-d:end -->")
    # the section a history writer named before stays where it is when written again
    report.write_section("compare-c-d", "Cmp", "again", page=history, pages=pages)
    assert history.read_text().count("<!-- compare-c-d:start -->") == 1


def test_each_comparison_gets_a_history_section_of_its_own():
    assert compare.section_name("6660040", "cc87caf") == "compare-6660040-cc87caf"
    assert compare.section_name("HEAD~3", None) == "compare-HEAD3-tree"
    before, after = Path("benchmarks/eval/reference"), Path(".cache/eval/change")
    assert eval_change.section_name(before, after) == "eval_change-reference-change"


def test_the_committed_pages_hold_each_section_once():
    """No section is in both pages (a benchmark would rewrite one and leave the other stale),
    and every section of the current figures is listed in BENCHMARKS.md's table of commands
    and budgets."""
    found: dict[str, list[str]] = {}
    for page in report.PAGES:
        for name in SECTION.findall(page.read_text()):
            found.setdefault(name, []).append(page.name)
    assert {n: p for n, p in found.items() if len(p) > 1} == {}
    text = report.BENCHMARKS_MD.read_text()
    table = text.split("## Figures, commands and budgets", 1)[1].split("\n## ", 1)[0]
    titles = re.findall(r"<!-- [\w.-]+:start -->\n## (.+)", text)
    slugs = {re.sub(r"[^\w\- ]", "", t.strip().lower()).replace(" ", "-") for t in titles}
    listed = set(re.findall(r"\]\(#([^)]+)\)", table))
    assert slugs - listed == set()


def test_reports_name_data_relative_to_cadet_data_or_the_repository(monkeypatch, tmp_path):
    data = tmp_path / "sets"
    monkeypatch.setenv("CADET_DATA", str(data))
    assert report.shown(data / "spider-dev" / "dev.json") == "$CADET_DATA/spider-dev/dev.json"
    assert report.shown(report.ROOT / "benchmarks" / "eval") == "benchmarks/eval"
    monkeypatch.delenv("CADET_DATA")
    assert report.shown(tmp_path / "spider-dev" / "dev.json") == "spider-dev/dev.json"
