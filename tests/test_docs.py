"""The docs a newcomer reads: the README stays short, every relative link and anchor resolves,
the options page is the one the code generates, every dependency says why it is there, and
examples paste and run as written."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Every page of the docs: the README, the manual, the contributor's and the figures' pages
#: (BENCHMARKS.md and the benchmarks' detail pages).
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "ARCHITECTURE.md",
        ROOT / "BENCHMARKS.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "docs" / "benchmarks").glob("*.md"),
    ]
)

#: Inline links and images ``[text](target)``, and reference definitions ``[name]: target``.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text, flags=re.S)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens.

    >>> slug("Memory and time per engine: what is bounded, and what cannot be")
    'memory-and-time-per-engine-what-is-bounded-and-what-cannot-be'
    >>> slug("Where the fallback's code runs"), slug("Local model: Qwen2.5-Coder-1.5B Q4_K_M")
    ('where-the-fallbacks-code-runs', 'local-model-qwen25-coder-15b-q4_k_m')
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown page: its headings' slugs, numbered as GitHub numbers repeats."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    fence = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        heading = re.match(r"#{1,6} (.+)", line)
        if fence or not heading:
            continue
        base = slug(heading.group(1))
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def _links(path: Path) -> list[str]:
    prose = _prose(path.read_text())
    return LINK.findall(prose) + REFERENCE.findall(prose)


def test_readme_is_short() -> None:
    """The README says what it is and links to the manual; the manual lives in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {_page_id(dest)}")
    assert broken == []


def test_every_page_of_the_manual_is_reachable_from_the_readme() -> None:
    """Each page of docs/ is linked from the README or from the manual's map."""
    linked = {
        (page.parent / t.partition("#")[0]).resolve()
        for page in (ROOT / "README.md", ROOT / "docs" / "index.md")
        for t in _links(page)
        if not re.match(r"[a-z][a-z0-9+.-]*:", t)
    }
    assert sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in linked) == []


def _options_page():
    spec = importlib.util.spec_from_file_location(
        "options_page", ROOT / "scripts" / "options_page.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_options_page_is_generated_from_the_code() -> None:
    """docs/options.md is what ``python scripts/options_page.py`` writes from ``AskOptions`` and
    the magic's arguments: an option added, renamed or given another default, help or check
    changes the page, and this fails until the page is written again."""
    page = _options_page()
    assert (ROOT / "docs" / "options.md").read_text() == page.render(), (
        "docs/options.md is out of date: run python scripts/options_page.py"
    )


def test_options_page_names_every_option_and_flag() -> None:
    from cadet_magic.magic.magics import AskMagic
    from cadet_magic.options import AskOptions

    text = (ROOT / "docs" / "options.md").read_text()
    for name in AskOptions.names():
        assert f"| `{name}` |" in text
    for action in AskMagic.ask.parser._actions:
        for flag in action.option_strings:
            assert f"`{flag}" in text, flag
    assert set(_options_page().SEE_ALSO) <= set(AskOptions.names())


def _requirement_name(requirement: str) -> str:
    name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert name, requirement
    return name.group(0).lower().replace("_", "-")


def test_every_dependency_says_why_it_is_there() -> None:
    """Every package pyproject.toml installs (the package's and each extra's) is named in
    docs/dependencies.md, whose tables say why it is there."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for name, extra in project["optional-dependencies"].items():
        requirements += [r for r in extra if not r.startswith("cadet-magic[")]
        assert f"`{name}`" in (ROOT / "docs" / "dependencies.md").read_text(), name
    text = (ROOT / "docs" / "dependencies.md").read_text().lower().replace("_", "-")
    missing = sorted(
        {_requirement_name(r) for r in requirements} - set(re.findall(r"[a-z0-9.-]+", text))
    )
    assert missing == []


def test_no_absolute_path_of_a_machine() -> None:
    """The docs name files relative to the repository or to ``CADET_DATA``, never by a path of
    the machine that wrote them."""
    pattern = re.compile(r"(?<![\w.])/(?:work|home|root|Users|tmp|var/folders)/")
    offenders = [
        f"{_page_id(page)}:{n}"
        for page in PAGES
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if pattern.search(line) or str(ROOT) in line
    ]
    assert offenders == []


def _fenced_blocks(text: str) -> list[list[str]]:
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return blocks


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_cells_can_be_pasted(page: Path) -> None:
    """A cell magic (``%%ask``) works only as a cell's first line: every block of the docs
    holding one starts with it, so each block pastes as one notebook cell."""
    for block in _fenced_blocks(page.read_text()):
        lines = [line for line in block if line.strip()]
        magics = [i for i, line in enumerate(lines) if line.startswith("%%")]
        assert magics in ([], [0]), "\n".join(block)


def test_served_sites_bind_loopback() -> None:
    """The commands the docs and scripts give to serve a site listen on 127.0.0.1 only."""
    for path in [*PAGES, *(ROOT / "scripts").iterdir()]:
        if path.is_dir():
            continue
        for line in path.read_text().splitlines():
            if "http.server" in line:
                assert "-b 127.0.0.1" in line or "--bind 127.0.0.1" in line, (path, line)
