// Signing in and out. Under `--auth required` a visitor without a session sees the sign-in page
// first; once a session ends (it expired, or was revoked) the server answers 401 and the sign-in
// dialog opens over the page, so whatever is in the editor stays there, and after signing in the
// list and the live updates start again. Under `--auth off` the notes need no session: the page
// asks `/auth/me` only when this browser signed in before (the cookie is HttpOnly, so a note in
// localStorage says so), and a newcomer's console shows no failed request. While there is no user
// at all (`<body data-sign-in="none">`) nobody can sign in: no "Sign in" is offered, and under
// `--auth required` the sign-in page says how the first account is made.

import * as api from './api.js';
import { byId, el } from './dom.js';
import * as store from './store.js';

const dialog = byId('sign-in-dialog');
const form = byId('sign-in-form');
const error = byId('sign-in-error');
/** localStorage: this browser has signed in (a session cookie may be there). */
const SIGNED_IN = 'jotter-signed-in';
/** sessionStorage: the page was reloaded by "Sign out". */
const SIGNED_OUT = 'jotter-signed-out';

/**
 * The sign-in page while the server has no user (`data-sign-in="none"`): no account can be made
 * here (there is no sign-up), only on the server's machine (README, "Users and tokens").
 */
const NO_ACCOUNT = () => ['No account exists on this server yet. The first one is made on the server’s machine, with ',
  el('code', {}, 'jotter users add NAME --admin'), ' (see the README); then sign in here.'];

/** `user` signed in here (a session cookie is there), or (null) nobody is. */
function remember(user) {
  try {
    if (user) {
      localStorage.setItem(SIGNED_IN, '1');
      localStorage.setItem(store.USER, user.name);
    } else {
      localStorage.removeItem(SIGNED_IN);
      localStorage.removeItem(store.USER);
    }
  } catch {
    // Storage refused (a private window's quota): only the /auth/me question is affected.
  }
}

/**
 * After `user` signed in: true when this page goes on with their copy of the notes; false when
 * it showed another user's (the session ended and someone else signed in), and reloads with
 * theirs: what the first user left waiting stays in the first user's copy, sent when they are
 * back. A copy of a removed account of the same name with nothing waiting is emptied first
 * (`store.claim`), and the page reloads without it.
 */
async function follow(user) {
  remember(user);
  if (store.isFor(user.name) && !(await store.claim(user.id).catch(() => false))) return true;
  location.reload();
  return false;
}

function stored(storage, key) {
  try {
    return storage.getItem(key);
  } catch {
    return null;
  }
}

/**
 * Starts the account controls; `signedIn()` is called after each sign-in made here, and
 * `signingOut()` when "Sign out" is pressed: it resolves to false to stay signed in (the
 * changes saved on this device and not yet sent would go with this browser's copy);
 * `failed(message)` says, in words, that signing out did not happen. Resolves to
 * true when the notes can be shown now (signed in, or the server needs no session), false when
 * the visitor must sign in first (the sign-in page is shown; `signedIn()` follows).
 */
export async function setupAccount({ signedIn, signingOut = async () => true, failed = () => {} }) {
  let asking = false;
  const required = document.body.dataset.auth !== 'off';
  const signedOut = stored(sessionStorage, SIGNED_OUT) !== null;
  try { sessionStorage.removeItem(SIGNED_OUT); } catch { /* nothing kept */ }

  function show(user) {
    byId('account').hidden = !user;
    byId('account-name').textContent = user ? user.name : '';
    byId('sign-in-button').hidden = Boolean(user) || document.body.dataset.signIn === 'none';
  }

  function ask(reason, { page = false } = {}) {
    if (asking) return;
    asking = true;
    // A sign-in page hides the empty app behind the dialog; over a page in use, it stays.
    if (page) document.body.dataset.signedOut = '';
    byId('sign-in-reason').replaceChildren(...[reason].flat());
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
      if (!(await follow(session.user))) return;
      byId('sign-in-password').value = '';
      show(session.user);
      asking = false;
      delete document.body.dataset.signedOut;
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
    if (!(await signingOut())) return;
    // Only the server can end the session: its cookie is HttpOnly, out of the page's reach.
    // Until it has, this browser stays signed in, and says so: a page that said "signed out"
    // then would leave the next person at this browser signed in as this user.
    try {
      await revoke();
    } catch (failure) {
      if (failure.status !== 401) { // 401: ended already (expired), nothing to revoke
        failed(failure.status === 0
          ? "Couldn't sign out: the server can't be reached, so this browser is still signed in. Try again once it is back."
          : `Couldn't sign out: ${failure.message}`);
        return;
      }
    }
    // This browser's copy of the notes goes with the session (what still waited to be sent,
    // too: `signingOut` sent it first, or the user chose to delete it).
    await store.clear().catch(() => {});
    remember(null);
    try { sessionStorage.setItem(SIGNED_OUT, '1'); } catch { /* the page just says "Sign in" */ }
    location.reload();
  });

  /** Ends the session on the server (asking for its CSRF token first when the page doesn't know it). */
  async function revoke() {
    try {
      await api.signOut();
    } catch (failure) {
      if (failure.status !== 403) throw failure;
      // The page started with the server away: it has no CSRF token yet.
      api.setSession((await api.me()).csrf_token ?? null);
      await api.signOut();
    }
  }

  // Another tab signed in as someone else: this page shows that user's notes now.
  window.addEventListener('storage', (event) => {
    if (event.key === store.USER && event.newValue && !store.isFor(event.newValue)) location.reload();
  });

  api.onUnauthorized(() => {
    api.setSession(null);
    api.expectSession(false);
    remember(null);
    show(null);
    ask('Your session has ended. Sign in again; what you were writing is still here.');
  });

  if (!required && stored(localStorage, SIGNED_IN) === null) {
    show(null); // no session to look for: the notes need none
    return true;
  }
  try {
    const session = await api.me();
    api.setSession(session.csrf_token ?? null);
    if (!(await follow(session.user))) return false;
    show(session.user);
    return true;
  } catch (failure) {
    api.setSession(null);
    const user = stored(localStorage, store.USER);
    if (failure.status === 0 && stored(localStorage, SIGNED_IN) !== null && user !== null) {
      // The server can't be reached: the page goes on as the user who signed in here, with their
      // copy of the notes; the first write once it is back fetches the session's CSRF token.
      api.expectSession(true);
      show({ name: user });
      return true;
    }
    if (failure.status === 401) remember(null);
    show(null);
    if (!required) return true;
    const nobody = document.body.dataset.signIn === 'none';
    ask(nobody ? NO_ACCOUNT() : signedOut ? 'You are signed out. Sign in to see your notes.' : 'Sign in to see your notes.',
      { page: true });
    if (failure.status !== 401) {
      error.textContent = failure.message;
      error.hidden = false;
    }
    return false;
  }
}
