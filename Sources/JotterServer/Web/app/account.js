// Signing in and out. Under `--auth required` (or once a session has expired) the server answers
// 401: the sign-in dialog opens over the page, so whatever is in the editor stays there, and
// after signing in the list and the live updates start again.

import * as api from './api.js';
import { byId } from './dom.js';

const dialog = byId('sign-in-dialog');
const form = byId('sign-in-form');
const error = byId('sign-in-error');

/** Starts the account controls; `signedIn()` is called after each sign-in. */
export async function setupAccount({ signedIn }) {
  let asking = false;

  function show(user) {
    byId('account').hidden = !user;
    byId('account-name').textContent = user ? user.name : '';
    byId('sign-in-button').hidden = Boolean(user);
  }

  function ask(reason) {
    if (asking) return;
    asking = true;
    byId('sign-in-reason').textContent = reason;
    error.hidden = true;
    dialog.showModal();
    byId('sign-in-name').focus();
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    try {
      const session = await api.signIn(byId('sign-in-name').value, byId('sign-in-password').value);
      api.setSession(session.csrf_token);
      byId('sign-in-password').value = '';
      show(session.user);
      asking = false;
      dialog.close();
      signedIn();
    } catch (failure) {
      error.textContent = failure.status === 401 ? 'The name or the password is wrong.' : failure.message;
      error.hidden = false;
    }
  });
  dialog.addEventListener('cancel', (event) => event.preventDefault()); // Esc does not dismiss it

  byId('sign-in-button').addEventListener('click', () => ask('Sign in to see your notes.'));
  byId('sign-out').addEventListener('click', async () => {
    try {
      await api.signOut();
    } catch {
      // Signed out already (expired): nothing to revoke.
    }
    location.reload();
  });

  api.onUnauthorized(() => {
    api.setSession(null);
    show(null);
    ask('Your session has ended. Sign in again; what you were writing is still here.');
  });

  try {
    const session = await api.me();
    api.setSession(session.csrf_token ?? null);
    show(session.user);
  } catch {
    show(null);
  }
}
