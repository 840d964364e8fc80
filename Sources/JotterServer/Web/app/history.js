// A note's history: its saved versions (`GET /notes/{id}/revisions`, paged), newest first; one
// is shown beside the list, and restoring it makes its text the note's again, at a new version.

import * as api from './api.js';
import { byId, el } from './dom.js';
import { formatDateTime, formatSize, titleAndPreview } from './format.js';

const PAGE_SIZE = 50;

/**
 * `restored(note, version)` gets the note after a version was restored; `toast(message)` shows
 * an error in words.
 */
export function createHistory({ toast, restored }) {
  const dialog = byId('history-dialog');
  const list = byId('revision-list');
  const more = byId('revisions-more');
  const restore = byId('history-restore');
  const preview = byId('revision-body');
  let note = null; // the note whose history is shown
  let revisions = [];
  let next = null;
  let selected = null; // the version shown
  let loading = false;
  let request = 0; // the current opening, so late answers for another note are dropped
  const bodies = new Map(); // version → text, as read
  let previousFocus = null;

  more.addEventListener('click', () => {
    if (next && !loading) load(next);
  });
  restore.addEventListener('click', () => restoreSelected());
  byId('history-close').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    request += 1;
    if (previousFocus instanceof HTMLElement && previousFocus.isConnected) previousFocus.focus();
  });
  // Up and down arrows move between versions, showing each.
  list.addEventListener('keydown', (event) => {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
    const buttons = [...list.querySelectorAll('.revision')];
    const index = buttons.indexOf(document.activeElement);
    const target = buttons[index < 0 ? 0 : index + (event.key === 'ArrowDown' ? 1 : -1)];
    if (!target) return;
    event.preventDefault();
    target.focus();
    select(Number(target.dataset.version));
  });

  async function load(url) {
    const token = request;
    loading = true;
    render();
    try {
      const page = await api.listRevisions(url);
      if (token !== request) return;
      const known = new Set(revisions.map((revision) => revision.version));
      revisions.push(...page.revisions.filter((revision) => !known.has(revision.version)));
      next = page.next;
      if (selected === null && revisions.length) select(revisions[0].version);
    } catch (error) {
      if (token !== request) return;
      toast(`Couldn't list the versions: ${error.message}`);
    }
    loading = false;
    render();
  }

  /** Shows version `version`, reading its text when it is not read yet. */
  async function select(version) {
    selected = version;
    render();
    if (bodies.has(version)) return;
    const token = request;
    try {
      const revision = await api.getRevision(note.id, version);
      if (token !== request) return;
      bodies.set(version, revision.body);
    } catch (error) {
      if (token !== request) return;
      toast(`Couldn't read version ${version}: ${error.message}`);
    }
    if (selected === version) render();
  }

  function describe(revision) {
    return [formatDateTime(revision.created_at), formatSize(revision.size), revision.merged ? 'merged' : null]
      .filter(Boolean).join(' · ');
  }

  function item(revision) {
    const current = revision.version === note.version;
    const pressed = revision.version === selected;
    return el('li', {},
      el('button', { type: 'button', class: 'revision', 'data-version': revision.version, 'aria-pressed': String(pressed),
        onclick: () => select(revision.version) },
      el('span', { class: 'revision-name' }, `Version ${revision.version}`, current ? ' (current)' : ''),
      el('span', { class: 'revision-meta' }, describe(revision))));
  }

  function render() {
    // Rebuilding the list must not take the keyboard focus away from the version it was on.
    const focused = document.activeElement?.closest?.('.revision')?.dataset.version;
    list.replaceChildren(...revisions.map(item));
    if (focused) list.querySelector(`.revision[data-version="${CSS.escape(focused)}"]`)?.focus();
    if (document.activeElement === list) list.querySelector('[aria-pressed="true"]')?.focus();
    list.setAttribute('aria-busy', String(loading));
    more.hidden = !next;
    more.disabled = loading;
    more.textContent = loading && revisions.length ? 'Loading…' : 'Load older versions';
    const revision = revisions.find((known) => known.version === selected);
    byId('revision-label').textContent = revision ? `Version ${revision.version}` : loading ? 'Loading versions…' : 'No versions kept';
    byId('revision-meta').textContent = revision ? describe(revision) : '';
    preview.textContent = bodies.get(selected) ?? (revision ? 'Loading…' : '');
    restore.disabled = !revision || revision.version === note.version || !bodies.has(selected);
  }

  async function restoreSelected() {
    const version = selected;
    if (version === null || version === note.version) return;
    restore.disabled = true;
    try {
      const now = await api.restoreRevision(note.id, version);
      previousFocus = null; // the restored text takes the focus
      dialog.close();
      restored(now, version);
    } catch (error) {
      toast(`Couldn't restore version ${version}: ${error.message}`);
      render();
    }
  }

  return {
    /** Shows the history of `current` (the saved note), newest version first. */
    open(current) {
      request += 1;
      note = current;
      revisions = [];
      next = null;
      selected = null;
      bodies.clear();
      byId('history-title').textContent = `History of “${titleAndPreview(note.body).title || 'Untitled note'}”`;
      previousFocus = document.activeElement;
      dialog.showModal();
      load(`/notes/${encodeURIComponent(note.id)}/revisions?limit=${PAGE_SIZE}`);
      list.focus();
    },
  };
}
