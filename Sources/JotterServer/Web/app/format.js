// Dates, sizes and note titles as the list and editor show them.

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The API's UTC `yyyy-MM-dd HH:mm:ss` as a Date, or null when it isn't one. */
export function parseTimestamp(text) {
  const match = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(text ?? '');
  if (!match) return null;
  const [, y, mo, d, h, mi, s] = match.map(Number);
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s));
}

/** `Mon Nov 30 2026` in the viewer's time zone: the original app's `EE MMM d yyyy`. */
export function formatDay(date) {
  return `${WEEKDAYS[date.getDay()]} ${MONTHS[date.getMonth()]} ${date.getDate()} ${date.getFullYear()}`;
}

/** `2:35 PM` in the viewer's time zone: the original app's `h:mm a`. */
export function formatTime(date) {
  const hours = date.getHours();
  const minutes = String(date.getMinutes()).padStart(2, '0');
  return `${hours % 12 || 12}:${minutes} ${hours < 12 ? 'AM' : 'PM'}`;
}

/** `Mon Nov 30 2026 at 2:35 PM`, or the raw text when it can't be parsed. */
export function formatDateTime(text) {
  const date = parseTimestamp(text);
  return date ? `${formatDay(date)} at ${formatTime(date)}` : String(text ?? '');
}

/** When `later` happened, said briefly after `earlier`: only the time when on the same day. */
export function formatSince(earlier, later) {
  const [from, to] = [parseTimestamp(earlier), parseTimestamp(later)];
  if (!from || !to) return formatDateTime(later);
  return formatDay(from) === formatDay(to) ? `at ${formatTime(to)}` : formatDateTime(later);
}

/** ISO 8601 for a `<time datetime>` attribute. */
export function isoTimestamp(text) {
  const date = parseTimestamp(text);
  return date ? date.toISOString() : '';
}

/** `1.4 MiB`, `512 bytes` (binary units: counted in 1024s, so named so). */
export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** The first non-blank line (the title) and the next one (the preview) of a note's body. */
export function titleAndPreview(body) {
  const lines = String(body ?? '').split('\n').map((line) => line.trim()).filter(Boolean);
  return { title: lines[0] ?? '', preview: lines[1] ?? '' };
}

/**
 * `body` marked as a copy, so it can be told apart from the note it was copied from: " (copy)"
 * after its title (its first non-blank line), or "(copy)" as the title of a note without one.
 */
export function markedAsCopy(body) {
  const lines = String(body ?? '').split('\n');
  const index = lines.findIndex((line) => line.trim() !== '');
  if (index < 0) return '(copy)' + (body ? '\n' + body : '');
  lines[index] = lines[index].replace(/\s*$/, '') + ' (copy)';
  return lines.join('\n');
}
