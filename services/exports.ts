import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { stringify } from 'csv-stringify';
import type { AppContext } from '../context.ts';
import type { Config } from '../config.ts';
import { transaction, type Queryable } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import {
  blocksPage, bookmarksPage, domainBlocksPage, exportCounts, followersPage, followingPage, listMembersPage, mutesPage,
  type ExportCounts, type NamedAccount,
} from '../storage/exports.ts';
import {
  accountArchives, claimAccountArchive, deleteAccountArchive, expiredAccountArchives, nextArchiveAllowedAt, type AccountArchiveRow,
} from '../storage/account-archives.ts';
import { statusUri } from './uris.ts';

/**
 * Taking one's data away, as Mastodon's /settings/export offers it: CSV files of follows, followers, lists, blocks,
 * mutes, domain blocks and bookmarks in Mastodon's own formats (so that its import, and ours, read them), and an
 * archive of one's posts and media built by a job (jobs/account-archive.ts).
 */

/** Rows read from storage per query while a CSV is written. */
const CSV_PAGE = 500;
/** One archive a week, as Mastodon allows, each offered for a week. */
export const ARCHIVE_MIN_INTERVAL_MS = 7 * 24 * 3_600_000;
export const ARCHIVE_KEEP_MS = 7 * 24 * 3_600_000;
/** A request whose archive is not ready after this long failed (its job gave up after every retry). */
export const ARCHIVE_STALE_MS = 24 * 3_600_000;

/** An account as Mastodon's exports name it: `user@domain`, with our LOCAL_DOMAIN for our own accounts. */
export function exportAddress(config: Pick<Config, 'localDomain'>, a: NamedAccount): string {
  return `${a.username}@${a.domain ?? config.localDomain}`;
}

type CsvRecord = (string | boolean | null)[];

interface CsvExport {
  /** The download's file name, Mastodon's (its controllers' names). */
  filename: string;
  header: string[] | null;
  rows(ctx: AppContext, accountId: string): AsyncGenerator<CsvRecord>;
}

/** Pages through `page` by the id of each page's last row until a short page. */
async function* keyset<T extends { id: string }>(page: (before: string | null) => Promise<T[]>): AsyncGenerator<T> {
  let before: string | null = null;
  for (;;) {
    const rows = await page(before);
    yield* rows;
    if (rows.length < CSV_PAGE) return;
    before = rows.at(-1)!.id;
  }
}

/** The CSV files, by the name in their URL (/settings/exports/<name>.csv, Mastodon's routes). */
export const CSV_EXPORTS: Record<string, CsvExport> = {
  follows: {
    filename: 'following_accounts.csv',
    header: ['Account address', 'Show boosts', 'Notify on new posts', 'Languages'],
    async* rows(ctx, accountId) {
      for await (const f of keyset((b) => followingPage(ctx.db, accountId, b, CSV_PAGE))) {
        yield [exportAddress(ctx.config, f), f.show_reblogs, f.notify, f.languages?.join(', ') ?? null];
      }
    },
  },
  followers: {
    filename: 'follower_accounts.csv',
    header: null,
    async* rows(ctx, accountId) {
      for await (const f of keyset((b) => followersPage(ctx.db, accountId, b, CSV_PAGE))) yield [exportAddress(ctx.config, f)];
    },
  },
  lists: {
    filename: 'lists.csv',
    header: null,
    async* rows(ctx, accountId) {
      let after: { listId: string; memberId: string } | null = null;
      for (;;) {
        const rows = await listMembersPage(ctx.db, accountId, after, CSV_PAGE);
        for (const r of rows) yield [r.title, exportAddress(ctx.config, r)];
        if (rows.length < CSV_PAGE) return;
        after = { listId: rows.at(-1)!.list_id, memberId: rows.at(-1)!.member_id };
      }
    },
  },
  blocks: {
    filename: 'blocked_accounts.csv',
    header: null,
    async* rows(ctx, accountId) {
      for await (const b of keyset((before) => blocksPage(ctx.db, accountId, before, CSV_PAGE))) yield [exportAddress(ctx.config, b)];
    },
  },
  mutes: {
    filename: 'muted_accounts.csv',
    header: ['Account address', 'Hide notifications'],
    async* rows(ctx, accountId) {
      for await (const m of keyset((b) => mutesPage(ctx.db, accountId, b, CSV_PAGE))) yield [exportAddress(ctx.config, m), m.hide_notifications];
    },
  },
  domain_blocks: {
    filename: 'blocked_domains.csv',
    header: null,
    async* rows(ctx, accountId) {
      for await (const d of keyset((b) => domainBlocksPage(ctx.db, accountId, b, CSV_PAGE))) yield [d.domain];
    },
  },
  bookmarks: {
    filename: 'bookmarks.csv',
    header: null,
    async* rows(ctx, accountId) {
      for await (const b of keyset((before) => bookmarksPage(ctx.db, accountId, before, CSV_PAGE))) {
        yield [statusUri(ctx.config, { id: b.status_id, uri: b.uri }, b.author_username)];
      }
    },
  },
};

/**
 * One export as a stream of CSV text, written as storage is read: Ruby's CSV as Mastodon writes it (booleans as
 * `true`/`false`, an empty field for nothing, quotes only where needed, `\n` between rows).
 */
export function csvExportStream(ctx: AppContext, accountId: string, name: string): { filename: string; stream: Readable } | null {
  const kind = Object.hasOwn(CSV_EXPORTS, name) ? CSV_EXPORTS[name]! : null;
  if (!kind) return null;
  const stringifier = stringify({
    ...(kind.header ? { header: true, columns: kind.header } : {}),
    cast: { boolean: (v) => (v ? 'true' : 'false') },
    record_delimiter: 'unix',
  });
  const source = Readable.from(kind.rows(ctx, accountId));
  source.on('error', (err) => stringifier.destroy(err));
  return { filename: kind.filename, stream: source.pipe(stringifier) };
}

export function exportFigures(db: Queryable, accountId: string): Promise<ExportCounts> {
  return exportCounts(db, accountId);
}

export type ArchiveState = 'ready' | 'building' | 'failed';

export interface ArchiveView {
  id: string;
  createdAt: Date;
  state: ArchiveState;
  sizeBytes: number;
  expiresAt: Date | null;
}

export function archiveState(a: AccountArchiveRow, now = Date.now()): ArchiveState {
  if (a.ready_at) return 'ready';
  return now - a.created_at.getTime() > ARCHIVE_STALE_MS ? 'failed' : 'building';
}

/** The archives the page lists (an expired one not removed yet is left out). */
export async function archivesOf(db: Queryable, accountId: string): Promise<{ archives: ArchiveView[]; nextAllowedAt: Date | null }> {
  const now = Date.now();
  const rows = (await accountArchives(db, accountId)).filter((a) => !a.expires_at || a.expires_at.getTime() > now);
  return {
    archives: rows.map((a) => ({ id: a.id, createdAt: a.created_at, state: archiveState(a, now), sizeBytes: Number(a.size_bytes), expiresAt: a.expires_at })),
    nextAllowedAt: await nextArchiveAllowedAt(db, accountId, ARCHIVE_MIN_INTERVAL_MS),
  };
}

/**
 * Asks for an archive: the request's row and its job's outbox row in one transaction, unless the account asked in
 * the last week. The job does the work; the request returns at once, however large the account.
 */
export async function requestAccountArchive(ctx: AppContext, accountId: string): Promise<'requested' | 'too_soon'> {
  const outbox = await transaction(ctx.db, async (tx) => {
    const archive = await claimAccountArchive(tx, accountId, ARCHIVE_MIN_INTERVAL_MS);
    return archive ? addToOutbox(tx, 'buildAccountArchive', { archiveId: archive.id }) : null;
  });
  if (!outbox) return 'too_soon';
  // Queued after the commit; if Redis is away now, the outbox sweeper queues it later.
  await ctx.jobs.enqueue(outbox).catch(() => {});
  return 'requested';
}

/** A new place for an archive's parts: unguessable, since the local file host serves every key it holds. */
export function archiveKeyPrefix(accountId: string, archiveId: string): string {
  return `archives/${accountId}/${archiveId}-${randomBytes(16).toString('hex')}`;
}

export function archivePartKey(prefix: string, n: number): string {
  return `${prefix}/part-${String(n).padStart(6, '0')}`;
}

/** The zip's bytes, read from the file host a part at a time as the reader takes them. */
export function archiveStream(ctx: AppContext, a: AccountArchiveRow): Readable {
  let next = 0;
  return new Readable({
    async read() {
      try {
        if (next >= a.parts || !a.key_prefix) return void this.push(null);
        const data = await ctx.fileHost.get(archivePartKey(a.key_prefix, next++));
        if (!data) throw new Error(`archive ${a.id}: part ${next - 1} is missing`);
        this.push(data);
      } catch (err) {
        this.destroy(err as Error);
      }
    },
  });
}

/** The file name offered for an archive, Mastodon's pattern (archive-<UTC time>-<hex>), ending in .zip. */
export function archiveFilename(a: AccountArchiveRow): string {
  const at = a.created_at.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return `archive-${at}-${a.id}.zip`;
}

/** Removes an archive's stored parts (those of an attempt given up included). */
export async function removeArchiveFiles(ctx: AppContext, a: Pick<AccountArchiveRow, 'key_prefix' | 'parts'>): Promise<void> {
  if (!a.key_prefix) return;
  // One more than counted: a part is counted before it is written, but a crash between may leave the count short.
  for (let n = 0; n <= a.parts; n++) await ctx.fileHost.delete(archivePartKey(a.key_prefix, n));
}

/**
 * Deletes archives past their week, files first, a batch at a time; also requests whose archive was never made, once
 * a week old (when the person may ask again anyway). Answers how many went.
 */
export async function removeExpiredArchives(ctx: AppContext, batch = 100): Promise<number> {
  let removed = 0;
  for (;;) {
    const rows = await expiredAccountArchives(ctx.db, ARCHIVE_MIN_INTERVAL_MS, batch);
    for (const a of rows) {
      await removeArchiveFiles(ctx, a);
      await deleteAccountArchive(ctx.db, a.id);
    }
    removed += rows.length;
    if (rows.length < batch) return removed;
  }
}
