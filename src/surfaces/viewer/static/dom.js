// Building the page from data: every piece of data becomes a text node (textContent), never markup.

const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u202a-\u202e\u2066-\u2069]/g;

/** Text as shown: control characters and bidirectional overrides become visible marks instead of acting. */
export function visible(text) {
  return String(text ?? '').replace(CONTROL, (char) => {
    const code = char.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    if (code === 0x7f) return '\u2421';
    return `\u27e8U+${code.toString(16).toUpperCase()}\u27e9`;
  });
}

/**
 * Creates an element. `attributes`: plain attributes (set with setAttribute), `class`, `on` (event
 * listeners) and `dataset`; children: nodes, strings (as text) or arrays of them; null/false are skipped.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'on') for (const [event, listener] of Object.entries(value)) element.addEventListener(event, listener);
    else if (name === 'dataset') Object.assign(element.dataset, value);
    else if (name === 'class') element.className = value;
    else if (name === 'value') element.value = value;
    else if (name === 'checked' || name === 'disabled' || name === 'selected') element[name] = Boolean(value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.append(child);
    else parent.append(document.createTextNode(visible(child)));
  }
}

/** Appends children as `h` does: strings as text, arrays flattened, null and false skipped. */
export function add(parent, ...children) {
  append(parent, children);
}

/** Replaces everything inside an element. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

/** An SVG element (charts): attributes only, text through `text`. */
export function svg(tag, attributes = {}, text) {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = visible(text);
  return element;
}

/** A `<select>` with its label; `options` are [value, label] pairs. */
export function selectField(label, name, options, current, onChange) {
  const id = `field-${name}`;
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    h(
      'select',
      { id, name, on: { change: (event) => onChange(event.target.value) } },
      options.map(([value, text]) => h('option', { value, selected: value === current }, text)),
    ),
  );
}

/** When something happened, said the way people read it: "3 days ago". */
/**
 * A moment as a person reads it: the date and time in the browser's locale and zone, then how long
 * ago ("5 Dec 2026, 10:04 (3 hours ago)"); never the raw ISO text, which stays in the data.
 */
export function when(iso, now = Date.now()) {
  if (!iso) return 'never';
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return String(iso);
  const text = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' }).format(time);
  return time > now + 60_000 ? text : `${text} (${ago(iso, now)})`;
}

export function ago(iso, now = Date.now()) {
  if (!iso) return 'never';
  const seconds = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (seconds < 60) return 'just now';
  const units = [
    [86_400 * 365, 'year'],
    [86_400 * 30, 'month'],
    [86_400, 'day'],
    [3_600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, unit] of units) {
    if (seconds >= size) {
      const count = Math.floor(seconds / size);
      return `${count} ${unit}${count === 1 ? '' : 's'} ago`;
    }
  }
  return 'just now';
}

/** The age note of SPEC §3 (recall/age-notes.ts): from the last write; aging past ageNoteDays, stale past staleDays. */
export function ageNote(memory, settings, now = Date.now()) {
  const exact = (now - Date.parse(memory.updatedAt)) / 86_400_000;
  const days = Number.isFinite(exact) ? Math.floor(exact) : 0;
  const age = `${days === 1 ? '1 day' : `${days} days`} old`;
  if (exact > settings.staleDays) return { state: 'stale', text: `${age}, stale: may be out of date` };
  if (exact > settings.ageNoteDays) return { state: 'aging', text: `${age}, may be out of date` };
  return { state: 'fresh', text: 'fresh' };
}

export function formatScore(value) {
  return typeof value === 'number' ? value.toFixed(3) : '–';
}

export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** "1 memory", "3 memories": a count with the word in the right number. */
export function count(n, singular, plural = `${singular}s`) {
  return `${n.toLocaleString('en')} ${n === 1 ? singular : plural}`;
}
