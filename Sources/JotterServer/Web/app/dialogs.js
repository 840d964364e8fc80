// Modal choices: a confirmation, and the conflict dialog that shows both versions of a note.

import { byId, el } from './dom.js';
import { formatDateTime } from './format.js';

/**
 * Shows `dialog` with `actions` (`[{ label, value, kind }]`, the safe choice first) and resolves
 * to the chosen value, or `null` when it is dismissed with Escape.
 */
function ask(dialog, actionsContainer, actions) {
  return new Promise((resolve) => {
    const buttons = actions.map(({ label, value, kind = 'subtle' }) =>
      el('button', { type: 'button', class: `button ${kind}`, 'data-value': value, onclick: () => finish(value) }, label));
    actionsContainer.replaceChildren(...buttons);
    const onCancel = (event) => {
      event.preventDefault();
      finish(null);
    };
    const previousFocus = document.activeElement;
    function finish(value) {
      dialog.removeEventListener('cancel', onCancel);
      dialog.close();
      if (previousFocus instanceof HTMLElement && previousFocus.isConnected) previousFocus.focus();
      resolve(value);
    }
    dialog.addEventListener('cancel', onCancel);
    dialog.showModal();
    buttons[0]?.focus();
  });
}

/** A yes/no question: `{ title, text, actions }`. */
export function confirmChoice({ title, text, actions }) {
  byId('confirm-title').textContent = title;
  byId('confirm-text').textContent = text;
  return ask(byId('confirm-dialog'), byId('confirm-actions'), actions);
}

/** Why the server could not merge an edit, by the `type` of its `409`. */
const UNMERGED = {
  '/problems/unknown-base': 'Your edit was made to a version of this note the server no longer keeps, so it could not be merged with the version saved since.',
  '/problems/merge-too-large': 'This note is too large (or changed too much on both sides) to merge your edit with the version saved since.',
};

/**
 * The conflict dialog: the saved version (`theirs`, a note) beside the user's unsaved text
 * (`mine`); `why` is the problem type of the `409` that made the merge impossible. Resolves to
 * `mine` (overwrite), `theirs` (load it, dropping the edits), `both` (keep both: save mine as a
 * new note) or `null` (keep editing).
 */
export function resolveConflict({ theirs, mine, why = null }) {
  byId('conflict-text').textContent = `${UNMERGED[why] ?? 'A newer version was saved elsewhere after you opened this note.'} `
    + 'Nothing is lost yet: choose which version to keep, or keep both.';
  byId('conflict-theirs-meta').textContent = `Saved ${formatDateTime(theirs.updated_at)}`;
  byId('conflict-theirs').textContent = theirs.body;
  byId('conflict-mine').textContent = mine;
  return ask(byId('conflict-dialog'), byId('conflict-actions'), [
    { label: 'Keep editing', value: null },
    { label: 'Discard mine, load saved', value: 'theirs' },
    { label: 'Keep both', value: 'both' },
    { label: 'Overwrite with mine', value: 'mine', kind: 'primary' },
  ]);
}

/** True while a modal dialog is open (global shortcuts stay out of its way). */
export function dialogOpen() {
  return document.querySelector('dialog[open]') !== null;
}
