// The files attached to no note (`GET /uploads?note_id=`, `#/files`): download one, attach it
// to a note, or delete it.

import * as api from './api.js';
import { deleteAfterAsking, fileSummary } from './attachments.js';
import { byId, el } from './dom.js';
import { formatDateTime, titleAndPreview } from './format.js';

const FIRST_PAGE = '/uploads?note_id=&limit=50';

/**
 * `notes.all()` gives the loaded notes (the choices to attach to); `toast(message, options)`
 * shows a message, `clearError()` takes a stale error away.
 */
export function createFiles({ notes, toast, clearError }) {
  const section = byId('files');
  const list = byId('file-list');
  const more = byId('files-more');
  let uploads = [];
  let next = null;
  let loading = false;
  let request = 0; // the current listing, so late answers to older ones are dropped

  more.addEventListener('click', () => {
    if (next && !loading) load(next);
  });

  async function load(url) {
    const token = ++request;
    loading = true;
    render();
    try {
      const page = await api.listUploads(url);
      if (token !== request) return;
      const known = new Set(uploads.map((upload) => upload.id));
      uploads.push(...page.uploads.filter((upload) => !known.has(upload.id)));
      next = page.next;
      clearError();
    } catch (error) {
      if (token !== request) return;
      toast(`Couldn't list the files: ${error.message}`);
    }
    loading = false;
    render();
  }

  function render() {
    list.replaceChildren(...uploads.map(item));
    list.setAttribute('aria-busy', String(loading));
    const message = byId('files-message');
    message.hidden = uploads.length > 0;
    message.textContent = loading ? 'Loading files…' : 'Every file is attached to a note.';
    more.hidden = !next;
    more.disabled = loading;
    more.textContent = loading ? 'Loading…' : 'Load more files';
  }

  function item(upload) {
    const choices = notes.all();
    const select = el('select', { class: 'attach-select', 'aria-label': `Note to attach ${upload.filename} to` },
      el('option', { value: '' }, choices.length ? 'Attach to a note…' : 'No notes to attach to'),
      ...choices.map((note) => el('option', { value: note.id }, titleAndPreview(note.body).title || 'Untitled note')));
    const attach = el('button', { type: 'button', class: 'button small', disabled: true,
      'aria-label': `Attach ${upload.filename}`, onclick: () => attachTo(upload, select.value) }, 'Attach');
    select.addEventListener('change', () => { attach.disabled = !select.value; });
    return el('li', { class: 'attachment', 'data-id': upload.id },
      ...fileSummary(upload, formatDateTime(upload.created_at)),
      el('span', { class: 'file-actions' }, select, attach,
        el('button', { type: 'button', class: 'button subtle small', 'aria-label': `Delete ${upload.filename}`,
          onclick: () => remove(upload) }, 'Delete')));
  }

  function drop(upload) {
    uploads = uploads.filter((known) => known.id !== upload.id);
    render();
  }

  async function attachTo(upload, noteId) {
    if (!noteId) return;
    try {
      await api.attachUpload(upload.id, noteId);
    } catch (error) {
      toast(`Couldn't attach ${upload.filename}: ${error.message}`);
      return;
    }
    drop(upload);
    clearError();
    const title = titleAndPreview(notes.find(noteId)?.body).title || 'Untitled note';
    toast(`${upload.filename} is attached to “${title}”.`, { kind: 'info' });
  }

  async function remove(upload) {
    if (await deleteAfterAsking(upload, { noun: 'file', toast })) drop(upload);
  }

  return {
    /** Shows the view with a fresh first page. */
    open() {
      section.hidden = false;
      byId('placeholder').hidden = true;
      uploads = [];
      next = null;
      load(FIRST_PAGE);
      byId('files-title').focus();
    },
    close() {
      request += 1;
      section.hidden = true;
    },
    isOpen: () => !section.hidden,
  };
}
