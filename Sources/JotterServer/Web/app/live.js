// Live updates: the server-sent events of /notes/events, and the connection state shown in the
// header. EventSource reconnects by itself (sending Last-Event-ID, so missed events are replayed);
// if it gives up, a new one is opened with a growing delay and the caller re-lists.

const DELAYS = [1000, 2000, 5000, 10000];

/**
 * Starts listening. `handlers.event(kind, note)` gets `note.created|updated|deleted`;
 * `handlers.reload()` when the list must be fetched again; `handlers.reconnected()` when the
 * stream is back after a break (the server can be reached again); `handlers.state(name)` with
 * `connecting`, `live`, `reconnecting` or `offline`. `handlers.ended()`, when the server refused
 * the stream, resolves to whether that was because the session ended (a 401, which an
 * EventSource can't tell from other errors): then no new stream is opened until `reconnect()`
 * (after signing in again).
 */
export function connectLive(handlers) {
  let source = null;
  let attempt = 0;
  let timer = null;
  let hadConnection = false;
  let broken = false; // an error since the last open

  const report = (state) => handlers.state(navigator.onLine === false ? 'offline' : state);

  function open() {
    clearTimeout(timer);
    source?.close();
    source = new EventSource('/notes/events');
    source.addEventListener('open', () => {
      // A fresh EventSource has no Last-Event-ID: anything missed meanwhile needs a re-list.
      if (hadConnection && attempt > 0) handlers.reload();
      const back = broken; // after a break, or a first connection that failed before (opened offline)
      hadConnection = true;
      broken = false;
      attempt = 0;
      report('live');
      if (back) handlers.reconnected?.();
    });
    const stream = source;
    stream.addEventListener('error', () => {
      broken = true;
      if (stream.readyState === EventSource.CLOSED) {
        // It gave up (the server answered with an error): try again later with a new one,
        // unless the session ended (the sign-in dialog is open then, and signing in reconnects).
        const delay = DELAYS[Math.min(attempt, DELAYS.length - 1)];
        attempt += 1;
        Promise.resolve(handlers.ended?.()).catch(() => false).then((ended) => {
          if (source !== stream) return; // opened again meanwhile, or the page went
          if (ended) report('connecting');
          else timer = setTimeout(open, delay);
        });
      }
      report('reconnecting');
    });
    for (const kind of ['note.created', 'note.updated', 'note.deleted']) {
      source.addEventListener(kind, (message) => {
        const note = safeParse(message.data);
        if (note && typeof note.id === 'string') handlers.event(kind, note);
      });
    }
    source.addEventListener('reload', () => handlers.reload());
  }

  // A page that is left may be kept in the back/forward cache: its stream would stay open and
  // hold one of the few connections the browser allows per server, so requests of the next page
  // wait for it. Close it as the page goes; a page shown again reconnects and catches up.
  window.addEventListener('pagehide', () => {
    clearTimeout(timer);
    source?.close();
    source = null;
  });
  window.addEventListener('pageshow', (event) => {
    if (!event.persisted) return;
    report('reconnecting');
    attempt = Math.max(attempt, 1);
    open();
  });
  window.addEventListener('offline', () => report('offline'));
  window.addEventListener('online', () => {
    // Don't wait for the next retry: connect now, and catch up.
    report('reconnecting');
    attempt = Math.max(attempt, 1);
    open();
  });
  report('connecting');
  open();
  return {
    /** Connects again now (after signing in), catching up with a re-list. */
    reconnect() {
      attempt = Math.max(attempt, 1);
      open();
    },
  };
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
