// Custom emoji on the wire: the `Emoji` tags other servers put on their Notes, Questions and actors (Mastodon's
// `toot:Emoji`, which Misskey, Pleroma and Akkoma send too), and ours on what we publish, each emoji served at its own
// URL as Mastodon does (`/emojis/:id`).
import { Emoji, Image, Link, type Object as APObject } from '@fedify/vocab';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import { Temporal } from '@js-temporal/polyfill';
import type { AppContext } from '../context.ts';
import type { EmojiRow, RemoteEmoji } from '../storage/custom-emojis.ts';
import { EMOJI_PER_OBJECT_MAX, emojiImageUrls, resolveEmojis, SHORTCODE_RE, storeRemoteEmojis } from '../services/custom-emojis.ts';
import { boundedItems } from './inbound-limits.ts';
import { partLogger } from './folded-log.ts';

/** Mastodon's MAX_FEDERATED_SHORTCODE_SIZE: longer names from other servers are refused. */
const FEDERATED_SHORTCODE_MAX = 2048;

const emojiLog = (app: AppContext) => partLogger(app.config.logLevel, 'emoji');

const httpUrl = (v: unknown): URL | null => {
  const url = v instanceof Link ? v.href : v;
  return url instanceof URL && (url.protocol === 'https:' || url.protocol === 'http:') ? url : null;
};

/**
 * The emoji an object's tags name, as we keep them for its server (`domain`): a `:shortcode:` name of Mastodon's
 * pattern and an icon whose URL is http(s), else the tag is passed over. Tags named by id are fetched a few at most
 * (boundedItems); at most EMOJI_PER_OBJECT_MAX are taken, and more is logged.
 */
export async function remoteEmojisOf(app: AppContext, object: APObject, domain: string, loader?: DocumentLoader): Promise<RemoteEmoji[]> {
  const found = new Map<string, RemoteEmoji>();
  let over = 0;
  for (const tag of await boundedItems((o) => object.getTags(o), 200, loader)) {
    if (!(tag instanceof Emoji)) continue;
    const shortcode = String(tag.name ?? '').replace(/^:|:$/g, '');
    if (!SHORTCODE_RE.test(shortcode) || shortcode.length > FEDERATED_SHORTCODE_MAX || found.has(shortcode)) continue;
    let icon: Image | null = null;
    try {
      const got = await tag.getIcon({ documentLoader: refuseFetch });
      icon = got instanceof Image ? got : null;
    } catch {
      continue; // an icon named by id only: Mastodon inlines it, and fetching one per emoji is not worth it
    }
    const url = httpUrl(icon?.url);
    if (!url) continue;
    if (found.size >= EMOJI_PER_OBJECT_MAX) {
      over++;
      continue;
    }
    found.set(shortcode, {
      shortcode, domain, uri: tag.id?.href ?? null, image_remote_url: url.href,
      updated: tag.updated ? new Date(tag.updated.epochMilliseconds) : null,
    });
  }
  if (over > 0) emojiLog(app).info({ object: object.id?.href, taken: found.size, left: over }, 'object names more emoji than are taken');
  return [...found.values()];
}

const refuseFetch: DocumentLoader = (url) => Promise.reject(new Error(`not fetched: ${url}`));

/** Stores the emoji an object of `domain` names (before the object itself, whose rendering then finds them). */
export async function receiveRemoteEmojis(app: AppContext, object: APObject, domain: string | null, loader?: DocumentLoader): Promise<void> {
  if (!domain) return;
  await storeRemoteEmojis(app, await remoteEmojisOf(app, object, domain, loader));
}

/** Where one of our emoji is, as an ActivityPub object (Mastodon's route). */
export function emojiUri(app: AppContext, e: Pick<EmojiRow, 'id'>): URL {
  return new URL(`/emojis/${e.id}`, app.config.publicUrl);
}

/** One of our emoji as Mastodon publishes it: id, `:name:`, when its image last changed, and its image. */
export function emojiObjectOf(app: AppContext, e: EmojiRow): Emoji {
  return new Emoji({
    id: emojiUri(app, e),
    name: `:${e.shortcode}:`,
    updated: Temporal.Instant.fromEpochMilliseconds(e.updated_at.getTime()),
    icon: new Image({ mediaType: e.image_content_type, url: new URL(emojiImageUrls(app.render, e).url) }),
  });
}

/** The Emoji tags for our emoji that these texts use (one query, none without a `:code:`). */
export async function localEmojiTags(app: AppContext, texts: (string | null | undefined)[]): Promise<Emoji[]> {
  const used = (await resolveEmojis(app.db, [{ key: 0, domain: null, texts }])).get(0) ?? [];
  return used.map((e) => emojiObjectOf(app, e));
}
