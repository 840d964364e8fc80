// Recently Deleted (`GET /notes/trash`, `#/trash`): deleted notes, latest deletion first, kept
// for a while by the server; restore one (same id, text and attachments) or delete it for good.

import * as api from './api.js';
import { announce, byId, el } from './dom.js';
import { confirmChoice } from './dialogs.js';
import { createPagedView } from './paged.js';
import { formatDateTime, titleAndPreview } from './format.js';

const FIRST_PAGE = '/notes/trash?limit=50';
/** The whole trash, a page at a time, as large as the API's pages go. */
const ALL_PAGES = '/notes/trash?limit=1000';

/**
 * `notes.upsert(note)` puts a restored note back in the list; `navigate(hash)` opens it;
 * `toast(message, options)` shows a message, `clearError()` takes a stale error away.
 */
export function createTrash({ notes, navigate, toast, clearError }) {
  const emptyButton = byId('trash-empty');
  emptyButton.addEventListener('click', () => empty());
  const view = createPagedView({
    section: 'trash', firstPage: FIRST_PAGE,
    fetchPage: api.listTrash, key: 'notes',
    item,
    texts: { loading: 'Loading deleted notes…', empty: 'No recently deleted notes.', failed: "Couldn't list the deleted notes" },
    toast, clearError,
    rendered: (count) => { emptyButton.hidden = count === 0; },
  });

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

  const drop = (id) => view.pages.drop(id);

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
      await api.deleteForever(note.id, api.etagOf(note));
    } catch (error) {
      if (error.status === 412) {
        // A notice, not an error: the list read again (which clears errors) shows it as it is now.
        toast(`“${titleOf(note)}” was not deleted: it was restored and deleted again meanwhile (on another device). Look at it again first.`,
          { kind: 'info', timeout: 15000 });
        view.pages.reload(FIRST_PAGE);
        return;
      }
      if (error.status !== 404) {
        toast(`Couldn't delete “${titleOf(note)}”: ${error.message}`);
        return;
      }
    }
    drop(note.id);
    announce(`“${titleOf(note)}” deleted forever`);
  }

  /**
   * Empties Recently Deleted after confirmation: the notes in it as it is read now, every page
   * (a note deleted meanwhile, say in another tab, stays), each deleted for good in turn (the
   * API deletes one at a time: `DELETE /notes/trash/{id}`), each only at the version read
   * (`If-Match`): one restored and deleted again meanwhile, on another device, stays (`412`),
   * and the page says so.
   */
  async function empty() {
    const all = [];
    try {
      for (let url = ALL_PAGES; url;) {
        const page = await api.listTrash(url);
        all.push(...page.notes);
        url = page.next;
      }
    } catch (error) {
      toast(`Couldn't list the deleted notes: ${error.message}`);
      return;
    }
    if (!all.length) {
      view.pages.reload(FIRST_PAGE);
      announce('Recently Deleted is empty');
      return;
    }
    const count = all.length;
    const files = all.reduce((sum, note) => sum + (note.attachments?.length ?? 0), 0);
    const choice = await confirmChoice({
      title: 'Empty Recently Deleted?',
      text: `${count === 1 ? 'The note' : `All ${count} notes`} in Recently Deleted`
        + `${files ? ` and ${files === 1 ? 'its attachment' : `their ${files} attachments`}` : ''} will be deleted for good. `
        + "This can't be undone.",
      actions: [{ label: 'Cancel', value: null }, { label: 'Empty Recently Deleted', value: 'empty', kind: 'danger' }],
    });
    if (choice !== 'empty') return;
    emptyButton.disabled = true;
    let deleted = 0;
    const kept = [];
    try {
      for (const note of all) {
        try {
          await api.deleteForever(note.id, api.etagOf(note));
        } catch (error) {
          if (error.status === 412) { // restored and deleted again since: not the note confirmed
            kept.push(note);
            continue;
          }
          if (error.status !== 404) throw error; // gone already (restored, or emptied elsewhere)
        }
        drop(note.id);
        deleted += 1;
      }
    } catch (error) {
      toast(`Couldn't empty Recently Deleted (${deleted} of ${count} deleted): ${error.message}`);
      return;
    } finally {
      emptyButton.disabled = false;
    }
    clearError();
    if (kept.length) {
      const which = kept.length === 1 ? `“${titleOf(kept[0])}” was` : `${kept.length} notes were`;
      toast(`${deleted === 1 ? 'One note' : `${deleted} notes`} deleted forever. ${which} restored and deleted again `
        + 'meanwhile (on another device), so kept in Recently Deleted: look again before deleting.', { kind: 'info', timeout: 15000 });
      view.pages.reload(FIRST_PAGE);
      return;
    }
    announce(count === 1 ? 'One note deleted forever' : `${count} notes deleted forever`);
  }

  const { open, close, isOpen } = view;
  return {
    open,
    close,
    /** A change made elsewhere: a note deleted joins the view, one restored leaves it. */
    event(kind, note) {
      if (!isOpen()) return;
      if (kind === 'note.created') drop(note.id);
      else if (kind === 'note.deleted' && !view.pages.has(note.id)) view.pages.unshift(note);
    },
  };
}
