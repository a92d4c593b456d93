"""Where a benchmark's figures land: its detail page and its rows under docs/benchmarks/, the one
table of BENCHMARKS.md generated from every benchmark's rows (the committed page is what the
generator writes), comparisons of a change in the history page, and data named without a path
of the machine that ran them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks import compare, eval_change, report
from benchmarks.report import Row, Stamp

SECTION = re.compile(r"^<!-- ([\w.-]+):start -->", re.M)
QUIET = Stamp("2026-11-29", "a7be178", "0.6")


def _row(figure: str, met: bool = True, stamp: Stamp = QUIET) -> Row:
    return Row(figure, "1.0x", "≤ 1.2x", met, "python -m benchmarks.x", stamp)


def test_a_benchmark_writes_its_page_its_rows_and_the_front_page(tmp_path, capsys):
    pages, front = tmp_path / "docs" / "benchmarks", tmp_path / "BENCHMARKS.md"
    report.write_page("perf", "Perf", "the detail", [_row("fetch")], pages_dir=pages, front=front)
    page = (pages / "perf.md").read_text()
    assert page.startswith("# Perf\n") and "the detail" in page and "_Measured " in page
    assert "| [fetch](#figures) | 1.0x | ≤ 1.2x | yes |" in page
    rows = json.loads((pages / "perf.json").read_text())
    assert rows["title"] == "Perf" and rows["rows"][0]["stamp"]["commit"] == "a7be178"
    text = front.read_text()
    assert "| [fetch](docs/benchmarks/perf.md) | 1.0x | ≤ 1.2x | yes |" in text
    assert "`python -m benchmarks.x` | 2026-11-29, a7be178, load 0.6 |" in text
    # a second benchmark adds its rows; a run of the first replaces its own only
    report.write_page("lite", "Lite", "", [_row("boot", False)], pages_dir=pages, front=front)
    report.write_page("perf", "Perf", "", [_row("fetch again")], pages_dir=pages, front=front)
    text = front.read_text()
    assert "fetch again" in text and "[fetch]" not in text
    assert text.index("fetch again") < text.index("[boot]")  # benchmarks in report.ORDER
    assert "| [boot](docs/benchmarks/lite.md) | 1.0x | ≤ 1.2x | **no** |" in text
    assert "1 of 2 budgets met." in text


def test_a_figure_without_a_budget_is_reported_on_its_page_not_in_the_table(tmp_path, capsys):
    pages, front = tmp_path / "pages", tmp_path / "BENCHMARKS.md"
    report.write_page("local_model", "Local model", "speeds", [], pages_dir=pages, front=front)
    text = front.read_text()
    assert (
        "Reported without a budget (their pages): [Local model](docs/benchmarks/local_model.md)"
        in text
    )
    assert "Reported, without a budget" in (pages / "local_model.md").read_text()


def test_a_figure_taken_under_load_is_marked():
    loaded = _row("fetch", stamp=Stamp("2026-11-24", "07373b2", "12-14"))
    assert loaded.cells("mariadb")[-1] == "2026-11-24, 07373b2, load 12-14 (**under load**)"
    assert "under load" not in _row("fetch").cells("perf")[-1]


def test_the_committed_front_page_is_what_the_rows_give():
    """BENCHMARKS.md is generated: `python -m benchmarks.report` writes it from the rows, one
    table of at most 150 lines, every row with a budget, a command and when it was measured."""
    assert report.BENCHMARKS_MD.read_text(encoding="utf-8") == report.front_page()
    assert report.main(["--check"]) == 0
    text = report.BENCHMARKS_MD.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= report.MAX_LINES
    assert text.count("| figure | now | budget | met | command |") == 1  # one table
    for name, (_title, rows) in report.read_rows().items():
        assert (report.PAGES_DIR / f"{name}.md").is_file(), name
        for r in rows:
            assert r.budget and r.command.startswith("python -m benchmarks"), (name, r)
            assert re.fullmatch(r"\d{4}-\d\d-\d\d", r.stamp.date) and r.stamp.commit, (name, r)
    pages = {p.stem for p in report.PAGES_DIR.glob("*.md")}
    assert pages == set(report.read_rows())  # every detail page has its rows file
    assert set(report.read_rows()) <= set(report.ORDER)


def test_the_spider_rows_are_the_reference_runs():
    """The Spider rows come from the reference run of the shipped defaults, with the peers."""
    run = json.loads((report.ROOT / "benchmarks" / "eval" / "reference" / "run.json").read_text())
    benchmarks = report.read_rows()
    for name in ("eval", "peers"):
        _, rows = benchmarks[name]
        assert rows and all(r.stamp == Stamp.of_run(run) for r in rows), name
    assert any("one-shot" in r.figure for r in benchmarks["peers"][1])


def test_a_comparison_of_a_change_is_history(tmp_path, capsys):
    history = tmp_path / "docs" / "history.md"
    history.parent.mkdir()
    history.write_text(
        "# History\n\n<!-- compare-a-b:start -->\n## old\n<!-- compare-a-b:end -->\n"
    )
    assert report.write_history("compare-a-b", "Cmp", "new cmp", page=history) == history
    assert "new cmp" in history.read_text() and "## old" not in history.read_text()
    report.write_history("compare-c-d", "Cmp", "change", page=history)
    report.write_history("compare-c-d", "Cmp", "again", page=history)
    text = history.read_text()
    assert text.count("<!-- compare-c-d:start -->") == 1 and "again" in text
    assert text.rstrip().endswith("<!-- compare-c-d:end -->")


def test_each_comparison_gets_a_history_section_of_its_own():
    assert compare.section_name("6660040", "cc87caf") == "compare-6660040-cc87caf"
    assert compare.section_name("HEAD~3", None) == "compare-HEAD3-tree"
    before, after = Path("benchmarks/eval/reference"), Path(".cache/eval/change")
    assert eval_change.section_name(before, after) == "eval_change-reference-change"


def test_the_history_holds_each_section_once():
    names = SECTION.findall(report.HISTORY_MD.read_text())
    assert len(names) == len(set(names))
    assert not SECTION.findall(report.BENCHMARKS_MD.read_text())  # generated, no sections


def test_reports_name_data_relative_to_cadet_data_or_the_repository(monkeypatch, tmp_path):
    data = tmp_path / "sets"
    monkeypatch.setenv("CADET_DATA", str(data))
    assert report.shown(data / "spider-dev" / "dev.json") == "$CADET_DATA/spider-dev/dev.json"
    assert report.shown(report.ROOT / "benchmarks" / "eval") == "benchmarks/eval"
    monkeypatch.delenv("CADET_DATA")
    assert report.shown(tmp_path / "spider-dev" / "dev.json") == "spider-dev/dev.json"


def test_the_doctests_of_the_benchmarks_pass():
    """The benchmarks' docstring examples (the suite's doctest run covers the package only)."""
    import doctest
    import importlib

    failed = []
    for path in sorted((report.ROOT / "benchmarks").glob("*.py")):
        if path.stem in ("__main__", "lite_probe"):  # a program; a cell's source
            continue
        module = importlib.import_module(f"benchmarks.{path.stem}")
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        if result.failed:
            failed.append(path.stem)
    assert failed == []
