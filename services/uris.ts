import type { AccountRow } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';

/**
 * The ActivityPub ids of accounts and statuses, Mastodon's URL scheme for ours and the stored uri for others'.
 * Both the API (serializers) and the federation name things by them.
 */
export function accountUri(server: { publicUrl: string }, a: Pick<AccountRow, 'username' | 'domain' | 'uri'>): string {
  return a.domain === null ? `${server.publicUrl}/users/${a.username}` : (a.uri ?? '');
}

export function statusUri(server: { publicUrl: string }, s: Pick<StatusRow, 'uri' | 'id'>, authorUsername: string): string {
  return s.uri ?? `${server.publicUrl}/users/${authorUsername}/statuses/${s.id}`;
}
