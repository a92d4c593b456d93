// cadet_magic: the kernel's requests for the in-page model (<site>/cadet-model/<path>), answered
// by the page that serves the model (static/cadet-model/page.js). Added to the site's copy of
// JupyterLite's service worker by scripts/build_lite.py; its fetch handler asks
// cadetModelRelay first.
//
// Each request goes out on the BroadcastChannel "cadet-model.v2 <site>" (<site>: this service
// worker's scope, the site's root, as page.js names it: another site of the same origin has
// another channel) with an id; the serving page acknowledges it at once and answers when it has
// the answer (within about 20 s: a model call is started by one request and asked for by the
// next). No acknowledgement within CADET_MODEL_ACK_SECONDS: no page serves the model (every page
// of the site loads page.js), and a 503 says so.
const cadetModelChannel = new BroadcastChannel(
  `cadet-model.v2 ${new URL("./", self.registration.scope).href}`
);
const cadetModelWaiting = new Map();
const CADET_MODEL_ACK_SECONDS = 10;

cadetModelChannel.addEventListener("message", ({ data }) => {
  const waiting = data && cadetModelWaiting.get(data.id);
  if (!waiting) return;
  if (data.type === "ack") {
    waiting.acked = true;
  } else if (data.type === "response") {
    cadetModelWaiting.delete(data.id);
    waiting.resolve(cadetModelJson(data.status, data.body));
  }
});

function cadetModelJson(status, body) {
  return new Response(body, {
    status,
    headers: { "Content-Type": "application/json", "Cache-Control": "no-store" },
  });
}

function cadetModelRelay(event, url) {
  const root = new URL("cadet-model/", self.registration.scope);
  if (url.origin !== root.origin || !url.pathname.startsWith(root.pathname)) return false;
  event.respondWith(cadetModelAsk(event.request, url.pathname.slice(root.pathname.length), url.search));
  return true;
}

async function cadetModelAsk(request, path, query) {
  const id = crypto.randomUUID();
  const body = request.method === "GET" || request.method === "HEAD" ? "" : await request.text();
  return new Promise((resolve) => {
    const waiting = { acked: false, resolve };
    cadetModelWaiting.set(id, waiting);
    cadetModelChannel.postMessage({ type: "request", id, path, query, method: request.method, body });
    setTimeout(() => {
      if (!waiting.acked && cadetModelWaiting.delete(id)) {
        const message =
          "no page of this site answers for the in-page model (a page of the site loads it: " +
          "reload the page)";
        resolve(cadetModelJson(503, JSON.stringify({ error: { message } })));
      }
    }, CADET_MODEL_ACK_SECONDS * 1000);
  });
}
