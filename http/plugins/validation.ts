import type { Ajv } from 'ajv';

const TRUE = new Set([true, 1, 'true', '1', 't', 'T', 'TRUE', 'True', 'on', 'ON', 'yes']);
const FALSE = new Set([false, 0, 'false', '0', 'f', 'F', 'FALSE', 'False', 'off', 'OFF', 'no']);

/** Parses a Mastodon-style boolean, or returns undefined when the value is not one. */
export function parseBoolean(value: unknown): boolean | undefined {
  if (TRUE.has(value as never)) return true;
  if (FALSE.has(value as never)) return false;
  return undefined;
}

interface DataContext {
  parentData: Record<string | number, unknown>;
  parentDataProperty: string | number;
}

/** Custom keywords for Fastify's Ajv: Mastodon booleans and integers clamped to a maximum. (A lone `id=1` for an array is already coerced by Fastify's `coerceTypes: 'array'`.) */
export function mastodonKeywords(ajv: Ajv): Ajv {
  ajv.addKeyword({
    keyword: 'mastodonBoolean',
    modifying: true,
    errors: false,
    validate: (_schema: unknown, data: unknown, _parent: unknown, ctx?: DataContext) => {
      const parsed = parseBoolean(data);
      if (parsed === undefined) return false;
      if (ctx?.parentData) ctx.parentData[ctx.parentDataProperty] = parsed;
      return true;
    },
  });
  // Mastodon clamps `limit` to its maximum rather than refusing it.
  ajv.addKeyword({
    keyword: 'maximumClamp',
    modifying: true,
    validate: (max: number, data: unknown, _parent: unknown, ctx?: DataContext) => {
      if (typeof data === 'number' && data > max && ctx?.parentData) ctx.parentData[ctx.parentDataProperty] = max;
      return true;
    },
  });
  return ajv;
}
