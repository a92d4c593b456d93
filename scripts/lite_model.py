"""The JupyterLite site's model in the page (used by scripts/build_lite.py; downloads nothing).

What the site gets (:func:`add_model`):

* ``static/wllama/``: llama.cpp compiled to WebAssembly, the npm package ``@wllama/wllama``
  (MIT) and its compat build for browsers without WebAssembly JSPI or Memory64
  (``@wllama/wllama-compat``), as installed by scripts/setup_lite.sh from the pins in
  ``lite/model/package-lock.json`` (name, version and integrity hash: ``npm ci``);
* ``static/cadet-model/``: the page's model server (``lite/model/page.js``, loaded by the lab
  page), its configuration ``model.json`` and, unless the model comes from elsewhere, the
  pinned GGUF file in ``parts/`` of at most :data:`PART_BYTES` bytes each (static hosts refuse
  bigger files);
* the site's service worker relays the kernel's requests to the page (``lite/model/relay.js``);
* ``_headers``: the cross-origin isolation headers (:data:`ISOLATION`: several threads for the
  model) and no HTTP caching of the parts (:data:`PART_HEADERS`: the page keeps them itself).

Why raw byte parts, not llama.cpp's ``gguf-split`` files: a split puts whole tensors in each
file, and two tensors of the pinned model are bigger than 100 MB (``output.weight`` 191 MB,
``token_embd.weight`` 131 MB). The page joins the parts into one Blob (the browser keeps them
as files: no copy) and wllama reads it as the one GGUF file it is.

Variants (:class:`ModelSource`): the parts in the site (default); none (``--no-model``, for hosts
that cannot serve 1.1 GB: ``%%ask --model browser`` then says the site has no model); or the
parts from a URL the deployer names (``--model-url``: a folder holding the same parts, e.g.
``static/cadet-model/parts/`` of a site built with them, on a host that allows the site's
origin with CORS; the build still reads the model file, for the parts' hashes the page checks).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "lite" / "model"
#: The npm packages as ``npm ci`` installed them (scripts/setup_lite.sh).
NPM = ROOT / ".cache" / "lite" / "wllama" / "node_modules" / "@wllama"
#: Parts of the model, split once per model file (the build's own folder, not a shared cache).
PARTS_CACHE = ROOT / "build" / "lite-stage" / "model"
#: The largest part: static hosts refuse bigger files (GitHub Pages 100 MiB; 100 MB is below).
PART_BYTES = 100_000_000
#: The model's context window and longest reply, as the CPython kernel runs it (llm.llamacpp).
N_CTX = 8192
MAX_TOKENS = 1024
#: Every page of the site is cross-origin isolated where the host reads ``_headers``: wllama
#: runs several threads only there (SharedArrayBuffer). ``credentialless`` rather than
#: ``require-corp``: a notebook's images from other hosts still load (without cookies).
ISOLATION = """\
# Cross-origin isolated: the model in the page runs several threads.
/*
  Cross-Origin-Opener-Policy: same-origin
  Cross-Origin-Embedder-Policy: credentialless
"""
#: The parts are kept by the page in the browser's own storage: an HTTP cache copy would be a
#: second 1.1 GB.
PART_HEADERS = """\
# The model's parts: the page keeps them in the browser's storage, not the HTTP cache.
/static/cadet-model/parts/*
  Cache-Control: no-store
"""
#: Where the site's service worker's fetch handler starts (JupyterLite's, minified): the relay
#: is asked first.
SW_FETCH = (
    'if("/api/service-worker-heartbeat"===a.pathname)',
    'if(cadetModelRelay(e,a))return;if("/api/service-worker-heartbeat"===a.pathname)',
)
#: The lab page loads the page's model server after JupyterLab's own scripts.
PAGE_SCRIPT = '<script type="module" src="../static/cadet-model/page.js"></script>'
PAGE_END = "</body>"


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of the model file: its name in the site, its size and SHA-256."""

    name: str
    size: int
    sha256: str


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """The model file (``gguf``: split into parts, which give the parts' hashes) and where the
    page fetches the parts: from the site (``url`` None) or from ``url``; no file, no model."""

    gguf: Path | None = None
    url: str | None = None


def pin() -> Any:
    """The pinned model (``cadet_magic.local.pin.PIN``: its name, size and SHA-256)."""
    from cadet_magic.local.pin import PIN

    return PIN


def default_gguf() -> Path:
    """The model file scripts/setup_llm.sh installs and links here."""
    return ROOT / ".cache" / "llm" / "qwen.gguf"


def part_sizes(total: int, limit: int = PART_BYTES) -> list[int]:
    """Sizes of the fewest parts of at most ``limit`` bytes, as equal as can be.

    >>> part_sizes(1_117_320_768)[:2], len(part_sizes(1_117_320_768))
    ([93110064, 93110064], 12)
    >>> part_sizes(10, 4), part_sizes(8, 4), part_sizes(0, 4)
    ([4, 3, 3], [4, 4], [])
    """
    count = math.ceil(total / limit)
    if not count:
        return []
    small, extra = divmod(total, count)
    return [small + (1 if i < extra else 0) for i in range(count)]


def part_names(count: int, sha256: str) -> list[str]:
    """The parts' file names, in order, each carrying the model's SHA-256 (the page keeps the
    parts in the browser's storage under these names: no part of another model has one).

    >>> names = part_names(12, "5096d631822c7efd" + "0" * 48)
    >>> names[0], names[-1]
    ('model-5096d631822c7efd.gguf.part01-of-12', 'model-5096d631822c7efd.gguf.part12-of-12')
    """
    width = max(2, len(str(count)))
    model = f"model-{sha256[:16]}.gguf"
    return [f"{model}.part{i:0{width}d}-of-{count:0{width}d}" for i in range(1, count + 1)]


def split(gguf: Path, expected: Any, out: Path, limit: int | None = None) -> list[Part]:
    """Splits ``gguf`` into parts of at most ``limit`` bytes (default :data:`PART_BYTES`) in
    ``out`` (kept between builds: the file is read again only when its size or time stamp
    changed), checked against ``expected`` as it is read."""
    limit = PART_BYTES if limit is None else limit
    stat = gguf.stat()
    key = {"file": str(gguf), "size": stat.st_size, "mtime": stat.st_mtime_ns, "limit": limit}
    ready = out / "parts.json"
    if ready.exists():
        done = json.loads(ready.read_text())
        names = part_names(len(done["parts"]), expected.sha256)
        if (
            done["key"] == key
            and [p["name"] for p in done["parts"]] == names
            and all((out / p["name"]).stat().st_size == p["size"] for p in done["parts"])
        ):
            return [Part(**p) for p in done["parts"]]
    if stat.st_size != expected.size:
        raise SystemExit(
            f"build_lite: {gguf} is {stat.st_size} bytes, the pinned model {expected.size}: "
            "run bash scripts/setup_llm.sh"
        )
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    whole = hashlib.sha256()
    parts = []
    sizes = part_sizes(stat.st_size, limit)
    with gguf.open("rb") as f:
        for name, size in zip(part_names(len(sizes), expected.sha256), sizes, strict=True):
            digest = hashlib.sha256()
            left = size
            with (out / name).open("wb") as dest:
                while left:
                    chunk = f.read(min(left, 1 << 22))
                    dest.write(chunk)
                    digest.update(chunk)
                    whole.update(chunk)
                    left -= len(chunk)
            parts.append(Part(name, size, digest.hexdigest()))
    if whole.hexdigest() != expected.sha256:
        shutil.rmtree(out)
        raise SystemExit(
            f"build_lite: {gguf} has SHA-256 {whole.hexdigest()}, the pinned model "
            f"{expected.sha256}: run bash scripts/setup_llm.sh"
        )
    ready.write_text(json.dumps({"key": key, "parts": [dataclasses.asdict(p) for p in parts]}))
    return parts


def link(src: Path, dest: Path) -> None:
    """``dest`` as a hard link to ``src`` (the same 1.1 GB in both sites and the cache), a copy
    across file systems."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy(src, dest)


def config(source: ModelSource, expected: Any, parts: list[Part]) -> dict:
    """``model.json``: what the page loads (part addresses relative to the file itself)."""
    base = "parts/" if source.url is None else source.url.rstrip("/") + "/"
    return {
        "name": expected.name,
        "size": expected.size if parts else 0,
        "sha256": expected.sha256 if parts else "",
        "n_ctx": N_CTX,
        "max_tokens": MAX_TOKENS,
        "parts": [{"url": base + p.name, "size": p.size, "sha256": p.sha256} for p in parts],
    }


def wllama_files() -> dict[str, Path]:
    """The site's ``static/wllama/`` files, from the npm packages."""
    main, compat = NPM / "wllama", NPM / "wllama-compat"
    return {
        "index.js": main / "esm" / "index.js",
        "wllama.wasm": main / "esm" / "wasm" / "wllama.wasm",
        "LICENCE": main / "LICENCE",
        "package.json": main / "package.json",
        "compat/wllama.js": compat / "wasm" / "wllama.js",
        "compat/wllama.wasm": compat / "wasm" / "wllama.wasm",
        "compat/package.json": compat / "package.json",
    }


def add_model(out: Path, source: ModelSource) -> str:
    """Adds the model in the page to the built site ``out`` (see the module's docstring);
    returns the rules the site's ``_headers`` gets for it."""
    expected = pin()
    parts: list[Part] = []
    folder = PARTS_CACHE / expected.sha256[:16]
    if source.gguf is not None:
        if not source.gguf.exists():
            raise SystemExit(
                f"build_lite: the model file {source.gguf} is missing: run bash "
                "scripts/setup_llm.sh, or build the site without the model (--no-model)"
            )
        parts = split(source.gguf, expected, folder)
    static = out / "static" / "cadet-model"
    static.mkdir(parents=True)
    shutil.copy(SOURCE / "page.js", static / "page.js")
    if parts and source.url is None:
        (static / "parts").mkdir()
        for p in parts:
            link(folder / p.name, static / "parts" / p.name)
    (static / "model.json").write_text(json.dumps(config(source, expected, parts), indent=1))
    if parts:
        files = wllama_files()
        missing = [str(p) for p in files.values() if not p.exists()]
        if missing:
            raise SystemExit(
                f"build_lite: {missing[0]} missing: run bash scripts/setup_lite.sh (the in-page "
                "model's runtime, npm @wllama/wllama)"
            )
        for name, path in files.items():
            dest = out / "static" / "wllama" / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, dest)
    relay_requests(out)
    load_with_page(out)
    return ISOLATION + (PART_HEADERS if parts and source.url is None else "")


def relay_requests(out: Path) -> None:
    """The site's service worker relays the kernel's ``cadet-model/`` requests to the page."""
    worker = out / "service-worker.js"
    text = worker.read_text()
    if text.count(SW_FETCH[0]) != 1:
        raise SystemExit(f"build_lite: {worker} has no single {SW_FETCH[0]!r}")
    relay = (SOURCE / "relay.js").read_text()
    worker.unlink()
    worker.write_text(text.replace(*SW_FETCH) + "\n" + relay)


def load_with_page(out: Path) -> None:
    """The lab page loads the page's model server (``static/cadet-model/page.js``)."""
    page = out / "lab" / "index.html"
    html = page.read_text()
    if html.count(PAGE_END) != 1:
        raise SystemExit(f"build_lite: {page} has no single {PAGE_END!r}")
    page.unlink()
    page.write_text(html.replace(PAGE_END, PAGE_SCRIPT + PAGE_END))
