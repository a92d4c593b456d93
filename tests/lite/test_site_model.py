"""The site's model in the page as the build makes it (scripts/lite_model.py), no browser.

On a made-up model file and a made-up built site: the parts (each within the limit, together
the file, each with its hash), the three variants (the parts in the site, none, from a URL),
the service worker's relay, the page's script and the ``_headers`` rules. On the built sites
(when the suite builds them): the same facts for the pinned model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import sys

import pytest

from tests.lite.site import OFFLINE, ONLINE, ROOT, cache_headers, model_inputs


def _lite_model():
    """scripts/lite_model.py, imported by name as scripts/build_lite.py imports it."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.append(str(ROOT / "scripts"))
    return importlib.import_module("lite_model")


lm = _lite_model()


@pytest.mark.parametrize(
    ("total", "limit", "sizes"),
    [
        (1_117_320_768, 100_000_000, [93_110_064] * 12),
        (10, 4, [4, 3, 3]),
        (8, 4, [4, 4]),
        (4, 4, [4]),
        (1, 4, [1]),
        (0, 4, []),
    ],
)
def test_part_sizes(total, limit, sizes):
    """The fewest parts within the limit, as equal as can be."""
    assert lm.part_sizes(total, limit) == sizes
    assert sum(sizes) == total and all(s <= limit for s in sizes)


@pytest.fixture
def model(tmp_path, monkeypatch):
    """A made-up 1 MB "model" pinned as the site's model, parts of at most 300,000 bytes."""
    data = bytes(range(256)) * 4096 + b"tail"
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(data)
    pin = dataclasses.replace(lm.pin(), size=len(data), sha256=hashlib.sha256(data).hexdigest())
    monkeypatch.setattr(lm, "pin", lambda: pin)
    monkeypatch.setattr(lm, "PART_BYTES", 300_000)
    monkeypatch.setattr(lm, "PARTS_CACHE", tmp_path / "parts-cache")
    npm = tmp_path / "npm"
    for path in lm.wllama_files().values():  # the npm packages' files, made up
        fake = npm / path.relative_to(lm.NPM)
        fake.parent.mkdir(parents=True, exist_ok=True)
        fake.write_text(f"// {fake.name}")
    monkeypatch.setattr(lm, "NPM", npm)
    return gguf, data, pin


@pytest.fixture
def site(tmp_path):
    """A built site as JupyterLite leaves it, as far as the model's additions go."""
    out = tmp_path / "site"
    (out / "lab").mkdir(parents=True)
    (out / "lab" / "index.html").write_text("<html><body><div id=app></div></body></html>")
    (out / "service-worker.js").write_text(
        "async function onFetch(e){let{request:t}=e,a=new URL(e.request.url);"
        'if("/api/service-worker-heartbeat"===a.pathname)return void e.respondWith(new Response("ok"));}'
    )
    return out


def test_split_parts_are_the_file(model, tmp_path):
    gguf, data, pin = model
    parts = lm.split(gguf, pin, tmp_path / "parts", limit=300_000)
    assert [p.size for p in parts] == [262_145, 262_145, 262_145, 262_145]
    joined = b"".join((tmp_path / "parts" / p.name).read_bytes() for p in parts)
    assert joined == data
    for p in parts:
        content = (tmp_path / "parts" / p.name).read_bytes()
        assert hashlib.sha256(content).hexdigest() == p.sha256
    # a second build reuses the parts (the file unchanged)
    stamp = (tmp_path / "parts" / parts[0].name).stat().st_mtime_ns
    assert lm.split(gguf, pin, tmp_path / "parts", limit=300_000) == parts
    assert (tmp_path / "parts" / parts[0].name).stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    ("pin", "message"),
    [
        ({"size": 999}, "bytes, the pinned model 999"),
        ({"sha256": "0" * 64}, "has SHA-256"),
    ],
)
def test_split_refuses_a_file_that_is_not_the_pin(model, tmp_path, pin, message):
    gguf, data, good = model
    pin = dataclasses.replace(good, **pin)
    with pytest.raises(SystemExit) as e:
        lm.split(gguf, pin, tmp_path / "parts")
    assert message in str(e.value) and "setup_llm.sh" in str(e.value)
    assert not (tmp_path / "parts").exists()


def _site_config(out):
    return json.loads((out / "static" / "cadet-model" / "model.json").read_text())


def test_site_with_the_model(model, site):
    gguf, data, pin = model
    rules = lm.add_model(site, lm.ModelSource(gguf))
    config = _site_config(site)
    assert (config["size"], config["sha256"], config["n_ctx"]) == (len(data), pin.sha256, 8192)
    urls = [p["url"] for p in config["parts"]]
    named = f"model-{pin.sha256[:16]}.gguf"  # the model's hash in every part's name
    assert urls == [f"parts/{named}.part{i:02d}-of-04" for i in range(1, 5)]
    parts = site / "static" / "cadet-model"
    assert b"".join((parts / u).read_bytes() for u in urls) == data
    assert all((parts / u).stat().st_size <= 300_000 for u in urls)
    # the runtime, its licence and its compat build; the page's server; the relay
    for name in ("index.js", "wllama.wasm", "LICENCE", "compat/wllama.wasm"):
        assert (site / "static" / "wllama" / name).exists(), name
    assert (parts / "page.js").read_text() == (ROOT / "lite" / "model" / "page.js").read_text()
    worker = (site / "service-worker.js").read_text()
    assert "if(cadetModelRelay(e,a))return;if(" in worker and "function cadetModelRelay" in worker
    html = (site / "lab" / "index.html").read_text()
    assert html.endswith(f"{lm.PAGE_SCRIPT}</body></html>")
    # isolation everywhere; the parts never in the HTTP cache
    (site / "_headers").write_text(rules)
    assert cache_headers(str(site), "/lab/index.html") == [
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Embedder-Policy", "credentialless"),
        ("Cache-Control", "public, max-age=0, must-revalidate"),
    ]
    part_rules = dict(cache_headers(str(site), "/static/cadet-model/parts/" + urls[0][6:]))
    assert part_rules["Cache-Control"] == "no-store"


def test_site_without_the_model(model, site):
    rules = lm.add_model(site, lm.ModelSource(None))
    config = _site_config(site)
    assert config["parts"] == [] and config["size"] == 0
    assert not (site / "static" / "wllama").exists()
    assert not (site / "static" / "cadet-model" / "parts").exists()
    # the relay and the page's server still answer: the kernel hears "no model in this site"
    assert "cadetModelRelay" in (site / "service-worker.js").read_text()
    assert lm.PAGE_SCRIPT in (site / "lab" / "index.html").read_text()
    assert "no-store" not in rules and "Cross-Origin-Opener-Policy" in rules


def test_site_taking_the_model_from_a_url(model, site):
    gguf, data, pin = model
    rules = lm.add_model(site, lm.ModelSource(gguf, "https://models.example.org/qwen/"))
    config = _site_config(site)
    assert [p["url"] for p in config["parts"]][0] == (
        f"https://models.example.org/qwen/model-{pin.sha256[:16]}.gguf.part01-of-04"
    )
    assert all(len(p["sha256"]) == 64 for p in config["parts"])
    assert not (site / "static" / "cadet-model" / "parts").exists()
    assert (site / "static" / "wllama" / "wllama.wasm").exists()
    assert "no-store" not in rules


@pytest.mark.parametrize("folder", [OFFLINE, ONLINE], ids=["offline", "online"])
def test_built_sites_carry_the_pinned_model(lite_build, folder):
    missing = model_inputs()
    if missing is not None:
        pytest.skip(f"built without the model in the page: {missing} missing")
    config = json.loads((folder / "static" / "cadet-model" / "model.json").read_text())
    pin = lm.pin()
    assert (config["size"], config["sha256"]) == (pin.size, pin.sha256)
    parts = folder / "static" / "cadet-model"
    sizes = [(parts / p["url"]).stat().st_size for p in config["parts"]]
    assert sizes == [p["size"] for p in config["parts"]] and sum(sizes) == pin.size
    assert max(sizes) <= 100_000_000  # static hosts take files of at most 100 MB
    headers = (folder / "_headers").read_text()
    assert lm.ISOLATION in headers and lm.PART_HEADERS in headers
    licence = (folder / "static" / "wllama" / "LICENCE").read_text()
    assert "MIT" in licence or "Permission is hereby granted" in licence
    version = json.loads((folder / "static" / "wllama" / "package.json").read_text())["version"]
    lock = json.loads((ROOT / "lite" / "model" / "package-lock.json").read_text())
    assert version == lock["packages"]["node_modules/@wllama/wllama"]["version"]
