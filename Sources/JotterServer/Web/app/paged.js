// A view's list read page by page from a listing endpoint (`{"<key>": [...], "next"}`): the
// "Load more" button, the busy and empty messages, late answers to an older listing dropped.
// The files and the trash views share it.

import { byId } from './dom.js';

/**
 * A view that shows one such list: `section` is the id of the view, whose parts are named after
 * it (`<section>-title`, its heading; `<section>-list`, `-more` and `-message`: the list, its
 * "Load more" button and its message), `firstPage` the listing's first URL; the rest is
 * `createPagedList`'s. Gives the view's `open()`, `close()` and `isOpen()`, and its `pages`.
 */
export function createPagedView({ section: sectionId, firstPage, ...list }) {
  const section = byId(sectionId);
  const title = `${sectionId}-title`;
  const ids = { list: `${sectionId}-list`, more: `${sectionId}-more`, message: `${sectionId}-message` };
  const pages = createPagedList({ ids, ...list });
  return {
    pages,
    /** Shows the view with a fresh first page. */
    open() {
      section.hidden = false;
      byId('placeholder').hidden = true;
      pages.reload(firstPage);
      byId(title).focus();
    },
    close() {
      pages.stop();
      section.hidden = true;
    },
    isOpen: () => !section.hidden,
  };
}

/**
 * `ids`: the element ids of the list, its "Load more" button and its message; `fetchPage(url)`
 * gives the listing's answer, its entries under `key`; `item(entry)` builds an entry's `<li>`;
 * `texts`: `loading`, `empty` and `failed` (shown with the error's message); the button's own
 * label is its text when it is not loading;
 * `rendered(count)`, if given, after each change of what is listed.
 */
export function createPagedList({ ids, fetchPage, key, item, texts, toast, clearError, rendered = () => {} }) {
  const list = byId(ids.list);
  const more = byId(ids.more);
  const moreLabel = more.textContent;
  let entries = [];
  let next = null;
  let loading = false;
  let request = 0; // the current listing, so late answers to older ones are dropped
  let failure = null; // why the last page could not be read: said instead of "empty"

  more.addEventListener('click', () => {
    if (next && !loading) load(next);
  });

  async function load(url) {
    const token = ++request;
    loading = true;
    render();
    try {
      const page = await fetchPage(url);
      if (token !== request) return;
      const known = new Set(entries.map((entry) => entry.id));
      entries.push(...page[key].filter((entry) => !known.has(entry.id)));
      next = page.next;
      failure = null;
      clearError();
    } catch (error) {
      if (token !== request) return;
      failure = `${texts.failed}: ${error.message}`;
      toast(failure);
    }
    loading = false;
    render();
  }

  function render() {
    list.replaceChildren(...entries.map(item));
    list.setAttribute('aria-busy', String(loading));
    const message = byId(ids.message);
    message.hidden = entries.length > 0;
    // Not read is not empty: "No recently deleted notes" would be false with the server away.
    message.textContent = loading ? texts.loading : failure ?? texts.empty;
    more.hidden = !next;
    more.disabled = loading;
    more.textContent = loading ? 'Loading…' : moreLabel;
    rendered(entries.length);
  }

  return {
    /** Starts over from `url`, the first page. */
    reload(url) {
      entries = [];
      next = null;
      load(url);
    },
    /** Drops late answers (the view closed). */
    stop() { request += 1; },
    has: (id) => entries.some((entry) => entry.id === id),
    /** Takes the entry with `id` out. */
    drop(id) {
      const count = entries.length;
      entries = entries.filter((entry) => entry.id !== id);
      if (entries.length !== count) render();
    },
    /** Puts `entry` first. */
    unshift(entry) {
      entries.unshift(entry);
      render();
    },
  };
}
