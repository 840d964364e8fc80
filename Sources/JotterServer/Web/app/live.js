// Live updates: the server-sent events of /notes/events, and the connection state shown in the
// header. The stream is read with fetch, not EventSource, for its heartbeats: the server sends a
// `:` comment every 15 s while it has nothing else to send (docs/API.md), which an EventSource
// never shows, and a server or link that hangs sends nothing and no error either. After
// `MISSED_HEARTBEATS` intervals without a byte the stream counts as lost: it is closed and opened
// again, as after an error. A stream that ends or fails is opened again after the server's
// `retry` with the last event id (`Last-Event-ID`, so missed events are replayed); one the server
// refuses is opened again with a growing delay, and the caller re-lists.

const DELAYS = [1000, 2000, 5000, 10000];
/** The server's heartbeat interval (docs/API.md, "Events"). */
const HEARTBEAT = 15000;
/** Heartbeats missed before the stream counts as lost (one late one is not yet a lost stream). */
const MISSED_HEARTBEATS = 2.5;

/**
 * Starts listening. `handlers.event(kind, note)` gets `note.created|updated|deleted`;
 * `handlers.reload()` when the list must be fetched again; `handlers.reconnected()` when the
 * stream is back after a break (the server can be reached again); `handlers.state(name)` with
 * `connecting`, `live`, `reconnecting` or `offline`. `handlers.ended()`, when the server refused
 * the stream, resolves to whether that was because the session ended (a 401: the request it
 * makes opens the sign-in dialog): then no new stream is opened until `reconnect()` (after
 * signing in again).
 */
export function connectLive(handlers) {
  let stream = null; // the AbortController of the stream open now, or being opened
  let lastEventId = null;
  let retry = 3000; // the server's `retry:`, as an EventSource would take it
  let attempt = 0; // refusals in a row
  let timer = null;
  let hadConnection = false;
  let broken = false; // an error since the last open
  let lastByte = 0; // when the stream last sent anything (its answer, an event, a heartbeat)
  let watchdog = null;

  const report = (state) => handlers.state(navigator.onLine === false ? 'offline' : state);
  /** How long the stream may stay silent (a `data-stream-timeout` on <body> overrides it). */
  const silence = () => Number(document.body?.dataset.streamTimeout) || HEARTBEAT * MISSED_HEARTBEATS;

  function close() {
    clearTimeout(timer);
    clearInterval(watchdog);
    stream?.abort();
    stream = null;
  }

  function open() {
    close();
    const current = new AbortController();
    stream = current;
    // The answer must come in time too: a hung server accepts the connection and says nothing.
    lastByte = performance.now();
    watchdog = setInterval(() => {
      if (performance.now() - lastByte > silence()) lost(current);
    }, Math.min(5000, silence() / 4));
    read(current);
  }

  /** The stream sent nothing for too long: closed, and opened again as after an error. */
  function lost(current) {
    if (stream !== current) return;
    console.warn('Jotter: the event stream sent nothing (not even a heartbeat) for too long; reconnecting.');
    failed(current);
  }

  /** The stream ended or failed (the network, the server gone): opened again after `retry`. */
  function failed(current) {
    if (stream !== current) return;
    close();
    broken = true;
    report('reconnecting');
    timer = setTimeout(open, retry);
  }

  /** The server refused the stream (an error status): try again later, unless the session ended. */
  function refused(current) {
    if (stream !== current) return;
    close();
    broken = true;
    const delay = DELAYS[Math.min(attempt, DELAYS.length - 1)];
    attempt += 1;
    report('reconnecting');
    // (The sign-in dialog is open when it ended, and signing in reconnects.)
    const waiting = new AbortController();
    stream = waiting; // nothing else opens meanwhile
    Promise.resolve(handlers.ended?.()).catch(() => false).then((ended) => {
      if (stream !== waiting) return; // opened again meanwhile, or the page went
      stream = null;
      if (ended) report('connecting');
      else timer = setTimeout(open, delay);
    });
  }

  function opened() {
    // After a refusal, what was missed meanwhile may be more than the server replays: a re-list.
    if (hadConnection && attempt > 0) handlers.reload();
    const back = broken; // after a break, or a first connection that failed before (opened offline)
    hadConnection = true;
    broken = false;
    attempt = 0;
    report('live');
    if (back) handlers.reconnected?.();
  }

  async function read(current) {
    let response;
    try {
      const headers = { Accept: 'text/event-stream' };
      if (lastEventId !== null) headers['Last-Event-ID'] = lastEventId;
      response = await fetch('/notes/events', { headers, cache: 'no-store', signal: current.signal });
    } catch {
      failed(current);
      return;
    }
    if (stream !== current) return;
    if (!response.ok || !response.body) {
      refused(current);
      return;
    }
    lastByte = performance.now();
    opened();
    const parser = createParser(dispatch);
    try {
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done || stream !== current) break;
        lastByte = performance.now();
        parser(value);
      }
    } catch {
      // Cut off (or closed here): as an end.
    }
    failed(current);
  }

  /** One message of the stream (`id`, `event`, `data`, `retry` as the server sent them). */
  function dispatch({ id, event, data, retry: wait }) {
    if (wait !== undefined) retry = wait;
    if (id !== undefined) lastEventId = id;
    if (data === undefined) return; // an id (the first message), or a comment: nothing to tell
    if (event === 'reload') {
      handlers.reload();
      return;
    }
    if (!['note.created', 'note.updated', 'note.deleted'].includes(event)) return;
    const note = safeParse(data);
    if (note && typeof note.id === 'string') handlers.event(event, note);
  }

  // A page that is left may be kept in the back/forward cache: its stream would stay open and
  // hold one of the few connections the browser allows per server, so requests of the next page
  // wait for it. Close it as the page goes; a page shown again reconnects and catches up.
  window.addEventListener('pagehide', close);
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

/**
 * The event stream format (HTML's "server-sent events"; the server ends lines with `\n`): text
 * in, each message out as `{ id, event, data, retry }` with only the fields it had; a comment
 * (the heartbeat) is none.
 */
function createParser(onMessage) {
  let buffer = '';
  let message = {};
  return (text) => {
    buffer += text;
    const lines = buffer.split('\n');
    buffer = lines.pop(); // a line not ended yet
    for (const raw of lines) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line === '') {
        if (Object.keys(message).length) onMessage(message);
        message = {};
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') message.data = message.data === undefined ? value : `${message.data}\n${value}`;
      else if (field === 'event') message.event = value;
      else if (field === 'id' && !value.includes('\0')) message.id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) message.retry = Number(value);
    }
  };
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
