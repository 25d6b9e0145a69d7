import { randomBytes } from 'node:crypto';
import { encode as encodeBlurhash } from 'blurhash';
import type { AppContext } from '../context.ts';
import { findAccountById, findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { attachCard, detachCard, findCardByUrl, setCardImage, statusForLinkCard, statusesWithCard, upsertCard, type PreviewCardRow } from '../storage/preview-cards.ts';
import { CARD_REFRESH_AFTER_MS, firstCardLink, ownHosts, pageEncoding, parseOEmbed, parsePage, type OEmbedDetails } from '../services/preview-cards.ts';
import { publishedLocalAccount } from '../services/local-accounts.ts';
import { domainPolicy } from '../services/domain-policy.ts';
import { loadSharp } from '../services/sharp.ts';
import { fanOutStatus } from './fanout.ts';
import { guardedGet, LinkFetchError, type Fetched } from '../services/guarded-fetch.ts';

export { LinkFetchError };

/**
 * The fetchLinkCard job (queued from the outbox with a status that has a link, services/statuses.ts): the link's
 * page is fetched (unsigned, public addresses only unless ALLOW_PRIVATE_ADDRESSES, size- and time-limited, HTML only),
 * read for a card (services/preview-cards.ts), its image resized onto the file host, and the card attached to the
 * status; then the status's renderings are refreshed and its streams told (`status.update`). A page that cannot be
 * had gives no card and no error: the job ends quietly.
 */

/** Limits of the fetches; a test may shorten them (they are read at each fetch). */
export const LINK_CARD_LIMITS = {
  /** The whole of one fetch (connection, redirects, answer). */
  timeoutMs: 10_000,
  pageBytes: 1024 * 1024,
  oembedBytes: 64 * 1024,
  imageBytes: 4 * 1024 * 1024,
  redirects: 3,
};

/** Mastodon's card image size: at most 400×400, aspect kept. */
const IMAGE_SIZE = 400;
const MAX_INPUT_PIXELS = 7680 * 4320;

interface Log {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** JSON (oEmbed): the header's charset, else UTF-8. */
function decode(f: Fetched): string {
  try {
    return new TextDecoder(f.charset ?? 'utf-8').decode(f.body);
  } catch {
    return new TextDecoder('utf-8').decode(f.body);
  }
}

/** A page, in the charset its bytes, its header or its `<meta>` say (services/preview-cards.ts pageEncoding). */
export function decodePage(f: Fetched): string {
  return new TextDecoder(pageEncoding(f.body, f.charset)).decode(f.body);
}

/**
 * Finds the account a page names as its `fediverse:creator` (`user@domain`); null when there is none to be had.
 * `fetch`: another server's account not stored yet may be looked up there.
 */
export type CreatorResolver = (handle: string, o: { fetch: boolean }) => Promise<AccountRow | null>;

/**
 * Whether an account may be credited for a page on `host`: Mastodon asks the account's attribution_domains (the page's
 * host or a parent domain of it among them). This server has no attribution domains yet; what stands for them is what
 * it knows the account to own: its own server's domain, and the sites of its verified profile links (rel="me").
 */
export function canBeAttributedFrom(account: AccountRow, host: string, localDomain: string): boolean {
  const own = [account.domain ?? localDomain];
  // Only our own accounts' verified links count: another server's account is credited on its own domain alone.
  for (const f of account.fields ?? []) {
    if (!f.verified_at || account.domain !== null) continue;
    const href = /href="([^"]+)"/.exec(f.value_html)?.[1] ?? f.value;
    try {
      own.push(new URL(href.replace(/&amp;/g, '&')).hostname);
    } catch {
      // not a link
    }
  }
  return own.some((d) => onSite(host, d));
}

/** Whether `host` is `domain` or below it (ports aside). */
function onSite(host: string, domain: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  const d = domain.toLowerCase().replace(/:\d+$/, '');
  return d !== '' && (h === d || h.endsWith(`.${d}`));
}

/** A card image resized to fit 400×400 (WebP), with its blurhash. */
export async function processCardImage(input: Buffer): Promise<{ data: Buffer; width: number; height: number; blurhash: string }> {
  const sharp = await loadSharp();
  const meta = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
  if (!meta.format || !['jpeg', 'png', 'gif', 'webp', 'avif'].includes(meta.format) || !meta.width || !meta.height) throw new LinkFetchError('not an image');
  const out = await sharp(input, { failOn: 'truncated', limitInputPixels: MAX_INPUT_PIXELS })
    .rotate()
    .resize({ width: IMAGE_SIZE, height: IMAGE_SIZE, fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 80 })
    .toBuffer({ resolveWithObject: true });
  const pixels = await sharp(out.data).resize({ width: 32, height: 32, fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const blurhash = encodeBlurhash(new Uint8ClampedArray(pixels.data), pixels.info.width, pixels.info.height, 4, 3);
  return { data: out.data, width: out.info.width, height: out.info.height, blurhash };
}

type Ctx = Pick<AppContext, 'db' | 'config' | 'fileHost'>;

/** How this server names itself when it fetches pages (link cards, profile links). */
export const userAgent = (ctx: Pick<AppContext, 'config'>) => `fedi-server/${ctx.config.softwareVersion} (+${ctx.config.publicUrl}/)`;

/** Fetches a card's image onto the file host; null when it cannot be had. */
async function fetchImage(ctx: Ctx, imageUrl: string, log?: Log): Promise<{ key: string; width: number; height: number; blurhash: string } | null> {
  try {
    const f = await guardedGet(new URL(imageUrl), {
      timeoutMs: LINK_CARD_LIMITS.timeoutMs, redirects: LINK_CARD_LIMITS.redirects,
      accept: (t) => t.startsWith('image/') && t !== 'image/svg+xml', acceptHeader: 'image/*', maxBytes: LINK_CARD_LIMITS.imageBytes,
      allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx),
    });
    const image = await processCardImage(f.body);
    const key = `preview_cards/${randomBytes(12).toString('hex')}.webp`;
    await ctx.fileHost.put(key, image.data, 'image/webp');
    return { key, width: image.width, height: image.height, blurhash: image.blurhash };
  } catch (err) {
    log?.debug({ url: imageUrl, err: (err as Error).message }, 'link card image not fetched');
    return null;
  }
}

/** Fetches a link's page (and its oEmbed, and image) and stores its card; null when the page gives none. */
export async function fetchCard(ctx: Ctx, url: string, withImage: boolean, log?: Log, resolveCreator?: CreatorResolver): Promise<PreviewCardRow | null> {
  let page: Fetched;
  try {
    page = await guardedGet(new URL(url), {
      timeoutMs: LINK_CARD_LIMITS.timeoutMs, redirects: LINK_CARD_LIMITS.redirects,
      accept: (t) => t === 'text/html', acceptHeader: 'text/html', maxBytes: LINK_CARD_LIMITS.pageBytes,
      allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx),
    });
  } catch (err) {
    log?.debug({ url, err: (err as Error).message }, 'no link card: page not fetched');
    return null;
  }
  const details = parsePage(decodePage(page), page.url.href);
  let oembed: OEmbedDetails | null = null;
  if (details.oembedUrl) {
    try {
      const f = await guardedGet(new URL(details.oembedUrl), {
        timeoutMs: LINK_CARD_LIMITS.timeoutMs, redirects: LINK_CARD_LIMITS.redirects,
        accept: (t) => t === 'application/json' || t === 'application/json+oembed' || t === 'text/javascript', acceptHeader: 'application/json',
        maxBytes: LINK_CARD_LIMITS.oembedBytes, allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx),
      });
      oembed = parseOEmbed(JSON.parse(decode(f)), page.url.href);
    } catch (err) {
      log?.debug({ url: details.oembedUrl, err: (err as Error).message }, 'oEmbed not fetched');
    }
  }
  const title = details.title || oembed?.title || '';
  const html = oembed?.html ?? '';
  // As Mastodon: a page with neither a title nor an embed gives no card.
  if (!title && !html) {
    log?.debug({ url }, 'no link card: the page has no title');
    return null;
  }
  const image = withImage && details.image ? await fetchImage(ctx, details.image, log) : null;
  const authorAccount = details.creator && resolveCreator ? await creditedAuthor(ctx, details.creator, page.url, resolveCreator, log) : null;
  const { card, replacedImageKey } = await upsertCard(ctx.db, {
    url,
    title,
    description: details.description,
    type: oembed?.type ?? 'link',
    author_name: oembed?.authorName || details.author,
    author_url: oembed?.authorUrl || details.authorUrl,
    provider_name: oembed?.providerName || details.siteName,
    provider_url: oembed?.providerUrl || details.siteUrl,
    html,
    embed_url: oembed?.embedUrl ?? '',
    // An embed's size is the embed's; otherwise the image's.
    width: html ? oembed!.width : (image?.width ?? 0),
    height: html ? oembed!.height : (image?.height ?? 0),
    image_remote_url: details.image,
    image_key: image?.key ?? null,
    blurhash: image?.blurhash ?? null,
    published_at: details.publishedAt,
    language: details.language,
    image_description: details.imageDescription,
    author_account_id: authorAccount?.id ?? null,
  });
  if (replacedImageKey) await ctx.fileHost.delete(replacedImageKey).catch(() => {});
  return card;
}

/** The account a page names as its creator, if it resolves and may be credited for the page's site. */
async function creditedAuthor(ctx: Ctx, handle: string, pageUrl: URL, resolve: CreatorResolver, log?: Log): Promise<AccountRow | null> {
  let account: AccountRow | null;
  try {
    // Another server's account can only be credited for pages on its own domain (see canBeAttributedFrom): for other
    // pages only a stored one is looked at, so that no page makes this server ask just any host about any handle.
    account = await resolve(handle, { fetch: onSite(pageUrl.hostname, handle.slice(handle.lastIndexOf('@') + 1)) });
  } catch (err) {
    log?.debug({ handle, err: (err as Error).message }, 'link card creator not resolved');
    return null;
  }
  if (!account || account.suspended_at || account.deleted_at) return null;
  if (!canBeAttributedFrom(account, pageUrl.hostname, ctx.config.localDomain)) {
    log?.debug({ handle, host: pageUrl.hostname }, 'link card creator not credited: the page is not on a site of theirs');
    return null;
  }
  return account;
}

/**
 * `user@domain` as an account: ours from storage, another server's through WebFinger and its actor (stored ones as
 * they are), fetched by the instance actor. Only the job calls this, never a request.
 */
export function creatorResolver(ctx: AppContext): CreatorResolver {
  return async (handle, { fetch }) => {
    const at = handle.lastIndexOf('@');
    const username = handle.slice(0, at);
    const domain = handle.slice(at + 1).toLowerCase();
    if (ownHosts(ctx.config).has(domain)) return publishedLocalAccount(ctx, username);
    if (await domainPolicy(ctx).refuses(domain)) return null;
    if (!fetch) return findAccountByUsername(ctx.db, username, domain);
    const { resolveAcct } = await import('../federation/remote-accounts.ts');
    return resolveAcct(ctx, ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx), username, domain);
  };
}

/** Fetches of a card in progress in this process, by URL (and whether with its image). */
const fetching = new Map<string, Promise<PreviewCardRow | null>>();
/** How many jobs took the result of another's fetch (tests wait on it). */
let joinedFetches = 0;
export const joinedLinkCardFetches = (): number => joinedFetches;

/**
 * A link's card fetched once for all the jobs of this process that want it at the same moment: many posts linking to
 * the same page at once (a popular article) make one fetch rather than one each, as Mastodon's lock per URL in
 * FetchLinkCardService does (its waiters then find the card stored). A job that comes after the fetch ended fetches
 * again if there is still no card: failures are not remembered.
 */
function fetchingOnce(url: string, withImage: boolean, fetch: () => Promise<PreviewCardRow | null>): Promise<PreviewCardRow | null> {
  const key = `${withImage ? 'i' : '-'}${url}`;
  const running = fetching.get(key);
  if (running) {
    joinedFetches += 1;
    return running;
  }
  const started = fetch().finally(() => fetching.delete(key));
  fetching.set(key, started);
  return started;
}

/**
 * The job: the status's first link that gets a card (none for statuses with media, as in Mastodon), its card
 * fetched unless one fresh enough is stored, attached; a status from a server whose media we reject shows it without
 * an image. An edit that took the link away takes the card away.
 */
export async function fetchLinkCard(ctx: AppContext, statusId: string, log?: Log): Promise<'attached' | 'unchanged' | 'removed' | 'none'> {
  const status = await statusForLinkCard(ctx.db, statusId);
  if (!status || status.deleted_at || status.reblog_of_id) return 'none';
  const url = status.has_media ? null : firstCardLink(status.content, ownHosts(ctx.config));
  if (!url) {
    if (!status.has_card || !(await detachCard(ctx.db, statusId))) return 'none';
    await changed(ctx, statusId);
    return 'removed';
  }
  // A local author's media are never refused: their account need not be read.
  const author = status.uri === null ? null : await findAccountById(ctx.db, status.account_id);
  const withoutImage = !!author?.domain && (await domainPolicy(ctx).rejectsMedia(author.domain));
  let card = await findCardByUrl(ctx.db, url);
  // A stored card that changes changes the renderings of the statuses already showing it.
  let refreshed = false;
  if (!card || Date.now() - card.updated_at.getTime() > CARD_REFRESH_AFTER_MS) {
    const fetched = await fetchingOnce(url, !withoutImage, () => fetchCard(ctx, url, !withoutImage, log, creatorResolver(ctx)));
    refreshed = !!card && !!fetched;
    // A page that cannot be fetched again keeps the card it had.
    card = fetched ?? card;
  } else if (!withoutImage && card.image_remote_url && !card.image_key && !card.html) {
    // Stored without its image (for a server whose media we reject, or the image failed): fetched now.
    const image = await fetchImage(ctx, card.image_remote_url, log);
    if (image) {
      const replaced = await setCardImage(ctx.db, card.id, image);
      if (replaced) await ctx.fileHost.delete(replaced).catch(() => {});
      refreshed = true;
    }
  }
  if (card && refreshed) await ctx.versions.bump({ statuses: await statusesWithCard(ctx.db, card.id) });
  if (!card) {
    if (status.has_card && (await detachCard(ctx.db, statusId))) await changed(ctx, statusId);
    return 'none';
  }
  if (!(await attachCard(ctx.db, statusId, card.id, url, withoutImage))) return 'unchanged';
  await changed(ctx, statusId);
  log?.debug({ statusId, url }, 'link card attached');
  return 'attached';
}

/** The status shows another card: cached renderings are redone, and the streams that had it are told (`status.update`). */
async function changed(ctx: AppContext, statusId: string): Promise<void> {
  await ctx.versions.bump({ statuses: [statusId] });
  await fanOutStatus(ctx, statusId, true);
}
