"""The page's model server (``lite/model/page.js``) and the service worker's relay
(``lite/model/relay.js``) in headless Chromium, without JupyterLite and without the real model:
two made-up sites served from two folders of one origin (127.0.0.1), each with its own made-up
"model" in two parts, the real wllama runtime and a service worker made of the relay.

- Two sites of one origin share its BroadcastChannels and Web Locks: each site's kernel
  requests are answered by a page of that site (the names carry the site's address), never by
  a page of the other.
- The browser's storage is the origin's: a stored part is hashed before use, and one that does
  not match (written by a page of another site, say) is fetched again; a stored part that
  matches is not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS
from tests.conftest import need
from tests.helpers import TIME_SLACK
from tests.lite.site import ROOT, serve

pytestmark = pytest.mark.lite

#: The service worker of a made-up site: the relay, answering ``<site>/cadet-model/...``.
WORKER = """
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => { cadetModelRelay(e, new URL(e.request.url)); });
"""
PAGE = """<!doctype html><html><body>
<script>navigator.serviceWorker.register("./sw.js");</script>
<script type="module" src="./static/cadet-model/page.js"></script>
</body></html>"""


def _lite_model():
    if str(ROOT / "scripts") not in sys.path:
        sys.path.append(str(ROOT / "scripts"))
    return importlib.import_module("lite_model")


def make_site(folder: Path, name: str, data: bytes) -> list[dict]:
    """A site in ``folder``: its page, the relay, wllama and a made-up model of two parts as
    the build writes them; returns the parts' entries of its ``model.json``."""
    lm = _lite_model()
    static = folder / "static" / "cadet-model"
    (static / "parts").mkdir(parents=True)
    gguf = folder.parent / f"{name}.gguf"
    gguf.write_bytes(data)
    pin = dataclasses.replace(lm.pin(), size=len(data), sha256=hashlib.sha256(data).hexdigest())
    parts = lm.split(gguf, pin, folder.parent / f"{name}-parts", limit=len(data) // 2 + 1)
    for p in parts:
        shutil.copy(folder.parent / f"{name}-parts" / p.name, static / "parts" / p.name)
    config = lm.config(lm.ModelSource(gguf), dataclasses.replace(pin, name=name), parts)
    (static / "model.json").write_text(json.dumps(config))
    shutil.copy(ROOT / "lite" / "model" / "page.js", static / "page.js")
    for target, source in lm.wllama_files().items():
        (folder / "static" / "wllama" / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, folder / "static" / "wllama" / target)
    (folder / "sw.js").write_text((ROOT / "lite" / "model" / "relay.js").read_text() + WORKER)
    (folder / "index.html").write_text(PAGE)
    return config["parts"]


@pytest.fixture
def sites(tmp_path):
    """Sites ``a`` and ``b`` on one origin, in one Chromium profile of their own."""
    lm = _lite_model()
    need(Path(CHROMIUM).exists(), f"Chromium not installed at {CHROMIUM} (Debian package chromium)")
    need(importlib.util.find_spec("playwright") is not None, "Python package playwright missing")
    missing = [str(p) for p in lm.wllama_files().values() if not p.exists()]
    need(not missing, f"the wllama npm packages are missing (scripts/setup_lite.sh): {missing[:1]}")
    from playwright.sync_api import sync_playwright

    root = tmp_path / "host"
    parts = {s: make_site(root / s, f"model of {s}", bytes([i]) * 40_000 + b"GGUF")
             for i, s in enumerate("ab", 1)}  # fmt: skip
    with serve(root) as base, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        requests: list[str] = []
        context.on("request", lambda r: requests.append(r.url))
        try:
            yield context, base, parts, requests
        finally:
            context.close()


def open_site(context, base: str, site: str):
    page = context.new_page()
    page.goto(f"{base}/{site}/index.html")
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=30_000)
    return page


def status(page) -> dict:
    return page.evaluate("async () => (await fetch('./cadet-model/status')).json()")


def test_each_sites_kernel_is_answered_by_its_own_sites_page(sites):
    context, base, _, _ = sites
    a = open_site(context, base, "a")
    a.wait_for_function("() => globalThis.cadetModel !== undefined", timeout=30_000)
    b = open_site(context, base, "b")
    b.evaluate("async () => { await import('./static/cadet-model/page.js'); }")  # it has run
    assert status(a)["name"] == "model of a"
    assert status(b)["name"] == "model of b"  # not the first page's, of the other site
    b.wait_for_function("() => globalThis.cadetModel !== undefined", timeout=30_000)
    held = sorted(lock["name"] for lock in b.evaluate("() => navigator.locks.query()")["held"])
    assert held == [f"cadet-model {base}/a/", f"cadet-model {base}/b/"]


PLANT = """async ([url, byte, size]) => {
  const { CacheManager } = await import('./static/wllama/index.js');
  const cache = new CacheManager();
  const name = await cache.getNameFromURL(url);
  const bytes = new Uint8Array(size).fill(byte);
  await cache.write(name, new Blob([bytes]).stream(), {etag: '', originalSize: size,
                                                      originalURL: url});
  return name;
}"""
STORED_HASH = """async (url) => {
  const { CacheManager } = await import('./static/wllama/index.js');
  const cache = new CacheManager();
  const blob = await cache.open(await cache.getNameFromURL(url));
  const digest = await crypto.subtle.digest('SHA-256', await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}"""


def test_a_stored_part_is_hashed_before_use_and_fetched_again_when_it_differs(sites):
    context, base, parts, requests = sites
    a = open_site(context, base, "a")
    a.wait_for_function("() => globalThis.cadetModel !== undefined", timeout=30_000)
    urls = [f"{base}/a/static/cadet-model/{p['url']}" for p in parts["a"]]
    # part 1: another page of the origin stored bytes of the right size; part 2: the real part
    a.evaluate(PLANT, [urls[0], 0, parts["a"][0]["size"]])
    a.evaluate(
        """async ([url]) => {
          const { CacheManager } = await import('./static/wllama/index.js');
          await new CacheManager().download(url);
        }""",
        [urls[1]],
    )
    since = len(requests)
    a.evaluate("async () => fetch('./cadet-model/load', {method: 'POST'})")
    deadline = time.monotonic() + 60 + TIME_SLACK  # (a bound whose alternative is "never")
    while status(a)["state"] not in ("loading", "ready", "error"):  # the parts are in
        assert time.monotonic() < deadline, status(a)
        a.wait_for_timeout(300)
    fetched = [u for u in requests[since:] if "/static/cadet-model/parts/" in u]
    assert fetched == [urls[0]], fetched  # the planted part again, the matching one not
    assert a.evaluate(STORED_HASH, urls[0]) == parts["a"][0]["sha256"]
    assert status(a)["partsStored"] == 1
