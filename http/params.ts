import { Type, type TSchema } from './schema.ts';

/**
 * A boolean as Mastodon apps send it: JSON true/false, or "true"/"false"/"1"/"0" (and Rails' "t"/"f", "on"/"off")
 * from forms and query strings. The `mastodonBoolean` keyword (http/plugins/validation.ts) turns it into a real boolean;
 * anything else ("maybe") fails validation with a 422.
 */
export const Bool = () => Type.Unsafe<boolean>({ mastodonBoolean: true });

export { isId } from '../storage/ids.ts';

/** `id[]=1&id[]=2`, `id=1` or a JSON array: always an array after validation. */
export const IdList = (max = 40) => Type.Array(Type.String({ maxLength: 40 }), { maxItems: max });

export const PagingQuery = (defaultLimit: number, maxLimit: number) => ({
  max_id: Type.Optional(Type.String({ maxLength: 40 })),
  since_id: Type.Optional(Type.String({ maxLength: 40 })),
  min_id: Type.Optional(Type.String({ maxLength: 40 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, default: defaultLimit, maximumClamp: maxLimit })),
});

export type { TSchema };
