import { extname } from 'node:path';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import yazl from 'yazl';
import { Create } from '@fedify/vocab';
import type { Context } from '@fedify/fedify';
import type { AppContext } from '../context.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import { findStatus } from '../storage/statuses.ts';
import { bookmarksPage, favouritesPage, type NamedStatus } from '../storage/exports.ts';
import {
  countArchivePart, deleteAccountArchive, findAccountArchive, markArchiveReady, mediaFilesOfStatuses, ownStatusIdsPage, startArchiveAttempt,
} from '../storage/account-archives.ts';
import { ARCHIVE_KEEP_MS, archiveKeyPrefix, archivePartKey, removeArchiveFiles, removeExpiredArchives } from '../services/exports.ts';
import { statusUri } from '../services/uris.ts';
import { announceOf, personOf, statusObjectOf } from '../federation/objects.ts';

/**
 * The `buildAccountArchive` job (queued with the request's row, services/exports.ts): a zip of the account's posts
 * and media as Mastodon's BackupService makes it: `outbox.json` (an OrderedCollection of the account's Create and
 * Announce activities, rendered as federation renders them, attachment URLs replaced by the files' paths in the zip),
 * `actor.json`, `likes.json`, `bookmarks.json`, the avatar and header, and every attached file. A zip rather than
 * Mastodon's .tar.gz: a zip is what most people can open.
 *
 * Memory stays bounded whatever the account's size: statuses and media are read a page at a time, the JSON is
 * written into the zip as it is rendered (the zip waits for nothing to be read back), one media file is held at a
 * time, and the zip's output goes to the file host in parts of ARCHIVE_PART_BYTES as it is made.
 * The `expireAccountArchives` job (delayed until an archive's week is over) removes archives past their time.
 */

/** Statuses (or bookmarks, favourites) read per query. */
const PAGE = 100;
let partBytes = 8 * 1024 * 1024;

/** For tests: the size of the parts the zip is stored in (undefined: the default again). */
export function setArchivePartBytes(bytes: number | undefined): void {
  partBytes = bytes ?? 8 * 1024 * 1024;
}

const AS_CONTEXT = 'https://www.w3.org/ns/activitystreams';

/** One zip entry written a piece at a time, each write waiting while the zip has not taken the previous ones. */
class EntryWriter {
  private readonly stream = new PassThrough();
  private readonly done: Promise<void>;
  private readonly live: LiveStreams;
  constructor(zip: yazl.ZipFile, live: LiveStreams, name: string) {
    zip.addReadStream(this.stream, name, { compress: true });
    this.live = live;
    live.add(this.stream);
    this.done = finished(this.stream);
    this.done.catch(() => {});
  }
  async write(text: string): Promise<void> {
    if (!this.stream.write(text)) await once(this.stream, 'drain');
  }
  async end(): Promise<void> {
    this.stream.end();
    await this.done;
    this.live.delete(this.stream);
  }
}

/** Streams being written into the zip: ended with an error when the building fails, so that nothing waits on. */
type LiveStreams = Set<{ destroy(err: Error): unknown }>;

/** Adds bytes to the zip and waits until the zip has taken them. */
async function addBytes(zip: yazl.ZipFile, live: LiveStreams, data: Buffer, name: string, compress: boolean): Promise<void> {
  const input = Readable.from([data], { objectMode: false });
  live.add(input);
  zip.addReadStream(input, name, { compress, size: data.length });
  try {
    await finished(input);
  } finally {
    live.delete(input);
  }
}

/** Adds a stored file to the zip, once the previous one has been taken (one file in memory at a time). */
async function addStoredFile(ctx: AppContext, zip: yazl.ZipFile, live: LiveStreams, key: string, name: string): Promise<void> {
  const data = await ctx.fileHost.get(key);
  if (!data) return; // a file gone from the host is left out, as Mastodon leaves out what it cannot read
  await addBytes(zip, live, data, name, false);
}

/** Sends the zip's output to the file host in parts, counting each in the archive's row before it is written. */
async function storeParts(ctx: AppContext, archiveId: string, prefix: string, output: Readable): Promise<{ parts: number; size: number }> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let parts = 0;
  let size = 0;
  const flush = async () => {
    const data = Buffer.concat(pending);
    pending = [];
    pendingBytes = 0;
    await countArchivePart(ctx.db, archiveId, parts + 1);
    await ctx.fileHost.put(archivePartKey(prefix, parts), data, 'application/zip');
    parts++;
  };
  // Each part is cut at partBytes: a stream's chunks are whatever it had buffered when read (more under load), so
  // cutting only between chunks made the parts' number and sizes depend on timing.
  for await (const chunk of output as AsyncIterable<Buffer>) {
    size += chunk.length;
    let rest = chunk;
    while (pendingBytes + rest.length >= partBytes) {
      const take = partBytes - pendingBytes;
      pending.push(rest.subarray(0, take));
      pendingBytes += take;
      rest = rest.subarray(take);
      await flush();
    }
    if (rest.length > 0) {
      pending.push(rest);
      pendingBytes += rest.length;
    }
  }
  if (pendingBytes > 0 || parts === 0) await flush();
  return { parts, size };
}

/** A JSON-LD document as federation writes it, compacted, as a plain object. */
async function jsonOf(fed: Context<AppContext>, object: { toJsonLd(o: { contextLoader: Context<AppContext>['contextLoader'] }): Promise<unknown> }): Promise<Record<string, unknown>> {
  return (await object.toJsonLd({ contextLoader: fed.contextLoader })) as Record<string, unknown>;
}

/** One status as its outbox activity: a Create of its Note (or Question), or the Announce of a reblog. */
async function activityJson(fed: Context<AppContext>, account: AccountRow, id: string, fileOf: Map<string, string>): Promise<Record<string, unknown> | null> {
  const app = fed.data;
  const status = await findStatus(app.db, id);
  if (!status) return null;
  if (status.reblog_of_id) {
    const original = await findStatus(app.db, status.reblog_of_id);
    const author = original ? await findAccountById(app.db, original.account_id) : null;
    if (!original || !author) return null;
    return jsonOf(fed, announceOf(fed, account, status, author, original));
  }
  const { note } = await statusObjectOf(fed, account, status);
  const uri = statusUri(app.config, status, account.username);
  const json = await jsonOf(fed, new Create({
    id: new URL(`${uri}/activity`), actor: fed.getActorUri(account.username), object: note, tos: note.toIds, ccs: note.ccIds, published: note.published,
  }));
  // Attachments point at their files in the zip, as Mastodon's archive does (paths relative to it).
  const object = json.object as Record<string, unknown> | undefined;
  const attachments = object?.attachment;
  for (const a of (Array.isArray(attachments) ? attachments : attachments ? [attachments] : []) as Record<string, unknown>[]) {
    if (typeof a.url === 'string' && fileOf.has(a.url)) a.url = fileOf.get(a.url);
  }
  return json;
}

async function writeOutbox(ctx: AppContext, fed: Context<AppContext>, zip: yazl.ZipFile, account: AccountRow, live: LiveStreams): Promise<void> {
  const out = new EntryWriter(zip, live, 'outbox.json');
  let context: unknown = null;
  let total = 0;
  let before: string | null = null;
  for (;;) {
    const ids = await ownStatusIdsPage(ctx.db, account.id, before, PAGE);
    const files = await mediaFilesOfStatuses(ctx.db, ids);
    const fileOf = new Map(files.map((f) => [ctx.fileHost.url(f.original_key), f.original_key]));
    for (const id of ids) {
      const item = await activityJson(fed, account, id, fileOf);
      if (!item) continue;
      // The collection carries the context once (the first item's); items whose context is the same drop theirs.
      if (context === null) {
        context = item['@context'];
        await out.write(`{"@context":${JSON.stringify(context)},"id":"outbox.json","type":"OrderedCollection","orderedItems":[`);
      }
      if (JSON.stringify(item['@context']) === JSON.stringify(context)) delete item['@context'];
      await out.write(`${total > 0 ? ',' : ''}${JSON.stringify(item)}`);
      total++;
    }
    if (ids.length < PAGE) break;
    before = ids.at(-1)!;
  }
  if (context === null) await out.write(`{"@context":${JSON.stringify(AS_CONTEXT)},"id":"outbox.json","type":"OrderedCollection","orderedItems":[`);
  await out.write(`],"totalItems":${total}}`);
  await out.end();
}

/** likes.json or bookmarks.json: an OrderedCollection of the statuses' ids. */
async function writeStatusCollection(
  ctx: AppContext, zip: yazl.ZipFile, name: string, live: LiveStreams,
  page: (before: string | null) => Promise<NamedStatus[]>,
): Promise<void> {
  const out = new EntryWriter(zip, live, name);
  await out.write(`{"@context":${JSON.stringify(AS_CONTEXT)},"id":${JSON.stringify(name)},"type":"OrderedCollection","orderedItems":[`);
  let total = 0;
  let before: string | null = null;
  for (;;) {
    const rows = await page(before);
    for (const r of rows) {
      await out.write(`${total > 0 ? ',' : ''}${JSON.stringify(statusUri(ctx.config, { id: r.status_id, uri: r.uri }, r.author_username))}`);
      total++;
    }
    if (rows.length < PAGE) break;
    before = rows.at(-1)!.id;
  }
  await out.write(`],"totalItems":${total}}`);
  await out.end();
}

async function writeActor(ctx: AppContext, fed: Context<AppContext>, zip: yazl.ZipFile, live: LiveStreams, account: AccountRow): Promise<void> {
  const actor = await jsonOf(fed, await personOf(fed, account));
  const avatar = account.avatar_file ? `avatar${extname(account.avatar_file)}` : null;
  const header = account.header_file ? `header${extname(account.header_file)}` : null;
  if (avatar && actor.icon && typeof actor.icon === 'object') (actor.icon as Record<string, unknown>).url = avatar;
  if (header && actor.image && typeof actor.image === 'object') (actor.image as Record<string, unknown>).url = header;
  actor.outbox = 'outbox.json';
  actor.likes = 'likes.json';
  actor.bookmarks = 'bookmarks.json';
  if (avatar) await addStoredFile(ctx, zip, live, account.avatar_file!, avatar);
  if (header) await addStoredFile(ctx, zip, live, account.header_file!, header);
  await addBytes(zip, live, Buffer.from(JSON.stringify(actor)), 'actor.json', true);
}

async function writeMedia(ctx: AppContext, zip: yazl.ZipFile, live: LiveStreams, account: AccountRow): Promise<void> {
  let before: string | null = null;
  for (;;) {
    const ids = await ownStatusIdsPage(ctx.db, account.id, before, PAGE);
    for (const f of await mediaFilesOfStatuses(ctx.db, ids)) await addStoredFile(ctx, zip, live, f.original_key, f.original_key);
    if (ids.length < PAGE) break;
    before = ids.at(-1)!;
  }
}

/** Builds one archive. Run again (a retry), it starts over; an archive already made is left as it is. */
export async function buildAccountArchive(ctx: AppContext, archiveId: string): Promise<void> {
  const archive = await findAccountArchive(ctx.db, archiveId);
  if (!archive || archive.ready_at) return;
  const account = await findAccountById(ctx.db, archive.account_id);
  if (!account || account.domain !== null) {
    await deleteAccountArchive(ctx.db, archive.id);
    return;
  }
  // What an earlier attempt stored before it failed.
  await removeArchiveFiles(ctx, archive);
  const prefix = archiveKeyPrefix(account.id, archive.id);
  await startArchiveAttempt(ctx.db, archive.id, prefix);

  const fed = ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx);
  const zip = new yazl.ZipFile();
  const output = zip.outputStream as unknown as Readable;
  const live: LiveStreams = new Set();
  const storing = storeParts(ctx, archive.id, prefix, output);
  // The file host failing ends the writing too (its writes would otherwise wait for the zip to be read forever).
  storing.catch((err: unknown) => {
    for (const stream of live) stream.destroy(err as Error);
    output.destroy(err as Error);
  });
  let stored: { parts: number; size: number };
  try {
    await writeOutbox(ctx, fed, zip, account, live);
    await writeStatusCollection(ctx, zip, 'likes.json', live, (b) => favouritesPage(ctx.db, account.id, b, PAGE));
    await writeStatusCollection(ctx, zip, 'bookmarks.json', live, (b) => bookmarksPage(ctx.db, account.id, b, PAGE));
    await writeActor(ctx, fed, zip, live, account);
    await writeMedia(ctx, zip, live, account);
    zip.end();
    stored = await storing;
  } catch (err) {
    for (const stream of live) stream.destroy(err as Error);
    output.destroy(err as Error);
    await storing.catch(() => {});
    throw err;
  }
  const expiry = await transaction(ctx.db, async (tx) => {
    const ready = await markArchiveReady(tx, archive.id, stored.parts, stored.size, ARCHIVE_KEEP_MS);
    return ready?.expires_at ? addToOutbox(tx, 'expireAccountArchives', { runAt: ready.expires_at.toISOString() }) : null;
  });
  if (expiry) await ctx.jobs.enqueue(expiry).catch(() => {});
  // Older archives past their week go now too (their own delayed job may have been lost with Redis).
  await removeExpiredArchives(ctx);
}

/** The `expireAccountArchives` job: removes every archive past its week (files, then rows). */
export async function expireAccountArchives(ctx: AppContext): Promise<void> {
  await removeExpiredArchives(ctx);
}
