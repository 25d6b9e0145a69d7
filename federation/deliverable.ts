import { validatePublicUrl } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { domainPolicy } from '../services/domain-policy.ts';

/**
 * Whether we may POST to a remote account's inboxes: http(s) only, and (unless ALLOW_PRIVATE_ADDRESSES) never a
 * loopback or private address. Fedify checks addresses when it fetches, not when it sends.
 */
export async function deliverable(app: AppContext, a: AccountRow): Promise<boolean> {
  if (await domainPolicy(app).refuses(a.domain)) return false; // a suspended server gets nothing
  for (const url of [a.inbox_url, a.shared_inbox_url]) {
    if (!url) continue;
    if (!/^https?:\/\//i.test(url)) return false;
    if (!app.config.allowPrivateAddresses && !(await validatePublicUrl(url).then(() => true, () => false))) return false;
  }
  return a.inbox_url !== null;
}
