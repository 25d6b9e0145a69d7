import { Parser } from 'htmlparser2';
import type { AppContext } from '../context.ts';
import type { AccountRow, ProfileField } from '../storage/accounts.ts';
import type { Queryable } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';

/**
 * Verified profile links, as Mastodon verifies them (Account::Field, VerifyLinkService): a field whose value is a
 * link (ours: the value as typed; another server's: HTML that is one `<a>` whose text is its href) is verified when
 * the linked page has an `<a>` or `<link>` with `rel` containing `me` whose href is the account's profile. The
 * fetching job is jobs/profile-links.ts.
 */

/** `rel="me"` links read from one page, at most. */
const MAX_REL_ME = 100;
/** Fields checked for links (ours have at most 4; other servers' are kept up to 16, federation/remote-accounts.ts). */
export const MAX_VERIFIED_FIELDS = 16;

/**
 * Whether a link may be verified: http(s), a host, no user or password, written as it would be normalised (no
 * Unicode or upper-case host; Mastodon: `normalized_host == host`), so that what the page is checked for and what
 * people see are the same address.
 */
export function verifiableLink(value: string): boolean {
  if (value.length > 2047 || /[^\x21-\x7e]/.test(value)) return false;
  const written = /^https?:\/\/([^/?#]*)/.exec(value);
  if (!written || !URL.canParse(value)) return false;
  const url = new URL(value);
  return url.username === '' && url.password === '' && url.hostname !== '' && written[1] === url.host;
}

/** The single link a remote field's HTML is, when it is nothing but one `<a>` showing its own href. */
export function linkOfFieldHtml(html: string): string | null {
  let depth = 0;
  let topLevel = 0;
  let href: string | null = null;
  let text = '';
  let onlyA = true;
  const parser = new Parser({
    onopentag(name, attribs) {
      if (depth === 0) {
        topLevel += 1;
        if (name !== 'a') onlyA = false;
        href = attribs.href ?? null;
      }
      depth += 1;
    },
    ontext(t) {
      if (depth === 0) {
        if (t.trim() !== '') onlyA = false;
      } else text += t;
    },
    onclosetag() {
      depth -= 1;
    },
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  parser.end(html.trim());
  return onlyA && topLevel === 1 && href !== null && href === text ? href : null;
}

/** What a field links to for verification, or null when it is no verifiable link. */
export function linkForVerification(account: Pick<AccountRow, 'domain'>, field: Pick<ProfileField, 'value'>): string | null {
  const link = account.domain === null ? field.value.trim() : linkOfFieldHtml(field.value);
  return link && verifiableLink(link) ? link : null;
}

export function requiresVerification(account: Pick<AccountRow, 'domain'>, field: ProfileField): boolean {
  return !field.verified_at && linkForVerification(account, field) !== null;
}

/**
 * The addresses a `rel="me"` link may name to point back at an account: its profile page (Mastodon's check, the
 * account's `url`), and its ActivityPub id, which Mastodon sends browsers on to the profile page (where Mastodon
 * would follow that redirect, the id is taken as it is).
 */
export function profileAddresses(account: Pick<AccountRow, 'username' | 'domain' | 'url' | 'uri'>, publicUrl: string): string[] {
  if (account.domain === null) return [`${publicUrl}/@${account.username}`, `${publicUrl}/users/${account.username}`];
  return [account.url, account.uri].filter((u): u is string => !!u);
}

/** The hrefs of a page's `<a>` and `<link>` elements whose `rel` has the token `me`, made absolute. */
export function relMeLinks(html: string, pageUrl: string): string[] {
  const found: string[] = [];
  const parser = new Parser({
    onopentag(name, attribs) {
      if ((name !== 'a' && name !== 'link') || found.length >= MAX_REL_ME || !attribs.href) return;
      if (!(attribs.rel ?? '').toLowerCase().split(/\s+/).includes('me')) return;
      if (URL.canParse(attribs.href.trim(), pageUrl)) found.push(new URL(attribs.href.trim(), pageUrl).href);
    },
  }, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  parser.end(html);
  return found;
}

/** Whether one of the links is one of the account's addresses (compared case-insensitively, as Mastodon does). */
export function linksBack(links: string[], addresses: string[]): boolean {
  const wanted = new Set(addresses.filter((a) => URL.canParse(a)).map((a) => new URL(a).href.toLowerCase()));
  return links.some((l) => wanted.has(l.toLowerCase()));
}

/**
 * Fields after an edit keep the verification of a field of the same value (Mastodon keeps it by value, whatever the
 * name); a changed value is unverified until checked again.
 */
export function keepVerification(previous: ProfileField[], next: Omit<ProfileField, 'verified_at'>[]): ProfileField[] {
  const verified = new Map(previous.filter((f) => f.verified_at).map((f) => [f.value, f.verified_at]));
  return next.map((f) => ({ ...f, verified_at: verified.get(f.value) ?? null }));
}

/** Whether an account's fields call for the verifyAccountLinks job: a link among them not verified yet. */
export function fieldsNeedVerifying(account: Pick<AccountRow, 'domain' | 'fields'>): boolean {
  return account.fields.slice(0, MAX_VERIFIED_FIELDS).some((f) => requiresVerification(account, f));
}

/** The job's outbox row, written in the transaction that set the fields (ours: the profile edit). */
export function queueLinkVerification(db: Queryable, accountId: string): Promise<OutboxRow> {
  return addToOutbox(db, 'verifyAccountLinks', { accountId });
}

/** Another server's account has at most one job waiting (its actor is stored again on every refresh and Update). */
export const linkVerificationPendingKey = (ctx: Pick<AppContext, 'config'>, accountId: string): string => `${ctx.config.redisPrefix}verify-links:${accountId}`;
const PENDING_MS = 10 * 60_000;

/**
 * Queues the job for another server's account just stored, when its fields call for it and none is waiting; the job
 * reads the fields as they are when it runs. A row not queued (Redis away) is queued by the outbox sweeper.
 */
export async function verifyRemoteLinksLater(ctx: AppContext, account: AccountRow): Promise<void> {
  if (account.domain === null || !fieldsNeedVerifying(account)) return;
  if ((await ctx.redis.set(linkVerificationPendingKey(ctx, account.id), '1', 'PX', PENDING_MS, 'NX')) !== 'OK') return;
  const row = await queueLinkVerification(ctx.db, account.id);
  await ctx.jobs.enqueue(row).catch(() => {});
}
