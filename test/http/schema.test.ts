// http/schema.ts builds the routes' JSON Schemas without loading TypeBox: the same schemas as TypeBox's `Type`.
import { describe, expect, it } from 'vitest';
import { Type as TypeBox } from 'typebox';
import { Type } from '../../http/schema.ts';
import { lazyValidatorFactory } from '../../http/lazy-validators.ts';

/** JSON with keys sorted (key order means nothing to a JSON Schema), and whether TypeBox's optional mark is set. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) out[k] = canonical((value as Record<string, unknown>)[k]);
  if ((value as { '~optional'?: boolean })['~optional'] === true) out['(optional)'] = true;
  return out;
}

// Each builder the routes use, with options as the routes pass them; the same calls made with both.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the same calls on two implementations
const cases: [string, (T: any) => unknown][] = [
  ['String', (T) => T.String()],
  ['String with options', (T) => T.String({ maxLength: 40, pattern: '^[0-9]+$', default: 'x' })],
  ['Integer', (T) => T.Integer({ minimum: 1, default: 20, maximumClamp: 40 })],
  ['Null', (T) => T.Null()],
  ['Unknown', (T) => T.Unknown()],
  ['Unsafe', (T) => T.Unsafe({ mastodonBoolean: true })],
  ['Literal string', (T) => T.Literal('public')],
  ['Literal number', (T) => T.Literal(3)],
  ['Literal boolean', (T) => T.Literal(true)],
  ['Union', (T) => T.Union([T.Literal('a'), T.Literal('b'), T.Null()], { default: 'a' })],
  ['Array', (T) => T.Array(T.String({ maxLength: 40 }), { maxItems: 4 })],
  ['Optional', (T) => T.Optional(T.String())],
  ['Object', (T) => T.Object({ a: T.String(), b: T.Optional(T.Integer()), c: T.Optional(T.Union([T.String(), T.Null()])) })],
  ['Object all optional, with options', (T) => T.Object({ a: T.Optional(T.String()) }, { additionalProperties: false })],
  ['Object empty', (T) => T.Object({})],
  ['nested Object', (T) => T.Object({ o: T.Optional(T.Object({ x: T.String() })), list: T.Array(T.Object({ y: T.Optional(T.String()) })) })],
  ['Record', (T) => T.Record(T.String(), T.Unknown())],
  ['Record with a key pattern', (T) => T.Record(T.String({ pattern: '^[0-9]+$' }), T.Object({ a: T.String() }), { maxProperties: 4 })],
  ['Optional Record', (T) => T.Optional(T.Record(T.String(), T.Unknown()))],
  ['Partial', (T) => T.Partial(T.Object({ a: T.String(), b: T.Optional(T.Integer()) }))],
  ['Object of Partial', (T) => T.Object({ p: T.Partial(T.Object({ a: T.String() })) })],
];

describe('route schemas without TypeBox', () => {
  it.each(cases)('%s: the same JSON Schema as TypeBox', (_name, make) => {
    expect(canonical(make(Type))).toEqual(canonical(make(TypeBox)));
  });
});

describe('validators compiled at first use', () => {
  it('compiles a route\'s validator on its first call, with Fastify\'s Ajv options and plugins, and passes errors and coercion through', () => {
    let plugins = 0;
    type Validate = ((data: unknown, cxt?: unknown) => boolean) & { errors?: unknown[] | null; schemaEnv?: unknown };
    const factory = lazyValidatorFactory() as unknown as (externalSchemas: unknown, ajvOptions: unknown) => (route: unknown) => Validate;
    const compiler = factory({}, { customOptions: { coerceTypes: 'array', removeAdditional: true, useDefaults: true }, plugins: [() => void plugins++] });
    const validate = compiler({ schema: Type.Object({ limit: Type.Optional(Type.Integer({ default: 20 })), ids: Type.Array(Type.String()) }), method: 'GET', url: '/x', httpPart: 'querystring' });
    expect(plugins).toBe(1); // Ajv is made with the app; the route's validator at its first call
    expect(validate.schemaEnv).toBeTruthy(); // so that Fastify hands it the parent object
    const data: Record<string, unknown> = { ids: '1' };
    expect(validate(data)).toBe(true);
    expect(data).toEqual({ ids: ['1'], limit: 20 });
    expect(validate({ limit: 'many', ids: [] })).toBe(false);
    expect(validate.errors).toHaveLength(1);
    expect(validate({ ids: [] })).toBe(true);
    expect(validate.errors).toBeNull();
    // Other routes of the same app share the one Ajv.
    compiler({ schema: Type.Object({}), httpPart: 'body' })({});
    expect(plugins).toBe(1);
  });

  it('compiles a schema once in a process: an app made again with the same options reuses the validator', () => {
    let compiles = 0;
    type Validate = ((data: unknown, cxt?: unknown) => boolean) & { errors?: unknown[] | null };
    const counting = (ajv: { addKeyword(definition: object): void }) => ajv.addKeyword({ keyword: 'x-counted', compile: () => (compiles++, () => true) });
    const options = { customOptions: { coerceTypes: 'array' }, plugins: [counting] };
    const route = () => ({ schema: Type.Object({ n: Type.Integer() }, { 'x-counted': true }), httpPart: 'body' });
    const first = (lazyValidatorFactory() as unknown as (e: unknown, o: unknown) => (r: unknown) => Validate)({}, options)(route());
    const second = (lazyValidatorFactory() as unknown as (e: unknown, o: unknown) => (r: unknown) => Validate)({}, { ...options })(route());
    expect([first({ n: '1' }), second({ n: '2' }), compiles]).toEqual([true, true, 1]);
    // Errors are still each validator's own answer.
    expect([second({ n: 'x' }), second.errors?.length, first({ n: 3 }), first.errors]).toEqual([false, 1, true, null]);
    // Another schema is compiled for itself.
    (lazyValidatorFactory() as unknown as (e: unknown, o: unknown) => (r: unknown) => Validate)({}, options)({ schema: Type.Object({ m: Type.String() }, { 'x-counted': true }), httpPart: 'body' })({ m: 'a' });
    expect(compiles).toBe(2);
  });
});
