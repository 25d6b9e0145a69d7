// The route schemas' builders: the part of TypeBox's `Type` the routes use, making the same JSON Schemas. TypeBox
// itself (373 modules with its type engine and TypeScript-syntax parser) cost ~9 MB resident in every process for a
// dozen functions that build plain objects; its types are still what the routes are checked against (`import type`),
// so `Static<typeof X>` and the type provider work as before. test/http/schema.test.ts compares the output with
// TypeBox's own.
import type { Type as TypeBoxType } from 'typebox';

type Schema = Record<string, unknown>;
type Options = Record<string, unknown> | undefined;

/** TypeBox marks optional properties with a non-enumerable `~optional` (not part of the JSON Schema). */
const OPTIONAL = '~optional';

function optional(schema: Schema): Schema {
  const copy = { ...schema };
  Object.defineProperty(copy, OPTIONAL, { value: true, writable: true, enumerable: false, configurable: true });
  return copy;
}

const isOptional = (schema: Schema) => (schema as { [OPTIONAL]?: boolean })[OPTIONAL] === true;

function object(properties: Record<string, Schema>, options?: Options): Schema {
  const required = Object.keys(properties).filter((k) => !isOptional(properties[k]!));
  return { type: 'object', ...(required.length > 0 ? { required } : {}), properties, ...options };
}

const builders = {
  Optional: optional,
  String: (options?: Options): Schema => ({ type: 'string', ...options }),
  Integer: (options?: Options): Schema => ({ type: 'integer', ...options }),
  Null: (options?: Options): Schema => ({ type: 'null', ...options }),
  Unknown: (options?: Options): Schema => ({ ...options }),
  Unsafe: (schema: Schema): Schema => ({ ...schema }),
  Literal: (value: string | number | boolean, options?: Options): Schema => ({ type: typeof value, const: value, ...options }),
  Union: (anyOf: Schema[], options?: Options): Schema => ({ anyOf, ...options }),
  Array: (items: Schema, options?: Options): Schema => ({ type: 'array', items, ...options }),
  Object: object,
  Record: (key: Schema, value: Schema, options?: Options): Schema => ({
    type: 'object', patternProperties: { [typeof key.pattern === 'string' ? key.pattern : '^.*$']: value }, ...options,
  }),
  Partial: (schema: Schema): Schema => {
    const { required: _required, properties, ...rest } = schema as { required?: unknown; properties: Record<string, Schema> };
    return { ...rest, properties: Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, optional(v)])) };
  },
};

/** TypeBox's `Type`, as far as the routes use it (a function not listed here is `undefined`: add it above). */
export const Type = builders as unknown as typeof TypeBoxType;
export type { Static, TSchema } from 'typebox';
