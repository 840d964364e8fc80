// The note editor: compose, edit, save with If-Match, delete with confirmation, and the
// conflict rules: a newer saved version never silently replaces unsaved text, and saving never
// silently overwrites a newer saved version.

import * as api from './api.js';
import { etagOf } from './api.js';
import { createAttachments } from './attachments.js';
import { announce, byId, el } from './dom.js';
import { confirmChoice, resolveConflict } from './dialogs.js';
import { formatDateTime, formatSince, titleAndPreview } from './format.js';

/**
 * `notes` is the list (`find`, `upsert`, `remove`); `navigate(hash, { replace })` changes the
 * route; `toast(message)` shows an error in words.
 */
export function createEditor({ notes, navigate, toast }) {
  const form = byId('editor');
  const textarea = byId('body');
  const saveState = byId('save-state');
  const notice = byId('editor-notice');

  let base = null; // the saved note the text is based on; null while composing a new note
  let remote = null; // a newer saved version that differs from the text: a note, or { deleted: true }
  let busy = false; // a save or delete is in flight
  let pending = null; // the latest event for this note that arrived while busy
  let opened = 0; // which open() is current, so a late answer for another note is dropped
  let loading = false; // the open note is not read yet

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
  textarea.addEventListener('input', render);
  textarea.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      save();
    }
  });
  byId('delete').addEventListener('click', () => remove());

  function show() {
    form.hidden = false;
    byId('placeholder').hidden = true;
  }

  function load(note) {
    base = note;
    remote = null;
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
    saveState.textContent = busy ? 'Saving…' : dirty ? 'Unsaved changes' : base ? 'Saved' : '';
    saveState.dataset.state = busy ? 'busy' : dirty ? 'dirty' : 'saved';
    byId('delete').textContent = base || loading ? 'Delete' : 'Discard';
    form.setAttribute('aria-busy', String(busy || loading));
    renderNotice();
    attachments.render(base);
  }

  function renderNotice() {
    const actions = byId('editor-notice-actions');
    notice.hidden = !remote;
    if (!remote) return;
    const button = (label, kind, action) => el('button', { type: 'button', class: `button small ${kind}`, onclick: action }, label);
    if (remote.deleted) {
      byId('editor-notice-text').textContent = 'This note was deleted elsewhere. Your text is still here.';
      actions.replaceChildren(
        button('Save as a new note', 'primary', () => { base = null; remote = null; save(); }),
        button('Discard', 'subtle', () => { const id = base?.id; load(null); if (id) notes.remove(id); navigate('#/'); }));
    } else {
      byId('editor-notice-text').textContent =
        `A newer version was saved elsewhere (${formatDateTime(remote.updated_at)}). Your unsaved text is kept.`;
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
      const known = notes.find(id);
      loading = !known;
      load(known ?? null);
    }
    show();
    if (matchMedia('(min-width: 761px)').matches) textarea.focus();
    else byId('editor-title').focus();
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
      if (error.status === 404) {
        notes.remove(id);
        navigate('#/', { replace: true });
        toast(`That note doesn't exist any more: ${error.message}.`);
      } else {
        toast(`Couldn't open the note: ${error.message}`);
      }
    }
  }

  function close() {
    opened += 1;
    loading = false;
    load(null);
    form.hidden = true;
    byId('placeholder').hidden = false;
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
        toast('The note you had open was deleted elsewhere.');
      }
      return;
    }
    if (note.version <= base.version) return;
    if (note.body === base.body || note.body === textarea.value) {
      // Only attachments changed, or it now says what the text says: nothing to choose.
      adopt(note);
    } else if (!isDirty()) {
      const { selectionStart, selectionEnd } = textarea;
      load(note);
      textarea.setSelectionRange(selectionStart, selectionEnd);
      announce('This note was updated elsewhere');
    } else {
      remote = note;
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
      if (event) incoming(...event);
    }
  }

  /** Saves the text: creates the note, or writes over the version it is based on. */
  async function save() {
    if (busy || loading || !isOpen() || remote?.deleted) return;
    if (base && !isDirty() && !remote) {
      announce('Already saved');
      return;
    }
    const body = textarea.value;
    const failure = await run(async () => {
      if (!base) {
        const note = await api.createNote(body);
        adopt(note);
        navigate(`#/notes/${note.id}`, { replace: true });
      } else {
        adopt(await api.updateNote(base.id, body, etagOf(base)));
      }
      announce('Note saved');
    });
    if (failure) await failed(failure, "Couldn't save");
  }

  /** After a failed write: 412 opens the conflict dialog, 404 means deleted elsewhere. */
  async function failed(error, what) {
    if (error.status === 412) await settle(null);
    else if (error.status === 404 && base) incoming('note.deleted', { id: base.id });
    else toast(`${what}: ${error.message}`);
  }

  /** Lets the user choose between the saved version (`theirs`, fetched when null) and the text. */
  async function settle(theirs) {
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
    const choice = await resolveConflict({ theirs, mine });
    if (choice === 'theirs') {
      load(theirs);
      notes.upsert(theirs);
      announce('Loaded the saved version');
    } else if (choice === 'mine') {
      const failure = await run(async () => {
        adopt(await api.updateNote(id, mine, etagOf(theirs)));
        announce('Your version is saved');
      });
      if (failure) await failed(failure, "Couldn't save"); // changed yet again: ask again
    } else if (choice === 'both') {
      const failure = await run(async () => {
        const copy = await api.createNote(mine);
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

  /** Deletes the open note after confirmation (or discards a new one). */
  async function remove() {
    if (busy || loading) return;
    if (!base) {
      if (isDirty() && !(await confirmDiscard())) return;
      load(null);
      navigate('#/');
      return;
    }
    const note = base;
    const files = note.attachments?.length ?? 0;
    const choice = await confirmChoice({
      title: 'Delete this note?',
      text: `“${titleAndPreview(note.body).title || 'Untitled note'}”${files ? ` and its ${files} ${files === 1 ? 'attachment' : 'attachments'}` : ''} will be deleted. This can't be undone.`,
      actions: [{ label: 'Cancel', value: null }, { label: 'Delete note', value: 'delete', kind: 'danger' }],
    });
    if (choice !== 'delete') return;
    let ifMatch = etagOf(note);
    for (;;) {
      try {
        await api.deleteNote(note.id, ifMatch);
        break;
      } catch (error) {
        if (error.status === 404) break;
        if (error.status !== 412) {
          toast(`Couldn't delete: ${error.message}`);
          return;
        }
        const again = await confirmChoice({
          title: 'This note changed since you opened it',
          text: 'A newer version was saved elsewhere. Delete it anyway, or look at it first?',
          actions: [{ label: 'Show the newer version', value: 'show' }, { label: 'Delete anyway', value: 'delete', kind: 'danger' }],
        });
        if (again !== 'delete') {
          reread(note.id);
          return;
        }
        ifMatch = error.etag ?? '*';
      }
    }
    notes.remove(note.id);
    load(null);
    navigate('#/');
    announce('Note deleted');
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
    return choice === 'discard';
  }

  return {
    openNew, openNote, close, save, incoming, canLeave, isDirty, isOpen,
    /** The id of the open note, if it is saved. */
    get id() { return base?.id ?? null; },
    /** Re-reads the open note (after the event stream asked for a reload). */
    refresh: () => { if (isOpen() && base) reread(base.id); },
  };
}
