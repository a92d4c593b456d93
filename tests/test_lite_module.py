"""cadet_magic/lite.py outside the browser: the drive's path finder (the browser run is in
tests/lite), and that nothing happens in CPython."""

from __future__ import annotations

import importlib._bootstrap_external as bootstrap
import os
import sys

import pytest

from cadet_magic import lite


@pytest.fixture
def finder(tmp_path, monkeypatch):
    """A DriveFinder on a folder, its cell number set by the test, its folder stats counted."""
    (tmp_path / "mine.py").write_text("X = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    stats = []
    real = bootstrap._path_stat
    monkeypatch.setattr(bootstrap, "_path_stat", lambda p: stats.append(p) or real(p))
    f = lite.DriveFinder(str(tmp_path), *lite._loaders())
    f.now = 1
    f.cell = lambda: f.now
    f.stats = stats
    return f


@pytest.mark.parametrize(
    ("name", "found"),
    [("mine", True), ("pkg", True), ("json", False), ("mine_not", False), ("pk", False)],
)
def test_finds_what_the_folder_holds(finder, name, found):
    assert (finder.find_spec(name) is not None) is found
    assert (finder.find_spec(name) is not None) is found  # the second look, same cell


def test_one_look_at_the_folder_per_cell(finder):
    for name in ("json", "csv", "colorsys", "decimal"):
        assert finder.find_spec(name) is None
    folder_looks = lambda: finder.stats.count(finder.path)  # noqa: E731
    assert folder_looks() == 1
    assert finder.find_spec("mine") is not None  # a name the folder holds: Python's own look
    finder.now = 2
    assert finder.find_spec("json") is None
    assert folder_looks() == 3


def test_a_new_file_is_found_in_the_next_cell_or_after_invalidating(finder, tmp_path):
    assert finder.find_spec("fresh") is None
    (tmp_path / "fresh.py").write_text("")
    assert finder.find_spec("fresh") is None  # same cell, listing not read again
    finder.invalidate_caches()
    assert finder.find_spec("fresh") is not None
    (tmp_path / "fresher.py").write_text("")
    os.utime(tmp_path, (0, 0))  # the drive stamps every folder 0: the stamp never changes
    assert finder.find_spec("fresher") is None
    finder.now = 2  # the next cell lists the folder again
    assert finder.find_spec("fresher") is not None


def test_nothing_happens_in_cpython():
    hooks = list(sys.path_hooks)
    assert lite.use_drive_finder() is False and lite.start() is False
    assert sys.path_hooks == hooks


def test_the_drive_finder_forgets_the_finders_made_before_the_drive(monkeypatch):
    """The site's kernel imports with a plain /drive folder as working directory before the
    drive is mounted there: the finders made for it then are forgotten, each time."""
    monkeypatch.setattr(lite, "in_pyodide", lambda: True)
    monkeypatch.setattr(sys, "path_hooks", list(sys.path_hooks))
    cache = {"/drive": object(), "/drive/sub": object(), "/drives": object(), "/lib": object()}
    monkeypatch.setattr(sys, "path_importer_cache", dict(cache))
    assert lite.use_drive_finder() is True
    assert sorted(sys.path_importer_cache) == ["/drives", "/lib"]
    sys.path_importer_cache["/drive"] = object()
    assert lite.use_drive_finder() is False  # in charge already
    assert sorted(sys.path_importer_cache) == ["/drives", "/lib"]
    assert sys.path_hooks.count(lite._drive_hook) == 1


def test_the_deferred_packages_are_looked_for_among_the_installed_ones(monkeypatch, tmp_path):
    """Not in the working directory (the drive, where each look is a request to the page)."""
    (tmp_path / "sqlglot.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    looked: list[str] = []
    real = bootstrap._path_stat
    monkeypatch.setattr(bootstrap, "_path_stat", lambda p: looked.append(p) or real(p))
    assert lite.missing(("sqlglot", "no_such_package_here")) == ["no_such_package_here"]
    assert str(tmp_path) not in looked and "" not in looked
