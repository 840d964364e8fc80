// A note's attachments: the list (download, delete) and uploads with progress bars, from the
// file picker or dropped files.

import * as api from './api.js';
import { announce, byId, el } from './dom.js';
import { confirmChoice } from './dialogs.js';
import { formatSize } from './format.js';

const INLINE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/**
 * `ensureNote()` resolves to the saved note files attach to (saving a new one first) or null;
 * `refresh(id)` re-reads note `id` after its attachments changed; `toast(message)` shows an error.
 */
export function createAttachments({ ensureNote, refresh, toast }) {
  const list = byId('attachment-list');
  const uploads = byId('upload-list');
  const input = byId('file-input');
  const dropzone = byId('dropzone');
  let noteId = null;

  byId('choose-files').addEventListener('click', () => input.click());
  input.addEventListener('change', () => {
    add([...input.files]);
    input.value = '';
  });

  // Dropping files anywhere on the open note attaches them; elsewhere the browser must not
  // navigate away to the file.
  const editor = byId('editor');
  const hasFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes('Files');
  let depth = 0;
  editor.addEventListener('dragenter', (event) => {
    if (!hasFiles(event)) return;
    depth += 1;
    dropzone.classList.add('active');
  });
  editor.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) dropzone.classList.remove('active');
  });
  editor.addEventListener('dragover', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
  });
  editor.addEventListener('drop', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    depth = 0;
    dropzone.classList.remove('active');
    add([...event.dataTransfer.files]);
  });
  for (const type of ['dragover', 'drop']) {
    window.addEventListener(type, (event) => {
      if (hasFiles(event) && !editor.contains(event.target)) event.preventDefault();
    });
  }

  async function add(files) {
    if (!files.length) return;
    const note = await ensureNote();
    if (!note) return;
    for (const file of files) start(file, note.id);
  }

  function start(file, id) {
    const progress = el('progress', { max: 100, value: 0, 'aria-label': `Uploading ${file.name}` });
    const status = el('span', { class: 'upload-status' }, `0% of ${formatSize(file.size)}`);
    const cancel = el('button', { type: 'button', class: 'button subtle small', 'aria-label': `Cancel uploading ${file.name}` }, 'Cancel');
    const row = el('li', { class: 'upload', 'data-note': id },
      el('span', { class: 'file-name' }, file.name), progress, status, cancel);
    row.hidden = id !== noteId;
    uploads.append(row);
    const upload = api.uploadFile(file, id, (loaded, total) => {
      const percent = Math.floor((loaded / total) * 100);
      progress.value = percent;
      status.textContent = `${percent}% of ${formatSize(total)}`;
    });
    cancel.addEventListener('click', () => upload.abort());
    upload.done.then(async () => {
      progress.value = 100;
      status.textContent = 'Uploaded';
      cancel.remove();
      announce(`${file.name} uploaded`);
      await refresh(id);
      row.remove();
    }, (error) => {
      if (error.aborted) {
        row.remove();
        announce(`Upload of ${file.name} cancelled`);
        return;
      }
      row.classList.add('failed');
      progress.remove();
      status.textContent = `Not uploaded: ${error.message}`;
      cancel.textContent = 'Dismiss';
      cancel.setAttribute('aria-label', `Dismiss the failed upload of ${file.name}`);
      cancel.addEventListener('click', () => row.remove());
      announce(`${file.name} was not uploaded: ${error.message}`); // said once, in its row
    });
  }

  async function remove(upload) {
    if (await deleteAfterAsking(upload, { noun: 'attachment', toast }) && noteId) await refresh(noteId);
  }

  function item(upload) {
    return el('li', { class: 'attachment', 'data-id': upload.id },
      ...fileSummary(upload),
      el('button', { type: 'button', class: 'button subtle small', 'aria-label': `Delete ${upload.filename}`, onclick: () => remove(upload) }, 'Delete'));
  }

  return {
    /** Shows `note`'s attachments (none for a new note) and its uploads in progress. */
    render(note) {
      noteId = note?.id ?? null;
      list.replaceChildren(...(note?.attachments ?? []).map(item));
      for (const row of uploads.children) row.hidden = row.dataset.note !== noteId;
    },
  };
}

/**
 * A stored file as the lists show it: a thumbnail (images) or its extension, then its name
 * (a download link) over its size and type, and any `extra` facts.
 */
export function fileSummary(upload, ...extra) {
  const preview = INLINE_IMAGES.has(upload.content_type)
    ? el('img', { class: 'thumb', src: upload.url, alt: '', loading: 'lazy' })
    : el('span', { class: 'thumb file-icon', 'aria-hidden': 'true' }, extension(upload.filename));
  return [preview,
    el('span', { class: 'attachment-text' },
      el('a', { href: upload.url, download: upload.filename, class: 'file-name' }, upload.filename),
      el('span', { class: 'meta' }, [formatSize(upload.size), upload.content_type, ...extra].join(' · ')))];
}

/**
 * Asks first, then deletes `upload` from the server; true once it is gone (deleted here, or
 * already). `noun` names it in the question ("Delete this attachment?").
 */
export async function deleteAfterAsking(upload, { noun, toast }) {
  const choice = await confirmChoice({
    title: `Delete this ${noun}?`,
    text: `“${upload.filename}” will be deleted from the server. This can't be undone.`,
    actions: [{ label: 'Cancel', value: null }, { label: `Delete ${noun}`, value: 'delete', kind: 'danger' }],
  });
  if (choice !== 'delete') return false;
  try {
    await api.deleteUpload(upload.id);
  } catch (error) {
    if (error.status !== 404) {
      toast(`Couldn't delete ${upload.filename}: ${error.message}`);
      return false;
    }
  }
  announce(`${upload.filename} deleted`);
  return true;
}

/** `PDF` for `report.pdf`: the label of a file without a preview. */
function extension(name) {
  const match = /\.([A-Za-z0-9]{1,4})$/.exec(name);
  return match ? match[1].toUpperCase() : 'FILE';
}
