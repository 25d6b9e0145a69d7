/**
 * What PostgreSQL refuses in text: U+0000 (its `text` cannot hold it) and unpaired UTF-16 surrogates (they have no
 * UTF-8 form). Clients' input with either is refused at the edge (http/plugins/text-guard.ts); other servers'
 * documents have them removed (federation/storable-documents.ts). Nothing else is judged here.
 */

/** Whether PostgreSQL can store this string. */
export function isStorable(s: string): boolean {
  return !s.includes('\0') && s.isWellFormed();
}

/** The string without NUL, with each unpaired surrogate replaced by U+FFFD (as a UTF-8 decoder would). */
export function storable(s: string): string {
  return s.replaceAll('\0', '').toWellFormed();
}

type Container = Record<string, unknown> | unknown[];

/**
 * Where the first unstorable string (a value or a key) is in a parsed JSON, form or query value: its path, like
 * `fields_attributes.0.name`, `""` for the value itself, or null when there is none. Walked with an explicit stack,
 * since a body may nest deeper than the call stack.
 */
export function findUnstorable(value: unknown): string | null {
  if (typeof value === 'string') return isStorable(value) ? null : '';
  const stack: [Container, string][] = [];
  if (value !== null && typeof value === 'object') stack.push([value as Container, '']);
  while (stack.length > 0) {
    const [container, path] = stack.pop()!;
    for (const key of Object.keys(container)) {
      const here = path === '' ? key : `${path}.${key}`;
      if (!isStorable(key)) return storable(here);
      const v = (container as Record<string, unknown>)[key];
      if (typeof v === 'string') {
        if (!isStorable(v)) return here;
      } else if (v !== null && typeof v === 'object') stack.push([v as Container, here]);
    }
  }
  return null;
}

/**
 * Makes every string of a parsed JSON value storable, in place (keys too); returns whether anything changed. The
 * caller owns the value (a freshly parsed document).
 */
export function makeStorable(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  let changed = false;
  const stack: Container[] = [value as Container];
  while (stack.length > 0) {
    const container = stack.pop()!;
    for (const key of Object.keys(container)) {
      const record = container as Record<string, unknown>;
      let v = record[key];
      if (typeof v === 'string' && !isStorable(v)) {
        v = storable(v);
        record[key] = v;
        changed = true;
      } else if (v !== null && typeof v === 'object') stack.push(v as Container);
      if (!Array.isArray(container) && !isStorable(key)) {
        delete record[key];
        record[storable(key)] = v;
        changed = true;
      }
    }
  }
  return changed;
}
