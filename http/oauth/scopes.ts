// Mastodon's OAuth scopes: the three parents, `push` and `profile`, and the granular ones under them.
export const GRANULAR_SCOPES = [
  'read:accounts', 'read:blocks', 'read:bookmarks', 'read:collections', 'read:favourites', 'read:filters', 'read:follows',
  'read:lists', 'read:mutes', 'read:notifications', 'read:search', 'read:statuses',
  'write:accounts', 'write:blocks', 'write:bookmarks', 'write:collections', 'write:conversations', 'write:favourites',
  'write:filters', 'write:follows', 'write:lists', 'write:media', 'write:mutes', 'write:notifications',
  'write:reports', 'write:statuses',
  'admin:read', 'admin:write',
  'admin:read:accounts', 'admin:read:reports', 'admin:read:domain_allows', 'admin:read:domain_blocks',
  'admin:read:ip_blocks', 'admin:read:email_domain_blocks', 'admin:read:canonical_email_blocks',
  'admin:write:accounts', 'admin:write:reports', 'admin:write:domain_allows', 'admin:write:domain_blocks',
  'admin:write:ip_blocks', 'admin:write:email_domain_blocks', 'admin:write:canonical_email_blocks',
] as const;

export const TOP_SCOPES = ['read', 'write', 'follow', 'push', 'profile'] as const;
export const ALL_SCOPES: readonly string[] = [...TOP_SCOPES, ...GRANULAR_SCOPES];
export const DEFAULT_SCOPES = 'read';

// The deprecated `follow` scope still grants what it always did.
const FOLLOW_GRANTS = new Set(['read:blocks', 'write:blocks', 'read:follows', 'write:follows', 'read:mutes', 'write:mutes']);

export function parseScopes(value: string | undefined | null): string[] {
  return (value ?? '').split(/[\s+]+/).filter(Boolean);
}

export function validScopes(scopes: string[]): boolean {
  return scopes.length > 0 && scopes.every((s) => ALL_SCOPES.includes(s));
}

/** Whether a token holding `held` may use a route that needs `needed` (e.g. `read:accounts`). */
export function grants(held: string[], needed: string): boolean {
  if (held.includes(needed)) return true;
  const [parent] = needed.split(':');
  if (parent && parent !== needed && (parent === 'read' || parent === 'write') && held.includes(parent)) return true;
  // `admin:read` and `admin:write` grant every admin scope under them.
  const adminParent = /^(admin:(?:read|write)):/.exec(needed)?.[1];
  if (adminParent && held.includes(adminParent)) return true;
  if (held.includes('follow') && FOLLOW_GRANTS.has(needed)) return true;
  // `profile` is a narrower `read:accounts` for verify_credentials only; routes ask for it by name.
  return false;
}

/** A route's list means any one of them is enough, as Mastodon's `doorkeeper_authorize!` does. */
export function grantsAny(held: string[], needed: readonly string[]): boolean {
  return needed.some((n) => grants(held, n));
}
