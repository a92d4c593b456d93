// The model in the page: llama.cpp compiled to WebAssembly (npm @wllama/wllama) answering the
// `browser` model client of cadet_magic's kernel, which runs in a web worker.
//
// Every page of the site loads this module (scripts/build_lite.py adds it to each app's HTML).
// One page per browser serves the model: the site's pages queue for the Web Lock
// "cadet-model <site>", and only its holder listens, so two tabs never hold two copies of the
// model in memory; when the holder closes, the next page in the queue takes over.
//
// The channel: while a cell runs, the kernel's worker blocks in synchronous XMLHttpRequests to
// <site>/cadet-model/<path>. The site's service worker answers those requests (relay.js, added
// to its copy of JupyterLite's service worker) by posting them on the BroadcastChannel
// "cadet-model.v2 <site>"; the serving page acknowledges each one at once and posts the answer
// when it has it. <site> is the site's own address (its root, as the service worker's scope
// names it): BroadcastChannels and Web Locks are shared by every page of an origin, and two
// sites on one origin (two folders of one host) must never answer each other's kernels. No request waits more than about 20 s: a model call is started by one request and
// asked for by the next ones (Chromium ended a service worker's fetch event after 5 minutes,
// which a call on a busy machine outlasted). Paths:
//   status              the model's state (JSON below); ?since=V waits up to a second for a
//                       version after V, so the kernel can follow the loading without polling fast
//   load                (POST) starts loading (the parts, then wllama's load); returns the state
//   calls               (POST) starts an OpenAI chat completion (after the load, one at a time);
//                       returns its id
//   calls/<id>?wait=S   its state, waiting up to S seconds (at most 20) for its end: queued,
//                       running, done (with the OpenAI reply, usage included) or error
//   calls/<id>/cancel   (POST) stops it (the kernel gave up on it: its timeout, an interrupt)
//
// The parts: static/cadet-model/model.json (written by the build) lists the parts of the GGUF
// file, each at most 100 MB so that static hosts accept them, with their sizes and SHA-256; each
// part's name carries the model's SHA-256, so no part of another model (another build, another
// site) has its name. Each part is fetched once into the browser's origin-private file system
// (wllama's CacheManager) and checked against its hash; later loads read it from there and hash
// it again before using it (the storage is the origin's: any page of it can write there), and a
// stored part that does not match is fetched again. The parts, kept as files, are joined into
// one Blob (no copy) that wllama reads as one GGUF file.
//
// Threads: as many as the machine has cores up to four (half of them above) when the page is
// cross-origin isolated (the site's _headers), one otherwise.

const HERE = new URL(".", import.meta.url);
/** The site's root (this file is <site>/static/cadet-model/page.js): it scopes the names. */
export const SITE = new URL("../../", HERE).href;
export const CHANNEL = `cadet-model.v2 ${SITE}`;
export const LOCK = `cadet-model ${SITE}`;
const CONFIG_URL = new URL("model.json", HERE);
const WLLAMA_URL = new URL("../wllama/index.js", HERE);
/** Seconds a status request with ?since= waits for a change. */
const STATUS_WAIT = 1.0;
/** Parts fetched at once. */
const PARALLEL = 3;
/** Seconds a request for a call's state waits at most for its end: each request the service
 * worker answers must end well within the few minutes browsers give one of its events. */
const MAX_WAIT = 20;
/** Seconds an ended call's answer is kept for the kernel to ask for it. */
const FORGET = 600;

const model = {
  state: "idle", // idle, absent, fetching, checking, loading, ready, error
  version: 0,
  name: "",
  total: 0, // bytes of the model
  stored: 0, // bytes found in the browser's storage
  fetched: 0, // bytes fetched from the site so far
  parts: 0,
  partsStored: 0,
  maxTokens: 1024,
  threads: 0, // planned (threadsFor) until the model is loaded, then the ones it runs with
  isolated: globalThis.crossOriginIsolated === true,
  cores: navigator.hardwareConcurrency || 1,
  fetchSeconds: 0,
  loadSeconds: 0,
  error: "",
};
let wllama = null;
let loading = null; // the load in progress or done (a Promise)
let queue = Promise.resolve(); // chat completions, one at a time
const calls = new Map(); // id -> a chat completion queued, running or ended
const watchers = new Set();
model.threads = threadsFor(model.cores, model.isolated);

function changed(fields) {
  Object.assign(model, fields);
  model.version += 1;
  for (const wake of watchers) wake();
  watchers.clear();
}

/** Threads for llama.cpp (the kernel's rule for llama-cpp-python, see cadet_magic.llm). */
export function threadsFor(cores, isolated) {
  if (!isolated) return 1;
  return cores <= 4 ? Math.max(cores, 1) : Math.floor(cores / 2);
}

let config = null; // model.json, read once (a Promise)

/** The site's model.json; the model's name and size are known from then on. */
function configured() {
  if (!config) {
    config = fetch(CONFIG_URL, { cache: "no-cache" }).then(async (response) => {
      if (!response.ok) throw new Error(`${CONFIG_URL} answered HTTP ${response.status}`);
      const c = await response.json();
      const parts = c.parts || [];
      changed({
        name: c.name || "",
        total: c.size || 0,
        parts: parts.length,
        maxTokens: c.max_tokens || model.maxTokens,
        ...(parts.length ? {} : { state: "absent" }),
      });
      return c;
    });
    config.catch(() => {
      config = null; // asked again next time
    });
  }
  return config;
}

async function sha256(blob) {
  const digest = await crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Each part from the browser's storage, or fetched once into it and checked. */
async function partBlobs(site, CacheManager) {
  const cache = new CacheManager();
  const parts = site.parts.map((p) => ({ ...p, url: new URL(p.url, CONFIG_URL).href }));
  const progress = new Array(parts.length).fill(0);
  const blobs = new Array(parts.length);
  let last = 0;
  const report = (force) => {
    const now = performance.now();
    if (force || now - last > 250) {
      last = now;
      changed({ fetched: progress.reduce((a, b) => a + b, 0) });
    }
  };
  const one = async (i) => {
    const part = parts[i];
    const name = await cache.getNameFromURL(part.url);
    if ((await cache.getSize(name)) === part.size) {
      // hashed before use: any page of this origin can have written the stored copy
      const kept = await cache.open(name);
      if (kept && (await sha256(kept)) === part.sha256) {
        blobs[i] = kept;
        changed({ stored: model.stored + part.size, partsStored: model.partsStored + 1 });
        return;
      }
      await cache.delete(name);
    }
    await cache.download(part.url, {
      progressCallback: ({ loaded }) => {
        progress[i] = loaded;
        report(false);
      },
    });
    progress[i] = part.size;
    report(true);
    const blob = await cache.open(name);
    const got = blob ? await sha256(blob) : "";
    if (!blob || blob.size !== part.size || got !== part.sha256) {
      await cache.delete(name);
      throw new Error(
        `part ${i + 1} of the model (${part.url}) does not match the site's pin ` +
          `(${blob ? blob.size : 0} bytes, SHA-256 ${got.slice(0, 12)}...)`
      );
    }
    blobs[i] = blob;
  };
  const queue = parts.map((_, i) => i);
  const worker = async () => {
    while (queue.length) await one(queue.shift());
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, parts.length) }, worker));
  return blobs;
}

async function load() {
  const site = await configured();
  if (!site.parts || !site.parts.length) return; // absent
  const t0 = performance.now();
  changed({ state: "fetching", stored: 0, fetched: 0, partsStored: 0 });
  const { Wllama, CacheManager } = await import(WLLAMA_URL.href);
  // asks the browser to keep the parts under storage pressure (granted or not, they work)
  navigator.storage?.persist?.().catch(() => {});
  const blobs = await partBlobs(site, CacheManager);
  const t1 = performance.now();
  const threads = threadsFor(model.cores, model.isolated);
  changed({ state: "loading", fetchSeconds: (t1 - t0) / 1000, threads });
  const quiet = { debug() {}, log() {}, warn: console.warn, error: console.error };
  wllama = new Wllama(
    { default: new URL("../wllama/wllama.wasm", HERE).href },
    { suppressNativeLog: true, logger: quiet }
  );
  // browsers without WebAssembly JSPI or Memory64 (Safari) run wllama's compat build, shipped
  // in the site too (wllama would otherwise fetch it from a CDN)
  wllama.setCompat({
    worker: new URL("../wllama/compat/wllama.js", HERE).href,
    wasm: new URL("../wllama/compat/wllama.wasm", HERE).href,
  });
  await wllama.loadModel([new Blob(blobs)], {
    n_ctx: site.n_ctx,
    n_threads: threads,
    n_gpu_layers: 0, // the same CPU computation as the CPython kernel's llama.cpp
  });
  changed({
    state: "ready",
    threads: wllama.getNumThreads(),
    loadSeconds: (performance.now() - t1) / 1000,
  });
}

function startLoad() {
  if (!loading) {
    loading = load().catch((e) => {
      changed({ state: "error", error: String((e && e.message) || e) });
      loading = null; // the next request tries again
      throw e;
    });
    loading.catch(() => {});
  }
  return loading;
}

function status() {
  return { ...model };
}

async function waitForChange(since, seconds) {
  if (model.version > since) return;
  await new Promise((resolve) => {
    watchers.add(resolve);
    setTimeout(resolve, seconds * 1000);
  });
}

/** Starts a chat completion (after the load, one at a time); returns its id. */
function startCall(request) {
  const id = crypto.randomUUID();
  const abort = new AbortController();
  const call = { state: "queued", abort, waiters: new Set(), reply: null, error: "" };
  calls.set(id, call);
  const run = queue.then(async () => {
    await startLoad();
    if (model.state === "absent") throw new Error("this site was built without the model");
    if (abort.signal.aborted) throw new Error("cancelled");
    call.state = "running";
    return wllama.createChatCompletion({
      messages: request.messages,
      temperature: request.temperature ?? 0,
      max_tokens: request.max_tokens ?? model.maxTokens,
      stream: false,
      abortSignal: abort.signal,
    });
  });
  queue = run.catch(() => {});
  run
    .then(
      (reply) => Object.assign(call, { state: "done", reply }),
      (e) => Object.assign(call, { state: "error", error: String((e && e.message) || e) })
    )
    .finally(() => {
      for (const wake of call.waiters) wake();
      call.waiters.clear();
      setTimeout(() => calls.delete(id), FORGET * 1000); // never asked for again
    });
  return id;
}

/** A call's state; ``wait`` seconds at most for it to end. Its answer is given once. */
async function callState(id, wait) {
  const call = calls.get(id);
  if (!call) return [404, { error: { message: "no such model call in this page (reloaded?)" } }];
  if (call.state === "queued" || call.state === "running") {
    await new Promise((resolve) => {
      call.waiters.add(resolve);
      setTimeout(resolve, Math.min(wait, MAX_WAIT) * 1000);
    });
  }
  if (call.state === "done" || call.state === "error") calls.delete(id);
  return [200, { state: call.state, reply: call.reply, error: call.error }];
}

async function handle(message) {
  const path = message.path;
  const query = new URLSearchParams(message.query || "");
  await configured();
  if (path === "status") {
    const since = query.get("since");
    if (since !== null) await waitForChange(Number(since), STATUS_WAIT);
    return [200, status()];
  }
  if (path === "load" && message.method === "POST") {
    startLoad();
    return [200, status()];
  }
  if (path === "calls" && message.method === "POST") {
    return [200, { id: startCall(JSON.parse(message.body || "{}")) }];
  }
  const call = path.match(/^calls\/([\w-]+)(\/cancel)?$/);
  if (call && call[2] && message.method === "POST") {
    calls.get(call[1])?.abort.abort();
    return [200, { state: "cancelled" }];
  }
  if (call && message.method === "GET") {
    return callState(call[1], Number(query.get("wait") || 0));
  }
  return [404, { error: { message: `no such request: ${message.method} ${path}` } }];
}

function serve() {
  const channel = new BroadcastChannel(CHANNEL);
  channel.addEventListener("message", async ({ data }) => {
    if (!data || typeof data !== "object" || data.type !== "request") return;
    channel.postMessage({ type: "ack", id: data.id });
    let answer;
    try {
      answer = await handle(data);
    } catch (e) {
      answer = [500, { error: { message: String((e && e.message) || e) } }];
    }
    channel.postMessage({
      type: "response",
      id: data.id,
      status: answer[0],
      body: JSON.stringify(answer[1]),
    });
  });
  globalThis.cadetModel = { status, load: startLoad };
}

if (navigator.locks && typeof BroadcastChannel !== "undefined") {
  navigator.locks.request(LOCK, () => {
    serve();
    return new Promise(() => {}); // held while this page lives
  });
}
