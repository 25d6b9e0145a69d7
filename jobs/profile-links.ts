import type { AppContext } from '../context.ts';
import { findAccountById, markFieldsVerified } from '../storage/accounts.ts';
import { MAX_VERIFIED_FIELDS, linkForVerification, linkVerificationPendingKey, linksBack, profileAddresses, relMeLinks, requiresVerification } from '../services/profile-links.ts';
import { LINK_CARD_LIMITS, decodePage, userAgent } from './link-cards.ts';
import { guardedGet } from '../services/guarded-fetch.ts';

/**
 * The verifyAccountLinks job (Mastodon's VerifyAccountLinksWorker), queued when an account's fields are set (ours on
 * a profile edit, another server's when its actor is stored) and one of them is a link not yet verified: each such
 * link's page is fetched as link cards fetch pages (jobs/link-cards.ts guardedGet: unsigned, public addresses only
 * unless ALLOW_PRIVATE_ADDRESSES, size- and time-limited, HTML only) and read for a `rel="me"` link back to the
 * account (services/profile-links.ts); the fields it finds are marked verified. A page that cannot be had leaves its
 * field unverified, quietly.
 */

interface Log {
  debug(obj: object, msg: string): void;
}

export async function verifyAccountLinks(ctx: AppContext, accountId: string, log?: Log): Promise<string[]> {
  // Whatever changes from now on queues a run of its own.
  await ctx.redis.del(linkVerificationPendingKey(ctx, accountId));
  const account = await findAccountById(ctx.db, accountId);
  if (!account || account.suspended_at || account.deleted_at) return [];
  const addresses = profileAddresses(account, ctx.config.publicUrl);
  const verified: string[] = [];
  for (const field of account.fields.slice(0, MAX_VERIFIED_FIELDS)) {
    const link = requiresVerification(account, field) ? linkForVerification(account, field) : null;
    if (!link) continue;
    try {
      const page = await guardedGet(new URL(link), {
        accept: (t) => t === 'text/html' || t === 'application/xhtml+xml', acceptHeader: 'text/html', maxBytes: LINK_CARD_LIMITS.pageBytes,
        allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx),
      });
      if (linksBack(relMeLinks(decodePage(page), page.url.href), addresses)) verified.push(field.value);
      else log?.debug({ accountId, link }, 'profile link not verified: no rel="me" link back');
    } catch (err) {
      log?.debug({ accountId, link, err: (err as Error).message }, 'profile link not verified: page not fetched');
    }
  }
  if (await markFieldsVerified(ctx.db, accountId, verified, new Date())) await ctx.versions.bump({ accounts: [accountId] });
  return verified;
}
