// The service worker: the app shell (the page, its scripts, styles and icons) from a cache when
// the server can't be reached, so the app opens offline; the notes come from IndexedDB then.
// The server fills in SHELL: the files and a version made from their ETags, so a changed app is
// a changed worker, which the browser installs: it caches the new shell and deletes the old.
// Everything else (the API, the event stream, uploads) goes to the network untouched.
const SHELL = {"version":"","files":[]};
const CACHE = `jotter-shell-${SHELL.version}`;

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(SHELL.files.map((path) => new Request(path, { cache: 'no-store' })));
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith('jotter-shell-') && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

/** The shell's path for a request, or null: the page is `/` whatever its fragment or query. */
function shellPath(request) {
  if (request.method !== 'GET') return null;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return null;
  if (request.mode === 'navigate') return url.pathname === '/' ? '/' : null;
  return SHELL.files.includes(url.pathname) ? url.pathname : null;
}

/** How long the network may take for a page or script this worker holds a copy of. */
const NETWORK_WAIT_MS = 4000;
/** Until when the server counts as away (it did not answer in time): copies are served at once. */
let awayUntil = 0;

self.addEventListener('fetch', (event) => {
  const path = shellPath(event.request);
  if (!path) return;
  // The network first (the server revalidates with ETags: a 304 is cheap), so the app is always
  // the server's; the cached copy when the server can't be reached, or does not answer within
  // NETWORK_WAIT_MS (a hung server or link keeps a request open for good, which would hold the
  // page from opening). Once it did not, the other files come from the copy at once for 30 s.
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const cached = await cache.match(path);
    const network = fetch(event.request).then(async (response) => {
      if (response.ok) await cache.put(path, response.clone());
      awayUntil = 0;
      return response;
    });
    if (!cached) return network;
    network.catch(() => {});  // answered from the copy: a late failure is nobody's
    if (Date.now() < awayUntil) return cached;
    const late = new Promise((resolve) => { setTimeout(resolve, NETWORK_WAIT_MS, null); });
    try {
      const response = await Promise.race([network, late]);
      if (response) return response;
      awayUntil = Date.now() + 30000;
    } catch {
      // The server can't be reached.
    }
    return cached;
  })());
});
