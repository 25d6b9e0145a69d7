/**
 * What other servers' documents may not be, beyond storable text (federation/storable-documents.ts): nested deeper
 * than any real activity is (Fedify's JSON-LD processing recurses once per level, and a few thousand levels exhaust
 * the stack), or shaped so that Fedify's parser throws.
 */

/** Real activities nest a handful of levels (Create → Note → tag → …, contexts); this leaves ample room. */
export const MAX_NESTING = 64;

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
 * object, a stack exhausted by nesting) rather than from us: such an activity is the sender's error, a 400. A failed
 * fetch (undici's TypeError "fetch failed") is not the document's fault.
 */
export function malformedActivityError(err: unknown): boolean {
  if (err instanceof RangeError || err instanceof SyntaxError) return true;
  return err instanceof TypeError && err.message !== 'fetch failed';
}
