// Custom emoji: this server's, added by its operator (cli/admin.ts), and other servers', as their objects' Emoji tags
// name them. Which emoji a text uses is Mastodon's rule: `:shortcode:` between non-alphanumerics, emoji of the
// server the text is from, enabled ones only.
import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import type { FileHost } from '../storage/filehost/index.ts';
import { EMOJI_VERSION_ID, type CacheVersions } from '../storage/cache-versions.ts';
import {
  deleteLocalEmoji, enabledEmojisOf, enabledEmojisOfAuthors, listLocalEmojis, putLocalEmoji, setLocalEmojiDisabled, setLocalEmojiVisibleInPicker, setRemoteEmojiDisabled, upsertRemoteEmojis,
  type EmojiRow, type RemoteEmoji,
} from '../storage/custom-emojis.ts';
import { loadSharp } from './sharp.ts';
import { normalizeDomain } from './domain-policy.ts';
import { logAction, type Actor } from './action-log.ts';

/** Mastodon's CustomEmoji::LIMIT: an emoji image is less than 256 KB. */
export const EMOJI_SIZE_LIMIT = 256 * 1024;
/** Mastodon's shortcode pattern and its length limit for this server's emoji. */
export const SHORTCODE_RE = /^[a-zA-Z0-9_]{2,}$/;
export const LOCAL_SHORTCODE_MAX = 128;
/** A category's name is short (the picker shows it as a heading). */
export const CATEGORY_MAX = 64;
/** Mastodon's CustomEmoji::IMAGE_MIME_TYPES, by the format sharp reads from the bytes. */
const FORMATS = { png: { contentType: 'image/png', extension: 'png' }, gif: { contentType: 'image/gif', extension: 'gif' }, webp: { contentType: 'image/webp', extension: 'webp' } } as const;
/** Emoji are shown at text size: a side longer than this is no emoji (and a decompression bomb is refused unread). */
export const EMOJI_MAX_SIDE = 1024;
/** At most this many emoji are taken from one object (a post, a profile): what one rendering may carry. */
export const EMOJI_PER_OBJECT_MAX = 50;

/** Mastodon's CustomEmoji::SCAN_RE: `:code:` not touching letters, digits or another colon. */
const SCAN_RE = /(?<=[^\p{L}\p{N}:]|^):([a-zA-Z0-9_]{2,}):(?=[^\p{L}\p{N}:]|$)/gu;

/** The shortcodes these texts use, each once, in order of first use (at most EMOJI_PER_OBJECT_MAX). */
export function shortcodesIn(texts: readonly (string | null | undefined)[]): string[] {
  const found = new Set<string>();
  for (const text of texts) {
    if (!text || !text.includes(':')) continue;
    for (const m of text.matchAll(SCAN_RE)) {
      found.add(m[1]!);
      if (found.size >= EMOJI_PER_OBJECT_MAX) return [...found];
    }
  }
  return [...found];
}

/**
 * Where an emoji's image is shown from, full and still: this server's from the file host; another server's always
 * from the media proxy (http/media-proxy.ts), which redirects to our copy and makes it at the first view. The URL
 * does not change when the copy is made or pruned, so copying never invalidates what was rendered with it.
 */
export function emojiImageUrls(w: { fileHost: FileHost; publicUrl: string }, e: EmojiRow): { url: string; staticUrl: string } {
  if (e.domain === null && e.image_key && e.static_key) return { url: w.fileHost.url(e.image_key), staticUrl: w.fileHost.url(e.static_key) };
  if (e.domain === null) return { url: '', staticUrl: '' };
  return { url: `${w.publicUrl}/media_proxy/emojis/${e.id}/original`, staticUrl: `${w.publicUrl}/media_proxy/emojis/${e.id}/static` };
}

/** The emoji, among `all`, that these texts use (in order of first use). */
export function emojisUsed(all: readonly EmojiRow[], texts: readonly (string | null | undefined)[]): EmojiRow[] {
  if (all.length === 0) return [];
  const codes = shortcodesIn(texts);
  return codes.map((c) => all.find((e) => e.shortcode === c)).filter((e): e is EmojiRow => !!e);
}

/**
 * The emoji each item's texts use, in one query for all of them: by the item's author (whose server's emoji apply) or
 * by a domain given (null: this server). Items without any `:code:` cost nothing.
 */
export async function resolveEmojis<K>(db: Queryable, items: { key: K; accountId?: string; domain?: string | null; texts: (string | null | undefined)[] }[]): Promise<Map<K, EmojiRow[]>> {
  const out = new Map<K, EmojiRow[]>();
  const byAuthor: { account_id: string; shortcode: string }[] = [];
  const byDomain: { shortcode: string; domain: string | null }[] = [];
  const wanted = items.map((item) => {
    const codes = shortcodesIn(item.texts);
    for (const shortcode of codes) {
      if (item.accountId !== undefined) byAuthor.push({ account_id: item.accountId, shortcode });
      else byDomain.push({ shortcode, domain: item.domain ?? null });
    }
    return codes;
  });
  if (byAuthor.length === 0 && byDomain.length === 0) return out;
  const [ofAuthors, ofDomains] = await Promise.all([enabledEmojisOfAuthors(db, byAuthor), enabledEmojisOf(db, byDomain)]);
  items.forEach((item, i) => {
    const codes = wanted[i]!;
    if (codes.length === 0) return;
    const found = item.accountId !== undefined
      ? ofAuthors.filter((e) => e.account_id === item.accountId)
      : ofDomains.filter((e) => e.domain === (item.domain ?? null));
    const list = codes.map((c) => found.find((e) => e.shortcode === c)).filter((e): e is EmojiRow => !!e);
    if (list.length > 0) out.set(item.key, list.map((e) => ('account_id' in e ? withoutAccount(e as EmojiRow & { account_id: string }) : e)));
  });
  return out;
}

const withoutAccount = ({ account_id: _, ...e }: EmojiRow & { account_id: string }): EmojiRow => e;

/** The texts of an account that may use emoji: its name, its bio and its profile fields (Mastodon's account emojis). */
export function accountTexts(a: { display_name: string; note_html: string; fields: { name: string; value_html: string }[] }): string[] {
  return [a.display_name, a.note_html, ...a.fields.flatMap((f) => [f.name, f.value_html])];
}

/** Accounts with the emoji their name, bio and fields use (`emojis`), in one query for all. */
export async function withAccountEmojis<A extends { id: string; domain: string | null; display_name: string; note_html: string; fields: { name: string; value_html: string }[]; emojis?: EmojiRow[] }>(db: Queryable, accounts: A[]): Promise<A[]> {
  const found = await resolveEmojis(db, accounts.filter((a) => a.emojis === undefined).map((a) => ({ key: a.id, domain: a.domain, texts: accountTexts(a) })));
  for (const a of accounts) if (a.emojis === undefined) a.emojis = found.get(a.id) ?? [];
  return accounts;
}

export class EmojiRefused extends Error {}

export interface ProcessedEmoji {
  data: Buffer;
  contentType: string;
  extension: string;
  /** Its first frame as PNG: the still image for readers who turned animation off. */
  staticPng: Buffer;
}

/**
 * Checks an emoji image and makes its still version. The format is read from the bytes (never the file name): PNG,
 * GIF or WebP, under EMOJI_SIZE_LIMIT, at most EMOJI_MAX_SIDE on a side, and decodable to its end.
 */
export async function processEmojiImage(input: Buffer): Promise<ProcessedEmoji> {
  if (input.length === 0) throw new EmojiRefused('the file is empty');
  if (input.length >= EMOJI_SIZE_LIMIT) throw new EmojiRefused(`the image is ${Math.ceil(input.length / 1024)} KB; an emoji must be under ${EMOJI_SIZE_LIMIT / 1024} KB`);
  const sharp = await loadSharp();
  let format: keyof typeof FORMATS;
  try {
    const meta = await sharp(input, { limitInputPixels: EMOJI_MAX_SIDE * EMOJI_MAX_SIDE * 4 }).metadata();
    if (!meta.format || !(meta.format in FORMATS)) throw new EmojiRefused(`an emoji must be a PNG, GIF or WebP image${meta.format ? ` (this is ${meta.format.toUpperCase()})` : ''}`);
    format = meta.format as keyof typeof FORMATS;
    const height = meta.pageHeight ?? meta.height;
    if (meta.width > EMOJI_MAX_SIDE || height > EMOJI_MAX_SIDE) throw new EmojiRefused(`the image is ${meta.width}×${height}; an emoji is at most ${EMOJI_MAX_SIDE}×${EMOJI_MAX_SIDE}`);
  } catch (err) {
    if (err instanceof EmojiRefused) throw err;
    throw new EmojiRefused('the file is not an image (an emoji must be a PNG, GIF or WebP image)');
  }
  try {
    // The first frame (sharp reads one page unless told otherwise), decoded whole: a cut-off file is refused here.
    const staticPng = await sharp(input, { failOn: 'truncated', limitInputPixels: EMOJI_MAX_SIDE * EMOJI_MAX_SIDE * 4 }).png().toBuffer();
    return { data: input, ...FORMATS[format], staticPng };
  } catch {
    throw new EmojiRefused('the image could not be decoded (damaged or cut off)');
  }
}

/** Shortcode and category as an operator gives them; an error says what is wrong. */
export function checkEmojiNames(shortcode: string, category: string | null): void {
  if (!SHORTCODE_RE.test(shortcode) || shortcode.length > LOCAL_SHORTCODE_MAX) {
    throw new EmojiRefused(`"${shortcode}" is not a shortcode: 2 to ${LOCAL_SHORTCODE_MAX} letters (a-z, A-Z), digits or underscores`);
  }
  if (category !== null && (category.trim() === '' || [...category].length > CATEGORY_MAX)) throw new EmojiRefused(`a category is 1 to ${CATEGORY_MAX} characters`);
}

export interface EmojiDeps {
  db: Db;
  fileHost: FileHost;
  versions: CacheVersions;
}

export type AddOutcome = 'added' | 'replaced' | 'exists';

/**
 * Adds one of this server's emoji (or, with `overwrite`, replaces the image of the one with that shortcode). The
 * image is checked first and stored before the row; a refused or failed row leaves no file behind, and a replaced
 * image's files go once the new row is committed. Then every process renders emoji again (the emoji version).
 *
 * The operators' actions on emoji are in their audit log, written in the action's transaction (`by`: the operator's
 * account, null for the shell's operator; left out, nothing is logged): an emoji added is 'create' (or `action`:
 * 'copy' for another server's copied here), one replaced 'update'.
 */
export async function addLocalEmoji(
  deps: EmojiDeps, e: { shortcode: string; image: Buffer; category: string | null; visibleInPicker: boolean; overwrite: boolean },
  by?: Actor, action: 'create' | 'copy' = 'create',
): Promise<{ outcome: AddOutcome; row: EmojiRow | null }> {
  checkEmojiNames(e.shortcode, e.category);
  const image = await processEmojiImage(e.image);
  const base = `custom_emojis/${randomBytes(8).toString('hex')}`;
  const imageKey = `${base}/${e.shortcode}.${image.extension}`;
  const staticKey = `${base}/${e.shortcode}-static.png`;
  const stored: string[] = [];
  let result: Awaited<ReturnType<typeof putLocalEmoji>>;
  try {
    await deps.fileHost.put(imageKey, image.data, image.contentType);
    stored.push(imageKey);
    await deps.fileHost.put(staticKey, image.staticPng, 'image/png');
    stored.push(staticKey);
    result = await transaction(deps.db, async (client) => {
      const put = await putLocalEmoji(client, {
        shortcode: e.shortcode, image_key: imageKey, image_content_type: image.contentType, image_size: image.data.length, static_key: staticKey,
        category: e.category?.trim() ?? null, visible_in_picker: e.visibleInPicker,
      }, e.overwrite);
      if (put) await logAction(client, by, put.replaced.length > 0 && action === 'create' ? 'update' : action, emojiTarget(put.row));
      return put;
    });
  } catch (err) {
    await removeFiles(deps.fileHost, stored);
    throw err;
  }
  if (!result) {
    await removeFiles(deps.fileHost, stored);
    return { outcome: 'exists', row: null };
  }
  await removeFiles(deps.fileHost, result.replaced);
  await deps.versions.bump({ emojis: true });
  return { outcome: result.replaced.length > 0 ? 'replaced' : 'added', row: result.row };
}

async function removeFiles(fileHost: FileHost, keys: string[]): Promise<void> {
  // A file left behind is only space; the row is what counts, so a failed removal does not fail the command.
  await Promise.all(keys.map((k) => fileHost.delete(k).catch(() => undefined)));
}

/** An emoji as the audit log names it: its shortcode, and another server's domain. */
const emojiTarget = (e: EmojiRow, gone = false) => ({ type: 'CustomEmoji' as const, id: gone ? null : e.id, name: e.domain ? `${e.shortcode}@${e.domain}` : e.shortcode });

/** A change of one row and its audit log entry, in one transaction. */
function logged(deps: EmojiDeps, by: Actor | undefined, action: 'enable' | 'disable' | 'update' | 'destroy', write: (tx: Queryable) => Promise<EmojiRow | null>): Promise<EmojiRow | null> {
  return transaction(deps.db, async (tx) => {
    const row = await write(tx);
    if (row) await logAction(tx, by, action, emojiTarget(row, action === 'destroy'));
    return row;
  });
}

export async function setLocalEmojiEnabled(deps: EmojiDeps, shortcode: string, enabled: boolean, by?: Actor): Promise<EmojiRow | null> {
  const row = await logged(deps, by, enabled ? 'enable' : 'disable', (tx) => setLocalEmojiDisabled(tx, shortcode, !enabled));
  if (row) await deps.versions.bump({ emojis: true });
  return row;
}

/** Offers one of this server's emoji in apps' pickers or keeps it out (it still shows where it is used). */
export async function setLocalEmojiInPicker(deps: EmojiDeps, shortcode: string, visible: boolean, by?: Actor): Promise<EmojiRow | null> {
  const row = await logged(deps, by, 'update', (tx) => setLocalEmojiVisibleInPicker(tx, shortcode, visible));
  if (row) await deps.versions.bump({ emojis: true });
  return row;
}

/** Disables or enables another server's emoji here: every process renders emoji again. */
export async function setRemoteEmojiEnabled(deps: EmojiDeps, shortcode: string, domain: string, enabled: boolean, by?: Actor): Promise<EmojiRow | null> {
  const normalized = normalizeDomain(domain);
  const row = normalized ? await logged(deps, by, enabled ? 'enable' : 'disable', (tx) => setRemoteEmojiDisabled(tx, shortcode, normalized, !enabled)) : null;
  if (row) await deps.versions.bump({ emojis: true });
  return row;
}

export async function removeLocalEmoji(deps: EmojiDeps, shortcode: string, by?: Actor): Promise<EmojiRow | null> {
  const row = await logged(deps, by, 'destroy', (tx) => deleteLocalEmoji(tx, shortcode));
  if (!row) return null;
  await removeFiles(deps.fileHost, [row.image_key, row.static_key].filter((k): k is string => !!k));
  await deps.versions.bump({ emojis: true });
  return row;
}

/**
 * Stores other servers' emoji as an object named them (before the object itself, so that its rendering finds them).
 * A known emoji whose image changed makes every process render emoji again.
 */
export async function storeRemoteEmojis(deps: { db: Queryable; versions: CacheVersions }, emojis: RemoteEmoji[]): Promise<void> {
  if (emojis.length === 0) return;
  const changed = await upsertRemoteEmojis(deps.db, emojis);
  if (changed > 0) await deps.versions.bump({ emojis: true });
}

/**
 * GET /api/v1/custom_emojis as rendered bytes, kept in this process while the emoji version holds: every client asks
 * for it when it starts, and it changes only when an operator changes an emoji.
 */
export class LocalEmojiList {
  private cached: { version: string; body: Buffer } | null = null;
  private readonly versions: CacheVersions;

  constructor(versions: CacheVersions) {
    this.versions = versions;
    // Counters lost with Redis start again: a number seen before may not mean the same list.
    versions.onReset(() => (this.cached = null));
  }

  async get(db: Queryable, render: (rows: EmojiRow[]) => unknown): Promise<Buffer> {
    const [version] = await this.versions.get('e', [EMOJI_VERSION_ID]);
    if (this.cached && this.cached.version === version) return this.cached.body;
    const rows = (await listLocalEmojis(db, { enabledOnly: true })).filter((e) => e.visible_in_picker);
    const body = Buffer.from(JSON.stringify(render(rows)));
    // An unknown version (Redis away) is never current: the list is read again next time.
    if (!version!.startsWith('?')) this.cached = { version: version!, body };
    return body;
  }
}
