import fc from 'fast-check';

/**
 * Values for fuzzing requests: what a route's schema asks for, and what a careless or hostile client sends instead.
 * Shared by the route fuzz (test/http/fuzz.test.ts) and the inbox fuzz (test/federation/inbox-fuzz.test.ts).
 */

type Schema = Record<string, unknown>;

/** Nested `depth` deep, built without recursion. */
export function deep(depth: number, kind: 'array' | 'object'): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = kind === 'array' ? [v] : { a: v };
  return v;
}

/** Text PostgreSQL refuses, and text that is merely odd. */
export const BAD_STRINGS = [
  '', ' ', '\0', 'a\0b', '\ud800', 'x\udfffy', '\udc00\ud800', '%00', '%', '..', '../../etc/passwd', '<script>alert(1)</script>',
  '０１２', '🦣'.repeat(3), 'e\u0301', '\u202e', '@', '@a@b', '#', 'x'.repeat(5000), '\r\n', '{"a":1}', 'null', 'true', 'NaN',
];
/** Numbers and numeric strings at and past every edge a column or parser has. */
export const ODD_NUMBERS = [
  0, -1, 1.5, -0.0, 1e308, -1e308, 2 ** 31, 2 ** 63, 9007199254740993, Number.MAX_SAFE_INTEGER,
  '0', '-1', '1e3', '0x10', '1.5', '99999999999999999999999', '9223372036854775807', '9223372036854775808', '-9223372036854775809', 'Infinity',
];
/** Values of the wrong shape for any field. */
export const WRONG_SHAPES: unknown[] = [null, true, false, [], {}, ['a', 'b'], [['a']], { a: 1 }, { $gt: '' }, [null], [{}], deep(40, 'array'), deep(40, 'object')];

/** Any bad value; the big ones (very deep, very long) come rarely, so a run stays quick. */
export const badValue = (ids: readonly string[]): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...BAD_STRINGS) },
    { weight: 4, arbitrary: fc.constantFrom(...ODD_NUMBERS) },
    { weight: 4, arbitrary: fc.constantFrom(...WRONG_SHAPES) },
    { weight: 3, arbitrary: ids.length > 0 ? fc.constantFrom(...ids) : fc.constant('1') },
    { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
    { weight: 2, arbitrary: fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String) },
    { weight: 1, arbitrary: fc.constantFrom(deep(3000, 'array'), deep(3000, 'object'), 'y'.repeat(200_000), Array.from({ length: 5000 }, (_, i) => String(i))) },
  );

/** A value the schema would take (roughly: enums, types, bounds), so routes are reached past validation too. */
export function fitting(schema: Schema | undefined, ids: readonly string[]): fc.Arbitrary<unknown> {
  if (!schema) return fc.string({ maxLength: 8 });
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.mastodonBoolean) return fc.constantFrom(true, false, 'true', '0');
  const anyOf = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (anyOf?.length) return fc.oneof(...anyOf.map((s) => fitting(s, ids)));
  switch (schema.type) {
    case 'integer':
    case 'number':
      return fc.integer({ min: typeof schema.minimum === 'number' ? schema.minimum : -5, max: typeof schema.maximum === 'number' ? schema.maximum : 1000 });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(fitting(schema.items as Schema | undefined, ids), { maxLength: 3 });
    case 'object':
      return objectOf(schema, ids, 0);
    default:
      // Strings: most parameters are ids or short words.
      return fc.oneof(ids.length > 0 ? fc.constantFrom(...ids) : fc.constant('1'), fc.string({ maxLength: 10 }), fc.constantFrom('public', 'en', 'https://example.com/'));
  }
}

/** An object for a schema: each known property left out, fitting, or bad; sometimes a stray extra key. */
export function objectOf(schema: Schema | undefined, ids: readonly string[], badWeight = 2): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema?.properties ?? {}) as Record<string, Schema>;
  const names = Object.keys(properties);
  const entry = (name: string) =>
    fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      { weight: 3, arbitrary: fitting(properties[name], ids) },
      { weight: badWeight, arbitrary: badValue(ids) },
    );
  const extra = fc.option(fc.tuple(fc.constantFrom('id', 'status', 'q', 'limit', 'account_id', 'x\0y', '__proto__', 'constructor'), badValue(ids)), { freq: 4 });
  return fc.tuple(fc.tuple(...names.map(entry)), extra).map(([values, more]) => {
    const out: Record<string, unknown> = {};
    names.forEach((name, i) => {
      if (values[i] !== undefined) out[name] = values[i];
    });
    if (more) Object.defineProperty(out, more[0], { value: more[1], enumerable: true, configurable: true, writable: true });
    return out;
  });
}

/**
 * `a[b][0]=…` pairs, as Rails-style forms and query strings nest them; below a few levels the rest is sent as its JSON
 * text (qs would recurse as deep as the value, and the server's parser stops at 5 levels anyway).
 */
export function formPairs(value: Record<string, unknown>, maxDepth = 6): [string, string][] {
  const out: [string, string][] = [];
  const walk = (v: unknown, name: string, depth: number) => {
    if (v === undefined) return;
    if (v === null || typeof v !== 'object') return void out.push([name, String(v)]);
    if (depth >= maxDepth) return void out.push([name, JSON.stringify(v)]);
    const entries = Array.isArray(v) ? v.map((x) => ['', x] as const) : Object.entries(v);
    if (entries.length === 0) return void out.push([name, '']);
    for (const [k, x] of entries) walk(x, `${name}[${k}]`, depth + 1);
  };
  for (const [k, v] of Object.entries(value)) walk(v, k, 0);
  return out;
}

/** Pairs as a query string or form body; a lone surrogate (no UTF-8 form) is sent as its CESU-8 bytes. */
export function encodePairs(pairs: [string, string][]): string {
  const enc = (s: string) => {
    try {
      return encodeURIComponent(s);
    } catch {
      return [...s].map((c) => { try { return encodeURIComponent(c); } catch { return '%ED%A0%80'; } }).join('');
    }
  };
  return pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
}
