import type { AppContext } from '../context.ts';
import { findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { pendingAccountIds } from '../storage/users.ts';

/** A local account that may be shown to other servers: not suspended, not waiting for approval. */
export async function publishedLocalAccount(app: AppContext, username: string): Promise<AccountRow | null> {
  const account = await findAccountByUsername(app.db, username, null);
  if (!account || account.suspended_at) return null;
  if ((await pendingAccountIds(app.db, [account.id])).has(account.id)) return null;
  return account;
}

/**
 * A local account whose actor and key are served: published ones, and suspended ones in a reduced form, as Mastodon
 * does, so that the `Delete` of a suspended actor can be checked by the servers it is sent to.
 */
export async function signingLocalAccount(app: AppContext, username: string): Promise<AccountRow | null> {
  const account = await findAccountByUsername(app.db, username, null);
  // A deleted account answers 410 Gone instead (http/web/federation-redirects.ts), its key with it.
  if (!account || account.deleted_at || (await pendingAccountIds(app.db, [account.id])).has(account.id)) return null;
  return account;
}
