import { isActor } from '@fedify/vocab';
import type { AppContext } from '../context.ts';
import { findAccountByUri, type AccountRow } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';
import { signedLoader } from './instance-actor.ts';
import { storeRemoteActor } from './remote-accounts.ts';
import { storeFetchedNote } from './remote-statuses.ts';
import { confirmedByWebFinger, fetchById } from './fetch-object.ts';
import { isStatusObject } from './incoming-objects.ts';

/**
 * What a link to another server names, fetched with a GET signed by the person asking (so a followers-only post
 * they may see comes back too, and servers that refuse unsigned fetches answer): an account or a status, stored.
 */
export async function resolveRemoteLink(app: AppContext, url: string, actingAs: AccountRow): Promise<{ account?: AccountRow; status?: StatusRow } | null> {
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url) || new URL(url).origin === new URL(app.config.publicUrl).origin) return null;
  const known = await findAccountByUri(app.db, url);
  if (known) return known.suspended_at ? null : { account: known };
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  const loader = await signedLoader(fed, actingAs);
  let found: unknown;
  try {
    found = await fetchById(fed, url, loader);
  } catch {
    return null; // unreachable, refused, or not ActivityPub
  }
  if (isActor(found)) {
    if (!(await confirmedByWebFinger(fed, found))) return null;
    const account = await storeRemoteActor(app, found);
    return account && !account.suspended_at ? { account } : null;
  }
  // A post of any type Mastodon shows (a Lemmy Page, a PeerTube Video, a WordPress Article…: incoming-objects.ts).
  if (isStatusObject(found)) {
    const status = await storeFetchedNote(fed, found, { loader });
    return status && !status.deleted_at ? { status } : null;
  }
  return null;
}
