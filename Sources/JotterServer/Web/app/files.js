// The files attached to no note (`GET /uploads?note_id=`, `#/files`): download one, attach it
// to a note, or delete it.

import * as api from './api.js';
import { deleteAfterAsking, fileSummary } from './attachments.js';
import { el } from './dom.js';
import { createPagedView } from './paged.js';
import { formatDateTime, titleAndPreview } from './format.js';

const FIRST_PAGE = '/uploads?note_id=&limit=50';

/**
 * `notes.all()` gives the loaded notes (the choices to attach to); `toast(message, options)`
 * shows a message, `clearError()` takes a stale error away.
 */
export function createFiles({ notes, toast, clearError }) {
  const view = createPagedView({
    section: 'files', firstPage: FIRST_PAGE,
    fetchPage: api.listUploads, key: 'uploads',
    item,
    texts: { loading: 'Loading files…', empty: 'Every file is attached to a note.', failed: "Couldn't list the files" },
    toast, clearError,
  });

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

  const drop = (upload) => view.pages.drop(upload.id);

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

  const { open, close, isOpen } = view;
  return { open, close, isOpen };
}
