// Building elements. Text always goes in as text (textContent), never as markup.

/**
 * `el('a', { href: url, class: 'link' }, 'text', child)`: an element with attributes and
 * children. Strings become text nodes; `null`, `undefined` and `false` are skipped. Attribute
 * values `true` set a boolean attribute, `false`/`null` leave it out; `on*` keys add listeners.
 */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      element.addEventListener(name.slice(2), value);
    } else {
      element.setAttribute(name, value === true ? '' : String(value));
    }
  }
  element.append(...children.flat().filter((child) => child !== null && child !== undefined && child !== false));
  return element;
}

/** The element with this id (the page's fixed structure). */
export function byId(id) {
  return document.getElementById(id);
}

/** Says `message` to screen readers through the page's polite live region. */
export function announce(message) {
  const region = byId('announcer');
  region.textContent = '';
  // A fresh text node after a tick, so the same message twice is read twice.
  setTimeout(() => { region.textContent = message; }, 50);
}
