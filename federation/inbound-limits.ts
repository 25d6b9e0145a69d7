import type { DocumentLoader } from '@fedify/vocab-runtime';

/**
 * What other servers' documents may not be, beyond storable text (federation/storable-documents.ts): nested deeper
 * than any real activity is (Fedify's JSON-LD processing recurses once per level, and a few thousand levels exhaust
 * the stack), or shaped so that Fedify's parser throws.
 */

/** Real activities nest a handful of levels (Create → Note → tag → …, contexts); this leaves ample room. */
export const MAX_NESTING = 64;

/** The most a fetched document may hold, as an inbox POST's body may (Mastodon's 1 MB for both). */
export const MAX_DOCUMENT_CHARS = 1024 * 1024;

/** The length of a parsed document as JSON text (what it took to send it, near enough). */
export function documentChars(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Infinity; // not JSON (a cycle): nothing a server could have sent
  }
}

/** The deepest nesting of arrays and objects in JSON text, read in one pass without parsing it. */
export function jsonNesting(raw: Buffer): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/** The nesting of a parsed value, measured without recursion (stops counting past `limit`). */
export function valueNesting(value: unknown, limit = MAX_NESTING + 1): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > limit) return deepest;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * Whether an error Fedify threw while reading a received activity comes from the activity's shape (a date that is an
 * object, a stack exhausted by nesting, a JSON string that jsonld takes for a context URL) rather than from us: such
 * an activity is the sender's error, a 400. A failed fetch (undici's TypeError "fetch failed") is not its fault.
 */
export function malformedActivityError(err: unknown): boolean {
  if (err instanceof RangeError || err instanceof SyntaxError) return true;
  if (err instanceof Error && err.name.startsWith('jsonld.')) return true;
  return err instanceof TypeError && err.message !== 'fetch failed';
}

/**
 * The first `max` items of a property that may name its items by id (tags, attachments, poll options, profile
 * fields). Each id is a fetch: at most `fetches` are made (none without a loader, as Mastodon, which reads these
 * inlined only), and one that fails or is over budget ends the list, keeping what came before. Fedify's
 * `suppressError` would instead go on fetching every id however many there are, logging each failure as an error.
 */
export async function boundedItems<T>(
  items: (options: { documentLoader: DocumentLoader }) => AsyncIterable<T>,
  max: number,
  loader?: DocumentLoader,
  fetches = 4,
): Promise<T[]> {
  let budget = loader ? fetches : 0;
  const limited: DocumentLoader = (url, options) => {
    if (--budget < 0 || !loader) return Promise.reject(new Error(`not fetched: ${url}`));
    return loader(url, options);
  };
  const out: T[] = [];
  try {
    for await (const item of items({ documentLoader: limited })) {
      out.push(item);
      if (out.length >= max) break;
    }
  } catch {
    // an item that could not be had ends the list
  }
  return out;
}

/** A POSTed body as the JSON object an activity is, parsed once for the checks before Fedify; null when it is not one. */
export function parsedActivity(body: Buffer): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null; // Fedify answers what is not JSON
  }
}
