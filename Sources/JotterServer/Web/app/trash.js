// Recently Deleted (`GET /notes/trash`, `#/trash`): deleted notes, latest deletion first, kept
// for a while by the server; restore one (same id, text and attachments) or delete it for good.

import * as api from './api.js';
import { announce, byId, el } from './dom.js';
import { confirmChoice } from './dialogs.js';
import { formatDateTime, titleAndPreview } from './format.js';

const FIRST_PAGE = '/notes/trash?limit=50';

/**
 * `notes.upsert(note)` puts a restored note back in the list; `navigate(hash)` opens it;
 * `toast(message, options)` shows a message, `clearError()` takes a stale error away.
 */
export function createTrash({ notes, navigate, toast, clearError }) {
  const section = byId('trash');
  const list = byId('trash-list');
  const more = byId('trash-more');
  let deleted = [];
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
      const page = await api.listTrash(url);
      if (token !== request) return;
      const known = new Set(deleted.map((note) => note.id));
      deleted.push(...page.notes.filter((note) => !known.has(note.id)));
      next = page.next;
      clearError();
    } catch (error) {
      if (token !== request) return;
      toast(`Couldn't list the deleted notes: ${error.message}`);
    }
    loading = false;
    render();
  }

  function render() {
    list.replaceChildren(...deleted.map(item));
    list.setAttribute('aria-busy', String(loading));
    const message = byId('trash-message');
    message.hidden = deleted.length > 0;
    message.textContent = loading ? 'Loading deleted notes…' : 'No recently deleted notes.';
    more.hidden = !next;
    more.disabled = loading;
    more.textContent = loading ? 'Loading…' : 'Load more deleted notes';
  }

  const titleOf = (note) => titleAndPreview(note.body).title || 'Untitled note';

  function item(note) {
    const { preview } = titleAndPreview(note.body);
    const files = note.attachments?.length ?? 0;
    const title = titleOf(note);
    return el('li', { class: 'attachment trashed', 'data-id': note.id },
      el('span', { class: 'attachment-text' },
        el('span', { class: 'file-name' }, title),
        preview ? el('span', { class: 'note-preview' }, preview) : null,
        el('span', { class: 'meta' }, [`Deleted ${formatDateTime(note.deleted_at)}`,
          files ? `${files} ${files === 1 ? 'attachment' : 'attachments'}` : null].filter(Boolean).join(' · '))),
      el('span', { class: 'file-actions' },
        el('button', { type: 'button', class: 'button small', 'aria-label': `Restore “${title}”`,
          onclick: () => restore(note) }, 'Restore'),
        el('button', { type: 'button', class: 'button subtle small forever', 'aria-label': `Delete “${title}” forever`,
          onclick: () => deleteForever(note) }, 'Delete forever')));
  }

  function drop(id) {
    const count = deleted.length;
    deleted = deleted.filter((known) => known.id !== id);
    if (deleted.length !== count) render();
  }

  async function restore(note) {
    let back;
    try {
      back = await api.restoreFromTrash(note.id);
    } catch (error) {
      if (error.status === 404) drop(note.id);
      toast(`Couldn't restore “${titleOf(note)}”: ${error.message}`);
      return;
    }
    drop(note.id);
    notes.upsert(back);
    clearError();
    toast(`“${titleOf(back)}” is back in your notes.`, { kind: 'info',
      action: { label: 'Open', run: () => navigate(`#/notes/${back.id}`) } });
  }

  async function deleteForever(note) {
    const files = note.attachments?.length ?? 0;
    const choice = await confirmChoice({
      title: 'Delete this note forever?',
      text: `“${titleOf(note)}”${files ? ` and its ${files} ${files === 1 ? 'attachment' : 'attachments'}` : ''} will be deleted for good. This can't be undone.`,
      actions: [{ label: 'Cancel', value: null }, { label: 'Delete forever', value: 'delete', kind: 'danger' }],
    });
    if (choice !== 'delete') return;
    try {
      await api.deleteForever(note.id);
    } catch (error) {
      if (error.status !== 404) {
        toast(`Couldn't delete “${titleOf(note)}”: ${error.message}`);
        return;
      }
    }
    drop(note.id);
    announce(`“${titleOf(note)}” deleted forever`);
  }

  return {
    /** Shows the view with a fresh first page. */
    open() {
      section.hidden = false;
      byId('placeholder').hidden = true;
      deleted = [];
      next = null;
      load(FIRST_PAGE);
      byId('trash-title').focus();
    },
    close() {
      request += 1;
      section.hidden = true;
    },
    /** A change made elsewhere: a note deleted joins the view, one restored leaves it. */
    event(kind, note) {
      if (section.hidden) return;
      if (kind === 'note.created') drop(note.id);
      else if (kind === 'note.deleted' && !deleted.some((known) => known.id === note.id)) {
        deleted.unshift(note);
        render();
      }
    },
  };
}
