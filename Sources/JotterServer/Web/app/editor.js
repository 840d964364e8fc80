// The note editor: compose, edit, save, delete (to the trash, with Undo) and the note's history.
// A save names the version its text was made from, so the server merges it with changes saved
// elsewhere meanwhile; a newer saved version never silently replaces unsaved text, and only a
// save the server can't merge (a `409`) asks which version to keep.

import * as api from './api.js';
import { etagOf } from './api.js';
import { createAttachments } from './attachments.js';
import { announce, byId, el } from './dom.js';
import { confirmChoice, resolveConflict } from './dialogs.js';
import { formatDateTime, formatSince, markedAsCopy, titleAndPreview } from './format.js';
import { createHistory } from './history.js';
import { moveOffset, rebase } from './merge.js';
import * as store from './store.js';
import { isLocalID } from './store.js';

/** How long after the last keystroke the text is saved (a `data-autosave-delay` on <body> overrides it). */
const AUTOSAVE_DELAY = 1000;
/** How long "Note deleted" offers Undo (a restore from the trash). */
const UNDO_DELAY = 5000;
/** After an automatic save failed (the server away), when it is tried again: growing, then every 30 s. */
const RETRY_DELAYS = [2000, 5000, 10000, 30000];

/** A write to a note that is in the trash (`409`). */
const NOTE_DELETED = '/problems/note-deleted';

/**
 * `notes` is the list (`find`, `upsert`, `remove`, `neighbour`); `navigate(hash, { replace })`
 * changes the route; `toast(message, options)` shows a message in words (an error unless
 * `options.kind` says otherwise) and `clearError()` takes a stale error away after a success.
 * `sync` keeps what can't be sent now (`queue`): a write the server can't be reached for is
 * saved on this device (the note then has `pending`, its edit waiting) and sent later, in order.
 */
export function createEditor({ notes, navigate, toast, clearError, sync }) {
  const form = byId('editor');
  const textarea = byId('body');
  const saveState = byId('save-state');
  const notice = byId('editor-notice');

  let base = null; // the saved note the text is based on; null while composing a new note
  let remote = null; // a saved version the text can't be merged with (a 409, kept editing): a note, or { deleted: true }
  let overlap = null; // { text, regions, shown }: where the last merge kept both sides' text, in `text`
  let busy = false; // a save or delete is in flight
  let pending = null; // the latest event for this note that arrived while busy
  let opened = 0; // which open() is current, so a late answer for another note is dropped
  let loading = false; // the open note is not read yet
  let saving = null; // the save in flight, to wait for before leaving
  let autosaveTimer = null;
  let autosaveFailed = false; // the last automatic save failed: say so instead of "Unsaved changes"
  let retryTimer = null; // the next try of an automatic save that failed
  let retries = 0;
  let writes = 0; // writes started, so a save can tell whether it began after a draft was kept
  let draft = null; // { key, after, token }: the text kept at once as the page went (flush), until a save covers it
  let sending = null; // the text of the save in flight

  const isOpen = () => !form.hidden;
  const isDirty = () => isOpen() && textarea.value !== (base?.body ?? '');

  const attachments = createAttachments({
    ensureNote: async () => {
      if (loading) return null;
      if (!base) await save();
      return base;
    },
    refresh: reread,
    toast,
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    save();
  });
  textarea.addEventListener('input', () => {
    render();
    scheduleAutosave();
  });
  textarea.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      save();
    }
  });
  byId('delete').addEventListener('click', () => remove());

  const history = createHistory({ toast, restored });
  byId('history').addEventListener('click', async () => {
    if (busy || loading || !base) return;
    if (isDirty()) await save(); // the history shows saved versions: the text joins them first
    if (base) history.open(base);
  });

  function show() {
    form.hidden = false;
    byId('placeholder').hidden = true;
  }

  function load(note) {
    base = note;
    remote = null;
    overlap = null;
    textarea.value = note?.body ?? '';
    render();
  }

  function render() {
    const dirty = isDirty();
    textarea.readOnly = loading;
    byId('editor-title').textContent = loading ? 'Loading…'
      : base ? titleAndPreview(base.body).title || 'Untitled note' : 'New note';
    const count = base?.attachments?.length ?? 0;
    const facts = loading ? [] : !base ? ['Not saved yet']
      : [`Created ${formatDateTime(base.created_at)}`,
        base.updated_at !== base.created_at ? `edited ${formatSince(base.created_at, base.updated_at)}` : null,
        count ? `${count} ${count === 1 ? 'attachment' : 'attachments'}` : null].filter(Boolean);
    // Each fact in its own span, so a line breaks between facts, not inside one.
    byId('editor-meta').replaceChildren(...facts.flatMap((fact, index) => [index ? ' · ' : '', el('span', {}, fact)]));
    saveState.textContent = busy ? 'Saving…' : dirty ? (autosaveFailed ? 'Not saved yet' : 'Unsaved changes')
      : base?.held ? 'Not saved' : base?.pending ? 'Saved on this device' : base ? 'Saved' : '';
    saveState.dataset.state = busy ? 'busy' : dirty || base?.held ? 'dirty' : 'saved';
    byId('delete').textContent = base || loading ? 'Delete' : 'Discard';
    byId('history').hidden = !base || isLocalID(base.id);
    form.setAttribute('aria-busy', String(busy || loading));
    renderNotice();
    attachments.render(base);
  }

  function renderNotice() {
    const actions = byId('editor-notice-actions');
    const held = !remote && !overlap && base?.held;
    notice.hidden = !remote && !overlap && !held;
    notice.dataset.kind = remote || held ? 'warning' : 'info';
    const button = (label, kind, action) => el('button', { type: 'button', class: `button small ${kind}`, onclick: action }, label);
    if (!remote && overlap) {
      const count = overlap.regions.length;
      byId('editor-notice-text').textContent = `This note was also changed elsewhere, in the same ${count === 1 ? 'place' : `${count} places`} `
        + 'as your edit. Both versions of that text are kept, one after the other: keep what you want.';
      actions.replaceChildren(
        button(count === 1 ? 'Show it' : 'Show next', 'subtle', () => showOverlap()),
        button('Dismiss', 'subtle', () => { overlap = null; render(); textarea.focus(); }));
      return;
    }
    if (held) {
      // An edit the server refused (too large…): its text is here, kept on this device, not saved.
      byId('editor-notice-text').textContent = `This text could not be saved: ${base.held} `
        + 'It is kept on this device: change it, and it is saved.';
      actions.replaceChildren();
      return;
    }
    if (!remote) return;
    if (remote.deleted) {
      byId('editor-notice-text').textContent = 'This note was deleted elsewhere. Your text is still here.';
      actions.replaceChildren(
        button('Save as a new note', 'primary', () => { base = null; remote = null; save(); }),
        button('Restore it', 'subtle', () => restoreDeleted()),
        button('Discard', 'subtle', () => { const id = base?.id; forgetDraft(); load(null); if (id) notes.remove(id); navigate('#/'); }));
    } else {
      byId('editor-notice-text').textContent =
        `Your text could not be merged with the version saved elsewhere (${formatDateTime(remote.updated_at)}). It is kept here, not saved.`;
      actions.replaceChildren(button('Compare versions…', 'subtle', () => settle(remote)));
    }
  }

  /** Opens a new, empty note. */
  function openNew() {
    opened += 1;
    load(null);
    show();
    textarea.focus();
  }

  /** Opens note `id`: at once from the list when it is there, then fresh from the server. */
  async function openNote(id) {
    const token = ++opened;
    if (base?.id !== id) {
      const known = notes.find(id) ?? await store.getNote(id).catch(() => null);
      if (token !== opened) return;
      loading = !known;
      load(known ?? null);
    }
    show();
    if (matchMedia('(min-width: 761px)').matches) textarea.focus();
    else byId('editor-title').focus();
    if (isLocalID(id) && base) return; // not on the server yet
    try {
      const note = await api.getNote(id);
      if (token !== opened) return;
      if (loading) {
        loading = false;
        load(note);
      } else {
        incoming('note.updated', note);
      }
    } catch (error) {
      if (token !== opened) return;
      loading = false;
      render();
      if (error.status === 0 && base) {
        sync.unreachable(); // the copy kept here is open
      } else if (error.status === 404 || (isLocalID(id) && !base)) {
        // A link to a note that is gone: back to the list, never an empty "New note".
        notes.remove(id);
        close();
        navigate('#/', { replace: true });
        toast(`There is no note ${id}: it may have been deleted.`);
      } else {
        toast(`Couldn't open the note: ${error.message}`);
      }
    }
  }

  function close() {
    opened += 1;
    loading = false;
    clearTimeout(autosaveTimer);
    clearTimeout(retryTimer);
    retries = 0;
    load(null);
    form.hidden = true;
    byId('placeholder').hidden = false;
  }

  /** Takes `note`, kept on this device with its edit waiting, as the text's base. */
  function queued(note) {
    base = note;
    notes.upsert(note);
  }

  /**
   * The server answered a waiting edit (`answer.seq`, with the text `sent` and its `merge`) with
   * `note`, or the note changed on the server: the open note's text becomes the server's, merged,
   * when it was that edit's.
   */
  function synced(note, answer = {}) {
    if (isOpen() && base && answer.seq && base.pending === answer.seq) {
      if (busy) {
        pending = ['synced', note, answer];
        return;
      }
      if (note.id !== base.id) navigate(`#/notes/${note.id}`, { replace: true });
      saved(answer.sent, { note, merge: answer.merge }, true);
      render();
    } else {
      incoming('note.updated', note);
    }
  }

  /** The server refused the waiting edit of `note` (`note.held` says why): its text stays, unsaved. */
  function held(note) {
    if (!isOpen() || !base || base.id !== note.id || base.pending !== note.pending) return;
    base = { ...base, held: note.held };
    render();
  }

  /**
   * The page is hidden or going (a phone's app switcher): the text typed is kept on this device
   * at once, before any request (a closing page may be gone before an answer, or before
   * IndexedDB has written anything), then saved as usual. The next start saves what was kept
   * (`recover`) unless a save made after it got through first. The draft's key is the save's
   * Idempotency-Key, so a save that got through is not made twice.
   */
  function flush() {
    if (!isOpen() || loading || remote || !isDirty()) return;
    if (!base && !textarea.value.trim()) return;
    if (draft?.token === opened) store.dropDraft(draft.key); // this text is newer
    const key = crypto.randomUUID();
    store.keepDraft({ key, note: base, body: textarea.value, sending: busy ? sending : null, at: Date.now() });
    draft = { key, after: writes, token: opened };
    save({ auto: true, key });
  }

  /** The text kept by `flush` is not wanted (discarded), or a later save has it. */
  function forgetDraft() {
    if (draft?.token !== opened) return;
    store.dropDraft(draft.key);
    draft = null;
  }

  /**
   * Text a page kept on this device as it went (`flush`) that was not saved before it was
   * gone: saved now, as it would have been then (sent with the draft's key, so a save that got
   * through is answered, not made twice), or queued when the server can't be reached.
   */
  async function recover() {
    if (!store.isCurrent()) return;
    for (const kept of store.drafts()) {
      try {
        await recoverDraft(kept);
        store.dropDraft(kept.key);
      } catch {
        // This browser's copy can't be written now: the draft stays for the next start.
      }
    }
  }

  /**
   * Saves draft `kept` (see `recover`), or queues it: a draft the server did not take now (away,
   * signed out, busy, or refused as it is) goes to the outbox, whose rules decide — sent later,
   * or kept on this device as an edit the server refused (`held`: too large…) — never dropped.
   */
  async function recoverDraft(kept) {
    const { key, body } = kept;
    let from = kept.note;
    // This browser's copy has it already (saved, or queued in time): nothing to do.
    if (from ? (await store.getNote(from.id).catch(() => null))?.body === body
      : (await store.outbox()).some((entry) => entry.key === key)) return;
    if (!sync.waiting() && !(from && (from.pending || isLocalID(from.id)))) {
      try {
        if (!from) {
          notes.upsert(await api.createNote(body, { key }));
          return;
        }
        const now = await api.getNote(from.id);
        if (now.body === body) {
          notes.upsert(now);
          return;
        }
        // A save was on its way as the page went, and got through: the text goes from it.
        if (typeof kept.sending === 'string' && now.body === kept.sending) from = now;
        notes.upsert((await api.updateNote(from.id, body, { base: from.version, key })).note);
        return;
      } catch {
        // Not taken now: queued below (a note gone, or an edit the server can't merge: the
        // outbox keeps it as a new note; one refused as it is: held there).
      }
    }
    await sync.queue(from ? 'edit' : 'create', { note: from, body, key });
  }
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') flush();
  });
  window.addEventListener('pagehide', flush);

  /** Note `localID`, created here, is on the server as `note`. */
  function renamed(localID, note) {
    if (base?.id !== localID) return;
    base = { ...base, id: note.id };
    navigate(`#/notes/${note.id}`, { replace: true });
  }

  /** Takes `note` as the saved state after our own write. */
  function adopt(note) {
    base = note;
    if (remote && !remote.deleted && remote.version <= note.version) remote = null;
    notes.upsert(note);
  }

  /** A change to a note made elsewhere (an event, or a fresh read). */
  function incoming(kind, note) {
    if (!isOpen() || !base || note.id !== base.id) return;
    if (busy) {
      pending = [kind, note];
      return;
    }
    if (kind === 'note.deleted') {
      if (isDirty()) {
        remote = { deleted: true };
        render();
      } else {
        close();
        navigate('#/', { replace: true });
        toast('This note was deleted elsewhere.', { kind: 'info' });
      }
      return;
    }
    if (remote?.deleted) remote = null; // back from the trash
    if (base.pending) return; // its waiting edit's answer (synced) brings the server's text, merged
    if (note.version <= base.version) return;
    if (note.body === base.body || note.body === textarea.value) {
      // Only attachments changed, or it now says what the text says: nothing to choose.
      adopt(note);
    } else if (!isDirty()) {
      const { selectionStart, selectionEnd } = textarea;
      const before = textarea.value;
      load(note);
      textarea.setSelectionRange(moveOffset(selectionStart, before, note.body), moveOffset(selectionEnd, before, note.body));
      announce('This note was updated elsewhere');
    } else if (remote) {
      remote = note; // what "Compare versions" shows
    } else {
      // The text stays based on the version it was made from: its save is merged with this one.
      announce('This note was changed elsewhere too; your changes are merged with it when saved');
    }
    render();
  }

  /** Runs a write with the editor marked busy; resolves to its error, if it failed. */
  async function run(work) {
    busy = true;
    render();
    try {
      await work();
      return null;
    } catch (error) {
      return error;
    } finally {
      busy = false;
      const event = pending;
      pending = null;
      render();
      if (event?.[0] === 'synced') synced(event[1], event[2]);
      else if (event) incoming(...event);
    }
  }

  /** Saves the text a moment after typing stops, with the same If-Match rules as Save. */
  function scheduleAutosave() {
    clearTimeout(autosaveTimer);
    const delay = Number(document.body.dataset.autosaveDelay) || AUTOSAVE_DELAY;
    autosaveTimer = setTimeout(autosave, delay);
  }

  async function autosave() {
    // A newer version saved elsewhere waits for the user's choice (the notice offers it).
    if (!isOpen() || loading || remote || !isDirty()) return;
    if (busy) {
      scheduleAutosave();
      return;
    }
    if (!base && !textarea.value.trim()) return; // no empty notes from a stray keystroke
    await save({ auto: true });
  }

  /** Saves the text: creates the note, or writes over the version it is based on. */
  function save({ auto = false, key } = {}) {
    if (busy || loading || !isOpen() || remote?.deleted) return saving ?? Promise.resolve();
    if (base && !isDirty() && !remote) {
      if (!auto) announce('Already saved');
      return Promise.resolve();
    }
    clearTimeout(autosaveTimer);
    saving = write(textarea.value, auto, key).finally(() => { saving = null; });
    return saving;
  }

  async function write(body, auto, key = undefined) {
    // The note this text is of: if another is opened before the answer comes (whatever the
    // timing), the answer is listed, and nothing of it goes into the other note's editor.
    const token = opened;
    const here = () => token === opened;
    const address = location.hash; // a click elsewhere while it saves changes it: that click wins
    const started = ++writes;
    sending = body;
    const failure = await run(async () => {
      // Behind edits still waiting, or when the server can't be reached: saved here, sent later.
      const keep = (work) => work.catch(async (error) => {
        if (error.status !== 0) throw error;
        sync.unreachable();
        return null;
      });
      const from = base;
      if (!from) {
        key ??= crypto.randomUUID(); // kept with the edit if it must wait: never created twice
        const note = sync.waiting() ? null : await keep(api.createNote(body, { key }));
        const kept = note ? null : await sync.queue('create', { body, key });
        if (!here()) {
          notes.upsert(note ?? kept);
          return;
        }
        if (note) adopt(note);
        else queued(kept);
        if (location.hash === address) navigate(`#/notes/${base.id}`, { replace: true });
      } else {
        const answer = from.pending || sync.waiting() ? null : await keep(api.updateNote(from.id, body, { base: from.version, key }));
        const kept = answer ? null : await sync.queue('edit', { note: from, body, key });
        if (!here()) {
          if (answer?.note ?? kept) notes.upsert(answer?.note ?? kept);
          return;
        }
        if (answer) saved(body, answer, auto);
        else queued(kept);
      }
      autosaveFailed = false;
      clearError();
      if (!auto) announce('Note saved');
    });
    // The text kept as the page went is in this save, or in this browser's outbox now.
    if (!failure && draft?.token === token && started > draft.after) {
      store.dropDraft(draft.key);
      draft = null;
    }
    if (!here()) {
      // Another note is open now: this one's failure is said, with its title.
      if (failure) toast(`Couldn't save “${titleAndPreview(body).title || 'Untitled note'}”: ${failure.message}`);
      return;
    }
    if (!failure) {
      clearTimeout(retryTimer);
      retries = 0;
      if (isDirty()) scheduleAutosave(); // typed on while it was saving
      return;
    }
    if (failure.status === 413) {
      await tooLarge(body, key, failure);
      return;
    }
    if (auto && ![404, 409, 412].includes(failure.status)) {
      // Said once, in the editor; tried again by itself a little later (and at once when the
      // live updates are back, or at the next keystroke).
      if (!autosaveFailed) toast(`Couldn't save: ${failure.message}`);
      autosaveFailed = true;
      render();
      if (failure.status !== 401) {
        clearTimeout(retryTimer);
        retryTimer = setTimeout(autosave, RETRY_DELAYS[Math.min(retries, RETRY_DELAYS.length - 1)]);
        retries += 1;
      }
      return;
    }
    await failed(failure, "Couldn't save");
  }

  /**
   * The server refused `body` as too large (`413`): that is final for this text, sent again it
   * is refused again. It is not tried again: it is kept on this device, as an edit refused from
   * the outbox is (`held`: the note shows the text and why; the header counts it "not saved"),
   * until it is changed; the user is told how large a note may be.
   */
  async function tooLarge(body, key, failure) {
    clearTimeout(retryTimer);
    retries = 0;
    autosaveFailed = false;
    const address = location.hash;
    const token = opened;
    let kept = null;
    try {
      kept = await sync.hold(base ? 'edit' : 'create', { note: base, body, key }, failure.message);
    } catch (error) {
      console.error("Jotter: a note too large to save could not be kept on this device.", error);
    }
    toast(`This note is too large to save: ${failure.message} It is kept on this device: shorten it, and it is saved.`);
    if (!kept) {
      render();
      return;
    }
    if (token !== opened) {
      notes.upsert(kept);
      return;
    }
    const created = !base;
    queued(kept);
    if (created && location.hash === address) navigate(`#/notes/${kept.id}`, { replace: true });
    render();
  }

  /**
   * Takes in the answer to saving `sent` (`{note, merge}`): the text becomes the saved note, merged
   * with changes made elsewhere when it was, with what was typed meanwhile kept where it was typed.
   */
  function saved(sent, { note, merge }, auto) {
    const now = textarea.value;
    const text = rebase(sent, now, note.body);
    if (text === null) {
      // Typed on where the merge changed the text: it stays based on the version it was made
      // from, and its next save is merged again (both sides' text kept, none lost).
      notes.upsert(note);
      return;
    }
    const { selectionStart, selectionEnd } = textarea;
    adopt(note);
    overlap = null;
    if (text !== now) {
      textarea.value = text;
      textarea.setSelectionRange(moveOffset(selectionStart, now, text), moveOffset(selectionEnd, now, text));
    }
    if (merge?.result === 'overlap' && merge.regions?.length) {
      const regions = merge.regions.map(({ start, end }) =>
        ({ start: moveOffset(start, note.body, text), end: moveOffset(end, note.body, text) }));
      overlap = { text, regions, shown: -1 };
      render();
      // Selected at once unless the user may be typing on (a keystroke would replace it).
      if (!auto || document.activeElement !== textarea) showOverlap();
      else announce('Merged with changes made elsewhere; both versions of some text are kept');
    } else if (merge) {
      announce('Merged with changes made elsewhere');
    }
  }

  /** Selects the next place where the last merge kept both sides' text. */
  function showOverlap() {
    if (!overlap) return;
    overlap.shown = (overlap.shown + 1) % overlap.regions.length;
    const { start, end } = overlap.regions[overlap.shown];
    const [from, to] = [moveOffset(start, overlap.text, textarea.value), moveOffset(end, overlap.text, textarea.value)];
    textarea.focus();
    textarea.setSelectionRange(from, to);
    // Scrolled into view: the caret's line, measured by the text before it.
    const lines = textarea.value.slice(0, from).split('\n').length;
    const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 24;
    textarea.scrollTop = Math.max(0, (lines - 3) * lineHeight);
  }

  /**
   * After a failed write: a `409` the server couldn't merge (or `412` over a version) opens the
   * conflict dialog; a note in the trash or gone is deleted elsewhere.
   */
  async function failed(error, what) {
    if (error.status === 409 && error.type === NOTE_DELETED && base) incoming('note.deleted', { id: base.id });
    else if (error.status === 409 && error.problem?.note && base) await settle(error.problem.note, error.type);
    else if (error.status === 412) await settle(null);
    else if (error.status === 404 && base) incoming('note.deleted', { id: base.id });
    else toast(`${what}: ${error.message}`);
  }

  /**
   * Lets the user choose between the saved version (`theirs`, fetched when null) and the text;
   * `why` is the problem type of the `409` that made the merge impossible.
   */
  async function settle(theirs, why = null) {
    const id = base.id;
    try {
      theirs = theirs ?? await api.getNote(id);
    } catch (error) {
      if (error.status === 404) incoming('note.deleted', { id });
      else toast(`Couldn't read the saved version: ${error.message}`);
      return;
    }
    const mine = textarea.value;
    if (theirs.body === base.body || theirs.body === mine) {
      // Only its attachments changed (or it already says what the text says): no text to lose.
      incoming('note.updated', theirs);
      if (isDirty()) await save();
      return;
    }
    const choice = await resolveConflict({ theirs, mine, why });
    if (choice === 'theirs') {
      forgetDraft(); // the text kept as the page went is the one given up
      load(theirs);
      notes.upsert(theirs);
      announce('Loaded the saved version');
    } else if (choice === 'mine') {
      const failure = await run(async () => {
        adopt((await api.updateNote(id, mine, { ifMatch: etagOf(theirs) })).note);
        announce('Your version is saved');
      });
      if (failure) await failed(failure, "Couldn't save"); // changed yet again: ask again
    } else if (choice === 'both') {
      const failure = await run(async () => {
        // A second note of the same title would be hard to tell apart: the new one says it is the copy.
        const copy = await api.createNote(markedAsCopy(mine));
        notes.upsert(theirs);
        adopt(copy);
        textarea.value = copy.body;
        navigate(`#/notes/${copy.id}`, { replace: true });
        announce('Your version is saved as a new note');
      });
      if (failure) toast(`Couldn't save your version: ${failure.message}`);
    } else {
      remote = theirs; // keep editing; the notice stays until it is settled
      render();
    }
  }

  /** Moves the open note to the trash after confirmation, with Undo (or discards a new one). */
  async function remove() {
    if (busy || loading) return;
    if (!base) {
      if (isDirty() && !(await confirmDiscard())) return;
      forgetDraft();
      load(null);
      navigate('#/');
      return;
    }
    const files = base.attachments?.length ?? 0;
    const choice = await confirmChoice({
      title: 'Delete this note?',
      text: `“${titleAndPreview(base.body).title || 'Untitled note'}”${files ? ` and its ${files} ${files === 1 ? 'attachment' : 'attachments'}` : ''} will be moved to Recently Deleted, where you can restore it.`,
      actions: [{ label: 'Cancel', value: null }, { label: 'Delete note', value: 'delete', kind: 'danger' }],
    });
    if (choice !== 'delete' || !base) return;
    if (isDirty()) await save(); // what Undo brings back is the text as it is now
    const note = base;
    // Where the keyboard goes on from: found now, for the note's own `note.deleted` event may
    // take it out of the list before the delete's answer comes.
    const focus = notes.neighbour(note.id);
    let later = false; // the server can't be reached: deleted here, the delete sent later
    const failure = await run(async () => {
      if (!note.pending && !sync.waiting()) {
        try {
          await api.deleteNote(note.id, etagOf(note));
        } catch (error) {
          if (error.status !== 0) throw error;
          later = true;
        }
      } else {
        later = true;
      }
      if (later) await sync.queue('delete', { note });
      load(null); // its note.deleted event, even one that came meanwhile, is ours: nothing to say
    });
    const title = titleAndPreview(note.body).title || 'Untitled note';
    if (!failure && later) {
      notes.remove(note.id);
      navigate('#/');
      toast('Note deleted on this device; the server is told once it can be reached.', { kind: 'info' });
      return;
    }
    if (failure && failure.status !== 404) {
      // Changed elsewhere meanwhile (412), or the server is away: it stays.
      toast(failure.status === 412 ? `“${title}” was changed elsewhere, so it was not deleted.`
        : `Couldn't delete “${title}”: ${failure.message}`);
      if (failure.status === 412) reread(note.id);
      return;
    }
    // The keyboard goes to Undo (its message stays while it is there, and is announced); once
    // the message goes, to the note listed after this one: never to the page's body.
    notes.remove(note.id);
    load(null);
    navigate('#/');
    toast('Note deleted', { kind: 'info', timeout: UNDO_DELAY, focus,
      action: { label: 'Undo', run: () => undoDelete(note) } });
  }

  /** Undo: the note comes back from the trash and is opened again. */
  async function undoDelete(note) {
    try {
      notes.upsert(await api.restoreFromTrash(note.id));
    } catch (error) {
      toast(`Couldn't restore “${titleAndPreview(note.body).title || 'Untitled note'}”: ${error.message}`);
      return;
    }
    navigate(`#/notes/${note.id}`);
    announce('Note restored');
  }

  /** The open note, deleted elsewhere while edited, comes back from the trash with the text saved into it. */
  async function restoreDeleted() {
    const id = base.id;
    const failure = await run(async () => {
      notes.upsert(await api.restoreFromTrash(id));
      remote = null;
    });
    if (failure) {
      toast(`Couldn't restore the note: ${failure.message}`);
      return;
    }
    announce('Note restored');
    if (isDirty()) await save(); // merged into it from the version the text was made from
  }

  /** A version from the history was restored (`note`, as it is now). */
  function restored(note, version) {
    notes.upsert(note);
    if (base?.id === note.id) {
      load(note);
      textarea.focus();
      textarea.setSelectionRange(0, 0);
    }
    announce(`Version ${version} restored`);
    toast(`Version ${version} restored. The version before it stays in the history.`, { kind: 'info' });
  }

  /** Reads note `id` again and takes it in as a change made elsewhere. */
  async function reread(id) {
    try {
      const note = await api.getNote(id);
      notes.upsert(note);
      incoming('note.updated', note);
    } catch (error) {
      if (error.status === 404) incoming('note.deleted', { id });
      else toast(error.message);
    }
  }

  function confirmDiscard() {
    return confirmChoice({
      title: 'Discard your changes?',
      text: 'This note has changes that are not saved.',
      actions: [{ label: 'Keep editing', value: null }, { label: 'Discard changes', value: 'discard', kind: 'danger' }],
    }).then((choice) => choice === 'discard');
  }

  /** Whether the editor may be left: asks to save or discard unsaved text first. */
  async function canLeave() {
    if (saving) await saving; // a save in flight decides by itself
    if (!isDirty()) return true;
    const choice = await confirmChoice({
      title: 'Save your changes?',
      text: 'This note has changes that are not saved yet.',
      actions: [{ label: 'Keep editing', value: null }, { label: 'Discard', value: 'discard', kind: 'danger' },
        { label: 'Save', value: 'save', kind: 'primary' }],
    });
    if (choice === 'save') {
      await save();
      return !isDirty();
    }
    if (choice === 'discard') forgetDraft();
    return choice === 'discard';
  }

  return {
    openNew, openNote, close, save, recover, incoming, synced, renamed, held, canLeave, isDirty, isOpen,
    /** The id of the open note, if it is saved. */
    get id() { return base?.id ?? null; },
    /** Re-reads the open note (after the event stream asked for a reload, or reconnected). */
    refresh: () => {
      if (isOpen() && base && !base.pending && !isLocalID(base.id)) reread(base.id);
      if (isDirty()) scheduleAutosave(); // an automatic save that failed meanwhile goes again
    },
    /** The server is back: an automatic save that failed goes again now. */
    retrySave: () => {
      if (!autosaveFailed || !isDirty()) return;
      clearTimeout(retryTimer);
      retries = 0;
      scheduleAutosave();
    },
  };
}
