"""The harness's pieces, table-driven from ``data/``: execution match, the outer ORDER BY rule,
the data layouts (Spider, BIRD, DuckDB), the sample, the statistics and the report."""

from __future__ import annotations

import datetime
import decimal
import json
import xml.dom.minidom
from pathlib import Path

import pytest

from cadet_magic.errors import ConfigurationError
from cadet_magic.eval import execution_match, has_outer_order, load, sample
from cadet_magic.eval.data import Question
from cadet_magic.eval.evaluation import Evaluation, ModeRun
from cadet_magic.eval.report import RAN_WRONG, chart_svg, figures, summary_markdown
from cadet_magic.eval.significance import gain, mcnemar, percentile, wilson
from tests.eval.conftest import DATA, make_database

MATCH = json.loads((DATA / "match_cases.json").read_text())
LAYOUTS = json.loads((DATA / "layout_cases.json").read_text())["cases"]
STATS = json.loads((DATA / "stats_cases.json").read_text())
SHOP = [
    "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer TEXT, amount REAL)",
    "INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 32.5), (3, 'ann', 7.5)",
]


def value(v):
    """A value of match_cases.json: plain JSON, or a typed one."""
    if isinstance(v, dict):
        if "decimal" in v:
            return decimal.Decimal(v["decimal"])
        if "date" in v:
            return datetime.date.fromisoformat(v["date"])
        if "nan" in v:
            return float("nan")
    return v


def rows(data):
    return [tuple(value(v) for v in row) for row in data]


@pytest.mark.parametrize("case", MATCH["cases"], ids=[c["name"] for c in MATCH["cases"]])
def test_execution_match(case):
    got = execution_match(rows(case["gold"]), rows(case["answer"]), ordered=case["ordered"])
    assert got is case["match"]


@pytest.mark.parametrize("case", MATCH["order"], ids=[c["sql"] for c in MATCH["order"]])
def test_outer_order_by(case):
    assert has_outer_order(case["sql"]) is case["ordered"]


@pytest.mark.parametrize("case", LAYOUTS, ids=[c["name"] for c in LAYOUTS])
def test_layouts(tmp_path, case):
    (tmp_path / case["file"]).write_text(json.dumps([case["record"]]))
    folder = tmp_path / case["folder"]
    place = folder / "shop" if case["nested"] else folder
    make_database(place / f"shop{case['suffix']}", SHOP)
    dataset = load(tmp_path)
    (q,) = dataset.questions
    assert (q.db_id, q.question, q.gold) == ("shop", case["question"], case["gold"])
    path, engine = dataset.database("shop")
    assert engine == case["engine"] and path.suffix == case["suffix"]
    assert dataset.available() == {"shop"}


def test_question_file_given_directly(tmp_path):
    (tmp_path / "questions.json").write_text(
        json.dumps([{"db_id": "shop", "question": "q", "query": "SELECT 1"}])
    )
    make_database(tmp_path / "database" / "shop" / "shop.sqlite", SHOP)
    dataset = load(tmp_path / "questions.json")
    assert dataset.database("shop")[1] == "sqlite"


BAD_FILES = [
    ("missing folder", None, "Data folder not found"),
    ("no question file", "", "No question file"),
    ("not JSON", "{not json", "is not valid JSON"),
    ("not a list", '{"db_id": "shop"}', "does not hold a JSON list"),
]


@pytest.mark.parametrize("name, text, message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_data_is_one_clear_line(tmp_path, name, text, message):
    root = tmp_path / "data"
    if text is not None:
        root.mkdir()
        if text:
            (root / "dev.json").write_text(text)
    with pytest.raises(ConfigurationError) as e:
        load(root)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_bad_records_are_reported_and_the_others_kept(tmp_path):
    (tmp_path / "dev.json").write_text(
        json.dumps(
            [
                {"db_id": "shop", "question": "ok?", "query": "SELECT 1"},
                {"db_id": "shop", "question": "no gold"},
                "not an object",
                {"db_id": "", "question": "no db", "query": "SELECT 1"},
            ]
        )
    )
    dataset = load(tmp_path)
    assert [q.question for q in dataset.questions] == ["ok?"]
    assert [i for i, _ in dataset.bad] == [1, 2, 3]
    assert "query (Spider) or SQL (BIRD)" in dataset.bad[0][1]


def test_unknown_db_id_is_one_line(tmp_path):
    (tmp_path / "dev.json").write_text("[]")
    with pytest.raises(LookupError) as e:
        load(tmp_path).database("farm")
    assert "no database for db_id 'farm'" in str(e.value) and "\n" not in str(e.value)


def test_sample_is_fixed_covers_every_database_and_groups_by_database():
    qs = [Question(i, f"db{i % 7}", f"q{i}", "SELECT 1") for i in range(200)]
    a = sample(qs, 30, seed=3)
    assert a == sample(qs, 30, seed=3) and a != sample(qs, 30, seed=4)
    assert len(a) == 30 and len({q.index for q in a}) == 30
    assert {q.db_id for q in a} == {f"db{i}" for i in range(7)}
    order = [q.db_id for q in a]
    assert order == sorted(order, key=order.index)  # one database's questions in a row
    assert sample(qs, None) == sample(qs, 1000) and len(sample(qs, None)) == 200


def test_sample_smaller_than_the_databases():
    qs = [Question(i, f"db{i % 7}", f"q{i}", "SELECT 1") for i in range(20)]
    assert len({q.db_id for q in sample(qs, 3, seed=0)}) == 3


@pytest.mark.parametrize("case", STATS["mcnemar"], ids=lambda c: f"{c['gained']}-{c['lost']}")
def test_mcnemar(case):
    assert mcnemar(case["gained"], case["lost"]) == pytest.approx(case["p"])


@pytest.mark.parametrize("case", STATS["wilson"], ids=lambda c: f"{c['k']}/{c['n']}")
def test_wilson(case):
    low, high = wilson(case["k"], case["n"])
    assert (round(low, 4), round(high, 4)) == (case["low"], case["high"])


@pytest.mark.parametrize("case", STATS["percentile"], ids=lambda c: f"{c['values']}@{c['q']}")
def test_percentile(case):
    assert percentile(case["values"], case["q"]) == case["expected"]


@pytest.mark.parametrize("case", STATS["gain"], ids=lambda c: str(c["diff"]))
def test_paired_gain(case):
    before, after = [bool(x) for x in case["before"]], [bool(x) for x in case["after"]]
    g = gain(before, after, reps=2000, seed=1)
    assert (g.diff, g.gained, g.lost) == (case["diff"], case["gained"], case["lost"])
    assert g.low <= g.diff <= g.high
    if g.gained == g.lost == 0:
        assert g.low == g.high == 0.0
    assert gain(before, after, reps=2000, seed=1) == g  # seeded: the same interval


def test_gain_needs_the_same_questions():
    with pytest.raises(ValueError):
        gain([True], [True, False])


def records():
    lines = (DATA / "report_records.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_report_figures():
    want = json.loads((DATA / "report_expected.json").read_text())
    f = figures(records())
    assert f.n == want["n"] and dict(f.errors) == want["errors"]
    assert (f.first.k, f.corrected.k, f.final.k) == (
        want["first"],
        want["corrected"],
        want["final"],
    )
    assert {f.first.n, f.corrected.n, f.final.n} == {want["n"]}
    for name in ("correction_gain", "fallback_gain"):
        g = getattr(f, name)
        assert (g.gained, g.lost) == (want[name]["gained"], want[name]["lost"])
    for name in ("answered", "warned", "warned_wrong", "ran_wrong", "made_worse"):
        assert getattr(f, name) == want[name], name
    assert {k: {n: c for n, c in v.items() if c} for k, v in f.by_category.items()} == want[
        "by_category"
    ]
    assert list(f.cost["calls"]) == want["calls"]
    assert dict(f.wrong_stops) == want["wrong_stops"]


def test_report_markdown_and_chart(tmp_path):
    recs = records()
    evaluation = Evaluation(
        model="scripted:replies.json",
        temperature=0.0,
        data="dev.json",
        questions=7,
        seed=0,
        scripted=True,
        runs={"targeted": ModeRun("targeted", None, recs), "none": ModeRun("none", None, recs[:3])},
        notes=["Load average 1.0 (test)."],
    )
    svg = tmp_path / "chart.svg"
    text = summary_markdown(evaluation, chart=svg, relative_to=tmp_path / "report.md")
    assert "scripted stand-in, not a real model" in text and "temperature 0" in text
    assert "|  | targeted | none |" in text
    assert "execution accuracy, first attempt | 33.3% [" in text
    assert "gain of self-correction | +0.0 pts [" in text
    assert "targeted − none" in text  # the modes side by side, paired
    assert "Wrong answers by why the run stopped: success 2, max_attempts 1." in text
    assert RAN_WRONG in text and "Could not run (not counted): gold query failed: 1." in text
    assert "![execution accuracy per feedback mode](chart.svg)" in text
    assert "Load average 1.0 (test)." in text
    doc = xml.dom.minidom.parseString(chart_svg(evaluation))
    assert doc.documentElement.tagName == "svg"
    assert len(doc.getElementsByTagName("rect")) == 2 * 4 + 4  # bars (4 levels) and the legend


def test_empty_report():
    evaluation = Evaluation(
        model="m",
        temperature=None,
        data="d",
        questions=0,
        seed=None,
        scripted=False,
        runs={"targeted": ModeRun("targeted", None, [])},
    )
    text = summary_markdown(evaluation)
    assert "0 (0)" in text and "temperature n/a" in text
    xml.dom.minidom.parseString(chart_svg(evaluation))


def test_records_keys_are_the_contract():
    from cadet_magic.eval import KEYS

    issue = (
        "db_id question gold first_sql first_match final_sql final_match fallback attempts "
        "warnings calls input_tokens output_tokens seconds error"
    ).split()
    assert [k for k in KEYS if k in issue] == issue
    assert Path(DATA / "report_records.jsonl").is_file()


def test_losses_say_how_the_fallback_ended():
    from cadet_magic.eval.figures import figures
    from cadet_magic.eval.report import losses_markdown

    def rec(final: bool, *fallback: tuple[str, str | None]) -> dict:
        return {
            "first_match": False,
            "final_match": final,
            "fallback": bool(fallback),
            "final_sql": "S" if final else None,
            "warnings": [],
            "error": None,
            "attempts": [{"category": "column_not_found", "outcome": "error"}],
            "fallback_attempts": [{"outcome": o, "category": c} for o, c in fallback],
        }

    f = figures(
        [
            rec(False, ("refused", "not_simple"), ("refused", "not_simple")),
            rec(False, ("error", "column_not_found")),
            rec(True, ("error", "python_error"), ("ok", None)),
            rec(False),  # no fallback
        ]
    )
    assert dict(f.fallback_ends) == {
        "refused (not_simple)": 1,
        "error (column_not_found)": 1,
        "answered right": 1,
    }
    (line,) = [ln for ln in losses_markdown({"raw": f}) if ln.startswith("- ")]
    assert line.endswith(
        "The fallback, on the 3 questions whose line records its attempts, ended: "
        "refused (not_simple) 1, error (column_not_found) 1, answered right 1."
    )


def test_report_names_its_data_without_a_path_of_the_machine(monkeypatch, tmp_path):
    """A published summary names the data relative to CADET_DATA (or the folder it ran in, or
    the data folder's own name), never by where it sat on the machine that ran it."""
    data = tmp_path / "sets" / "spider-dev" / "dev.json"
    data.parent.mkdir(parents=True)
    evaluation = Evaluation(
        model="m",
        temperature=0.0,
        data=str(data),
        questions=0,
        seed=None,
        scripted=False,
        runs={"targeted": ModeRun("targeted", None, [])},
    )
    monkeypatch.setenv("CADET_DATA", str(tmp_path / "sets"))
    assert "data `$CADET_DATA/spider-dev/dev.json`" in summary_markdown(evaluation)
    monkeypatch.delenv("CADET_DATA")
    monkeypatch.chdir(tmp_path / "sets")
    assert "data `spider-dev/dev.json`" in summary_markdown(evaluation)
    monkeypatch.chdir(data.parent)
    assert "data `dev.json`" in summary_markdown(evaluation)
    monkeypatch.chdir("/")
    monkeypatch.setenv("CADET_DATA", str(tmp_path / "elsewhere"))
    assert "data `spider-dev/dev.json`" in summary_markdown(evaluation)


def test_the_vote_s_figures_beside_the_sql_phase_s():
    def rec(first, sql, final, agreement, warned=False):
        return {"db_id": "d", "question": f"q{id(object())}", "gold": "g", "error": None,
                "first_match": first, "sql_match": sql, "final_match": final,
                "fallback": False, "final_sql": "S", "agreement": agreement,
                "warnings": ["w"] if warned else [], "stop_reason": "success",
                "attempts": [{"category": None, "outcome": "ok"}], "calls": 2}  # fmt: skip

    recs = [
        rec(True, True, True, [2, 2]),
        rec(False, False, True, [2, 3], warned=True),  # the vote fixed it
        rec(True, True, False, [2, 3], warned=True),  # the vote made it worse
        rec(False, False, True, [2, 3], warned=True),
        rec(False, False, False, [1, 3], warned=True),
        rec(False, False, False, [3, 3]),
    ]
    f = figures(recs)
    assert (f.first.k, f.corrected.k, f.voted.k, f.final.k) == (2, 2, 3, 3)
    assert (f.vote_gain.gained, f.vote_gain.lost) == (2, 1)
    assert (f.voted_on, f.uncertain, f.uncertain_wrong) == (6, 4, 2)
    assert (f.answered_wrong, f.warned_wrong, f.warned) == (3, 2, 4)
    evaluation = Evaluation(model="m", temperature=0.0, data="dev.json", questions=6, seed=0,
                            scripted=True, runs={"targeted": ModeRun("targeted", None, recs)})  # fmt: skip
    text = summary_markdown(evaluation)
    assert "| gain of the vote | +16.7 pts [" in text
    assert "| wrong answers with a warning | 2 of 3: 66.7% [" in text
    assert "| right answers with a warning | 2 of 3: 66.7% [" in text
    assert "| candidates disagreed, of the answers voted on (of those wrong) | 4 of 6 (2) |" in text
