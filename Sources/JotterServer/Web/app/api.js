// The Jotter HTTP API (docs/API.md): JSON requests, problem+json errors in words, uploads
// through XMLHttpRequest for their progress events, resumable (tus) across network drops.

const UNREACHABLE = "Can't reach the server. Check your connection; your text is still here.";
const TIMED_OUT = "The server didn't answer in time. Check your connection; your text is still here.";
/**
 * How long a request may go without a byte of its answer (a `data-request-timeout` on <body>
 * overrides it): past it, it is given up as if the network had dropped (status 0), so a server
 * or connection that hangs never holds the sync (and its lock) for good. Idle time, not the
 * whole: a large page of changes on a slow link takes longer than this while its bytes come.
 */
const REQUEST_TIMEOUT = 30000;

const requestTimeout = () => Number(document.body?.dataset.requestTimeout) || REQUEST_TIMEOUT;

/**
 * Calls `onIdle` once the request timeout passes with no `active()` since; `stop()` ends it.
 * Every request's timeout is this one timer, restarted by each sign of life of its transfer.
 */
function idleTimer(onIdle) {
  let timer = null;
  const active = () => {
    clearTimeout(timer);
    timer = setTimeout(onIdle, requestTimeout());
  };
  active();
  return { active, stop: () => clearTimeout(timer) };
}

/** A response's body as text, `onBytes()` called as each chunk arrives. */
async function readText(response, onBytes) {
  if (!response.body) return response.text();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    onBytes();
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * A failed request: `message` is the server's problem `detail`, in words; `type` the problem's
 * `type` (`/problems/unknown-base`…) and `problem` its whole body (a `409` carries the note).
 */
export class ApiError extends Error {
  constructor(message, { status = 0, etag = null, aborted = false, problem = null, retryAfter = null } = {}) {
    super(message);
    this.status = status;
    this.etag = etag;
    this.aborted = aborted;
    this.problem = problem;
    this.type = problem?.type ?? null;
    /** Seconds the server asked to wait before sending it again (`Retry-After`), when it did. */
    this.retryAfter = retryAfter;
  }
}

/** `Retry-After` in seconds: delay-seconds or an HTTP-date; null when absent or unreadable. */
function retryAfter(value) {
  if (!value) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000);
}

/** The strong ETag of a note version, for `If-Match`. */
export const etagOf = (note) => `"${note.version}"`;

function parse(text) {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/** `1 MiB` for 1048576: a limit as people say it (whole units when it is one; binary units, as counted). */
function limitInWords(bytes) {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

/**
 * What was too large, in a person's words: `413` answers name the limit in bytes and the
 * server option ("larger than the limit of 1048576 bytes (--max-body-size)").
 */
function tooLarge(data, what) {
  const limit = /limit of (\d+) bytes/.exec(data?.detail ?? '');
  const size = limit ? limitInWords(Number(limit[1])) : null;
  return size ? `${what} can be at most ${size}.` : `${what} are larger than the server accepts.`;
}

/** The error for a non-2xx answer: the problem's detail plus any field errors. */
function problem(status, statusText, data, etag, what = 'Notes', wait = null) {
  if (status === 413) return new ApiError(tooLarge(data, what), { status, etag });
  let message = data?.detail || data?.title || `The server answered ${status} ${statusText}`.trim();
  if (Array.isArray(data?.errors) && data.errors.length) {
    message += ` (${data.errors.map((e) => `${e.field} ${e.message}`).join('; ')})`;
  }
  return new ApiError(message, { status, etag, problem: data, retryAfter: retryAfter(wait) });
}

// The session's CSRF token (from sign-in or /auth/me), sent with every write.
let csrfToken = null;
// Called when the server answers 401: the session ended (or there never was one).
let unauthorized = () => {};

export function setSession(token) {
  csrfToken = token;
}

// A session cookie is expected though its CSRF token isn't known yet (the page started with the
// server away): the first write asks /auth/me for it, so no write goes without it (`403`).
let sessionExpected = false;

export function expectSession(expected) {
  sessionExpected = expected;
}

export function onUnauthorized(handler) {
  unauthorized = handler;
}

async function request(method, path, { json, ifMatch, key } = {}) {
  if (method !== 'GET' && sessionExpected && csrfToken === null && !path.startsWith('/auth/')) {
    try {
      setSession((await me()).csrf_token ?? null);
    } catch (error) {
      if (error.status === 401) unauthorized(); // the session ended while the server was away
      throw error;
    }
  }
  const headers = { Accept: 'application/json' };
  if (json !== undefined) headers['Content-Type'] = 'application/json';
  if (ifMatch) headers['If-Match'] = ifMatch;
  if (key) headers['Idempotency-Key'] = key;
  if (csrfToken && method !== 'GET') headers['X-CSRF-Token'] = csrfToken;
  const controller = new AbortController();
  let timedOut = false;
  const idle = idleTimer(() => {
    timedOut = true;
    controller.abort();
  });
  let response;
  let text;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: json === undefined ? undefined : JSON.stringify(json),
      cache: 'no-store',
      signal: controller.signal,
    });
    idle.active(); // the head came: a sign of life too
    // (A body cut off, by the network or the timeout, is no answer either: not an empty one.)
    text = await readText(response, idle.active);
  } catch {
    throw new ApiError(timedOut ? TIMED_OUT : UNREACHABLE);
  } finally {
    idle.stop();
  }
  const data = parse(text);
  if (response.status === 401 && !path.startsWith('/auth/')) unauthorized();
  if (response.status === 403 && method !== 'GET' && !path.startsWith('/auth/')) {
    // The token is not the session's (it was renewed elsewhere): the next write asks for it.
    csrfToken = null;
    sessionExpected = true;
  }
  if (!response.ok) {
    throw problem(response.status, response.statusText, data, response.headers.get('ETag'), 'Notes', response.headers.get('Retry-After'));
  }
  return data;
}

/** The signed-in user and the session's CSRF token; throws with status 401 when there is none. */
export const me = () => request('GET', '/auth/me');
/** Signs in for a session cookie; resolves to `{user, csrf_token, expires_at}`. */
export const signIn = (name, password) => request('POST', '/auth/sessions', { json: { name, password } });
export const signOut = () => request('DELETE', '/auth/sessions/current');

/** One page of notes: `{notes, next}`; `url` is `/notes?…` or a page's `next`. */
export const listNotes = (url) => request('GET', url);
export const getNote = async (id) => (await request('GET', `/notes/${encodeURIComponent(id)}`)).note;
/** Creates a note; `key`, an Idempotency-Key, makes a resend after a lost answer create nothing twice. */
export const createNote = async (body, { key } = {}) => (await request('POST', '/notes', { json: { body }, key })).note;

/**
 * Saves `body` as note `id`: `{ base }` names the version the text was made from, so the server
 * merges it with what was saved since (the answer is `{note, merge?}`; a `409` when it can't);
 * `{ ifMatch }` instead writes over exactly that version (`412` when it is not current).
 */
export const updateNote = (id, body, { base, ifMatch, key } = {}) =>
  request('PUT', `/notes/${encodeURIComponent(id)}`, { json: base ? { body, base_version: base } : { body }, ifMatch, key });

/** Moves note `id` to the trash if it is still `ifMatch` (whatever its version without). */
export const deleteNote = async (id, ifMatch, { key } = {}) =>
  (await request('DELETE', `/notes/${encodeURIComponent(id)}`, { ifMatch, key })).note;

/**
 * One page of the change feed after `cursor` (everything when there is none yet):
 * `{changes, cursor, more, reset}`, each change a note or `{id, version, deleted: true}`.
 */
export const changes = (cursor) =>
  request('GET', `/notes/changes?limit=500${cursor === undefined || cursor === null ? '' : `&since=${encodeURIComponent(cursor)}`}`);

/** One page of a note's revisions, newest first: `{revisions, next}`; `url` as for `listNotes`. */
export const listRevisions = (url) => request('GET', url);
export const getRevision = async (id, version) =>
  (await request('GET', `/notes/${encodeURIComponent(id)}/revisions/${encodeURIComponent(version)}`)).revision;
/** Makes revision `version` the note's text again (at a new version); the note as it is now. */
export const restoreRevision = async (id, version) =>
  (await request('POST', `/notes/${encodeURIComponent(id)}/restore`, { json: { version } })).note;

/** One page of the trash, latest deletion first: `{notes, next}` (each note with `deleted_at`). */
export const listTrash = (url) => request('GET', url);
/** Brings note `id` back from the trash (same id, text and attachments); the note. */
export const restoreFromTrash = async (id) =>
  (await request('POST', `/notes/${encodeURIComponent(id)}/restore`, { json: {} })).note;
/**
 * Deletes note `id` from the trash, for good, if it is still `ifMatch` there (`412` when it was
 * restored and deleted again since: a later version).
 */
export const deleteForever = (id, ifMatch) => request('DELETE', `/notes/trash/${encodeURIComponent(id)}`, { ifMatch });

export const deleteUpload = async (id) => (await request('DELETE', `/uploads/${encodeURIComponent(id)}`)).upload;

/** One page of uploads: `{uploads, next}`; `url` is `/uploads?…` or a page's `next`. */
export const listUploads = (url) => request('GET', url);

/** Attaches upload `id` to note `noteId` (`''`: to no note); the upload as it is now. */
export const attachUpload = async (id, noteId) =>
  (await request('PATCH', `/uploads/${encodeURIComponent(id)}`, { json: { note_id: noteId } })).upload;

const TUS = { 'Tus-Resumable': '1.0.0' };
const CHUNK = 4 * 1024 * 1024;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const base64 = (text) => btoa(Array.from(new TextEncoder().encode(text), (byte) => String.fromCharCode(byte)).join(''));

/**
 * One XMLHttpRequest (for its upload progress); resolves to it on any answer, rejects on a
 * network failure (`status` 0) or an abort. `state.xhr` is the request under way. A request
 * that moves no byte either way for the request timeout (a hung server or link) is given up
 * as a network failure, so a resumable upload asks how far it got and goes on: a request's
 * whole time is no measure here (a chunk takes minutes on a slow link), its idle time is.
 */
function send(method, url, state, { headers = {}, body = null, onProgress } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    state.xhr = xhr;
    let timedOut = false;
    let idle = null; // from the send on
    const active = () => idle?.active();
    xhr.addEventListener('loadend', () => idle?.stop());
    xhr.upload.addEventListener('progress', active);
    xhr.addEventListener('progress', active);
    xhr.addEventListener('readystatechange', active);
    xhr.open(method, url);
    xhr.setRequestHeader('Accept', 'application/json');
    if (csrfToken) xhr.setRequestHeader('X-CSRF-Token', csrfToken);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    if (onProgress) xhr.upload.addEventListener('progress', (event) => onProgress(event.loaded));
    xhr.addEventListener('load', () => {
      if (xhr.status === 401) unauthorized();
      resolve(xhr);
    });
    xhr.addEventListener('error', () => reject(new ApiError(
      "The upload didn't go through: the server closed the connection or can't be reached.")));
    xhr.addEventListener('abort', () => reject(timedOut ? new ApiError(
      "The upload stalled: the server didn't answer in time.") : new ApiError('Upload cancelled.', { aborted: true })));
    xhr.send(body);
    idle = idleTimer(() => {
      timedOut = true;
      xhr.abort();
    });
  });
}

/**
 * Uploads `file` attached to note `noteId`, calling `onProgress(loaded, total)` as bytes go out.
 * Resumable (tus 1.0 over `/uploads`, in 4 MiB chunks): when the network drops, it waits, asks
 * the server how far it got (`HEAD`) and sends only the rest; `loaded` counts what the server
 * has. Returns `{ done, abort }`: `done` resolves to the created uploads; `abort` cancels (and
 * deletes what was sent).
 */
export function uploadFile(file, noteId, onProgress) {
  const state = { xhr: null, aborted: false, location: null };
  const refused = (xhr) => problem(xhr.status, xhr.statusText, parse(xhr.responseText), null, 'Files');
  const done = (async () => {
    const created = await send('POST', `/uploads?note_id=${encodeURIComponent(noteId)}`, state, { headers: {
      ...TUS, 'Upload-Length': String(file.size),
      'Upload-Metadata': `filename ${base64(file.name)},filetype ${base64(file.type || 'application/octet-stream')}`,
    } });
    if (created.status !== 201) throw refused(created);
    if (file.size === 0) return parse(created.responseText)?.uploads ?? [];
    state.location = created.getResponseHeader('Location');
    let offset = 0;
    let failures = 0;
    while (offset < file.size) {
      if (state.aborted) throw new ApiError('Upload cancelled.', { aborted: true });
      const start = offset;
      try {
        const xhr = await send('PATCH', state.location, state, {
          headers: { ...TUS, 'Upload-Offset': String(start), 'Content-Type': 'application/offset+octet-stream' },
          body: file.slice(start, Math.min(file.size, start + CHUNK)),
          onProgress: (loaded) => onProgress(start + loaded, file.size),
        });
        if (xhr.status !== 204 && xhr.status !== 409) throw refused(xhr);
        offset = Number(xhr.getResponseHeader('Upload-Offset') ?? start);
        failures = 0;
        onProgress(offset, file.size);
      } catch (error) {
        if (error.aborted || error.status || failures >= 60) throw error;
        // The network dropped: wait, then go on from what the server has.
        failures += 1;
        await sleep(Math.min(500 * failures, 5000));
        try {
          const head = await send('HEAD', state.location, state, { headers: TUS });
          if (head.status === 200) offset = Number(head.getResponseHeader('Upload-Offset') ?? offset);
          else if (head.status === 404) throw refused(head);
        } catch (again) {
          if (again.aborted || again.status) throw again;
        }
      }
    }
    const id = state.location.split('/').pop();
    return [(await request('GET', `/uploads/${encodeURIComponent(id)}`)).upload];
  })();
  const abort = () => {
    state.aborted = true;
    state.xhr?.abort();
    if (state.location) send('DELETE', state.location, { xhr: null }, { headers: TUS }).catch(() => {});
  };
  return { done, abort };
}
