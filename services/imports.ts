import { parse } from 'csv-parse/sync';
import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import type { AccountRow } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';
import * as imports from '../storage/imports.ts';
import { addRequestedListMembers, listsOf, LISTS_PER_ACCOUNT, type ListRow } from '../storage/lists.ts';
import { normalizeDomain } from './domain-policy.ts';
import { canSee } from './visibility.ts';

/** Longest line an import file may have: an address, a domain, a post URI or a list name with an address. */
const MAX_LINE_CHARS = 8 * 1024;

// CSV imports, as Mastodon 4.x's Form::Import, BulkImportService and BulkImportRowService: the file is checked and
// stored with its rows in one transaction, and a job (jobs/imports.ts) applies them in batches through the account's
// actor, as the API's follow, block and mute do. A row that cannot be resolved or applied is recorded, never fatal.

export const IMPORT_TYPES = ['following', 'blocking', 'muting', 'domain_blocking', 'bookmarks', 'lists'] as const;
/** Mastodon's Form::Import limits. */
export const FILE_SIZE_LIMIT = 20 * 1024 * 1024;
export const ROWS_PROCESSING_LIMIT = 20_000;
/** Mastodon's FollowLimitValidator: 7,500 follows, or 1.1 times one's followers past that. */
const FOLLOW_LIMIT = 7_500;
const FOLLOW_LIMIT_RATIO = 1.1;
/** Rows one job run applies before queueing the next run (bounded memory and lock time per run). */
export const ROWS_PER_RUN = 100;
/** Rows resolved and applied at once within a run: remote look-ups wait on the network, not on us. */
const ROW_CONCURRENCY = 8;

export class ImportFormError extends Error {}

const EXPECTED_HEADERS: Record<imports.ImportType, string[]> = {
  following: ['Account address', 'Show boosts', 'Notify on new posts', 'Languages'],
  blocking: ['Account address'],
  muting: ['Account address', 'Hide notifications'],
  domain_blocking: ['#domain'],
  bookmarks: ['#uri'],
  lists: ['List name', 'Account address'],
};
/** The columns a file without a header row is read as (Mastodon's blocks and lists exports have none). */
const DEFAULT_HEADERS: Record<imports.ImportType, string[]> = {
  following: ['Account address'],
  blocking: ['Account address'],
  muting: ['Account address'],
  domain_blocking: ['#domain'],
  bookmarks: ['#uri'],
  lists: ['List name', 'Account address'],
};
const KNOWN_FIRST_HEADERS = new Set(Object.values(EXPECTED_HEADERS).map((h) => h[0]!));

/** ActiveModel's boolean cast, as Mastodon reads "Show boosts" and the like: blank is unset, few words are false. */
function bool(v: string | undefined): boolean | null {
  const s = v?.trim().toLowerCase();
  if (s === undefined || s === '') return null;
  return !['0', 'f', 'false', 'off', 'no', 'n'].includes(s);
}

export interface ParsedImport {
  rows: { target: string; data: imports.ImportRowData }[];
}

/** The local part of an address that names one of ours (`me@our.domain`, or plain `me`), else the address. */
function normalizeAcct(raw: string, localDomains: string[]): string {
  const acct = raw.trim().replace(/^@/, '');
  const at = acct.lastIndexOf('@');
  if (at > 0 && localDomains.includes(acct.slice(at + 1).toLowerCase())) return acct.slice(0, at);
  return acct;
}

/**
 * Reads an uploaded CSV file as `type` asks, or says (ImportFormError) why it cannot be imported. Files with
 * Mastodon's or GoToSocial's header rows and files without one (one address a line) are read alike.
 */
export function parseImportFile(type: imports.ImportType, file: Buffer, localDomains: string[]): ParsedImport {
  if (file.length > FILE_SIZE_LIMIT) throw new ImportFormError(`The file is too large: at most ${FILE_SIZE_LIMIT / 1024 / 1024} MB.`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(file);
  } catch {
    throw new ImportFormError('The file is not UTF-8 text: upload the CSV file as it was exported.');
  }
  // No file of these kinds has a long line: one line of millions of empty fields is refused before it is parsed.
  if (longestLine(text) > MAX_LINE_CHARS) throw new ImportFormError('The file has a line too long for an address, a domain or a post: upload the CSV file as it was exported.');
  let records: string[][];
  try {
    // Two past the limit: the header, and one row to tell that the limit is passed.
    records = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true, to: ROWS_PROCESSING_LIMIT + 2,
      max_record_size: MAX_LINE_CHARS });
  } catch (err) {
    throw new ImportFormError(`The file is not valid CSV: ${err instanceof Error ? err.message : String(err)}`);
  }
  records = records.filter((r) => r.some((c) => c.trim() !== ''));
  if (records.length === 0) throw new ImportFormError('The file is empty.');
  const first = records[0]!.map((c) => c.trim());
  const hasHeader = KNOWN_FIRST_HEADERS.has(first[0]!);
  const headers = hasHeader ? first : DEFAULT_HEADERS[type];
  if (!DEFAULT_HEADERS[type].every((h) => headers.includes(h))) {
    throw new ImportFormError(`This file holds another kind of data than ${TYPE_LABELS[type].toLowerCase()}: choose the kind that matches the file.`);
  }
  const body = hasHeader ? records.slice(1) : records;
  if (body.length > ROWS_PROCESSING_LIMIT) throw new ImportFormError(`The file has more than ${ROWS_PROCESSING_LIMIT.toLocaleString('en')} rows; split it into smaller files.`);
  const column = (name: string) => headers.indexOf(name);
  const at = (r: string[], name: string) => { const i = column(name); return i < 0 ? undefined : r[i]; };
  // One row per thing named: a later line for the same account (or list and account) replaces an earlier one.
  const byKey = new Map<string, { target: string; data: imports.ImportRowData }>();
  for (const r of body) {
    let target: string;
    const data: imports.ImportRowData = {};
    if (type === 'domain_blocking') {
      const domain = normalizeDomain(at(r, '#domain') ?? '');
      if (!domain) continue;
      target = data.domain = domain;
    } else if (type === 'bookmarks') {
      const uri = (at(r, '#uri') ?? '').trim();
      if (!uri) continue;
      target = data.uri = uri;
    } else {
      const acct = normalizeAcct(at(r, 'Account address') ?? '', localDomains);
      if (!acct) continue;
      data.acct = acct;
      target = acct.toLowerCase();
      if (type === 'following') {
        data.show_reblogs = bool(at(r, 'Show boosts'));
        data.notify = bool(at(r, 'Notify on new posts'));
        const langs = at(r, 'Languages')?.split(',').map((l) => l.trim()).filter((l) => /^[a-z]{2,3}$/.test(l));
        data.languages = langs && langs.length > 0 ? langs.slice(0, 50) : null;
      } else if (type === 'muting') {
        data.hide_notifications = bool(at(r, 'Hide notifications'));
      } else if (type === 'lists') {
        const name = (at(r, 'List name') ?? '').trim().slice(0, 255);
        if (!name) continue;
        data.list_name = name;
      }
    }
    const key = type === 'lists' ? `${data.list_name}\n${target}` : target;
    byKey.delete(key);
    byKey.set(key, { target, data });
  }
  if (byKey.size === 0) throw new ImportFormError('The file names nothing to import.');
  return { rows: [...byKey.values()] };
}

export const TYPE_LABELS: Record<imports.ImportType, string> = {
  following: 'Follows',
  blocking: 'Blocked accounts',
  muting: 'Muted accounts',
  domain_blocking: 'Blocked domains',
  bookmarks: 'Bookmarks',
  lists: 'Lists',
};

export function followLimitFor(account: Pick<AccountRow, 'following_count' | 'followers_count'>): number {
  return account.following_count < FOLLOW_LIMIT ? FOLLOW_LIMIT : Math.max(Math.floor(account.followers_count * FOLLOW_LIMIT_RATIO), FOLLOW_LIMIT);
}

/** The domains that name this server in an address: its account domain and its web host. */
export function localDomainsOf(ctx: Pick<AppContext, 'config'>): string[] {
  return [...new Set([ctx.config.localDomain.toLowerCase(), new URL(ctx.config.publicUrl).host.toLowerCase()])];
}

/**
 * Checks an upload and stores it with its rows and the job's outbox row in one transaction; nothing is written when
 * the file is refused (ImportFormError).
 */
export async function createImport(
  ctx: AppContext, account: AccountRow, input: { type: string; mode: string; file: Buffer | null; filename: string },
): Promise<imports.ImportRow> {
  // As Mastodon, whose import page is closed to a user who is not `functional?`: a moved account follows nobody new.
  if (account.moved_to_account_id) {
    throw new ImportFormError('This account has moved: import into the account it moved to, or cancel the redirect (Moving) first.');
  }
  if (input.type === 'followers') {
    throw new ImportFormError('Followers cannot be imported: a follow is made by the follower. Your followers move with you when you move your account (or ask them to follow you again); import your follows instead.');
  }
  const type = (IMPORT_TYPES as readonly string[]).includes(input.type) ? (input.type as imports.ImportType) : null;
  if (!type) throw new ImportFormError('Choose what the file holds.');
  if (input.mode !== 'merge' && input.mode !== 'overwrite') throw new ImportFormError('Choose whether to merge or overwrite.');
  if (!input.file || input.file.length === 0) throw new ImportFormError('Choose a CSV file to upload.');
  const overwrite = input.mode === 'overwrite';
  const parsed = parseImportFile(type, input.file, localDomainsOf(ctx));
  if (type === 'following') {
    // Mastodon's check: what the file would add on top of what one follows (all of it when overwriting).
    const base = followLimitFor(account);
    const limit = overwrite ? base : base - account.following_count;
    if (parsed.rows.length > limit) throw new ImportFormError(`You cannot follow more than ${base.toLocaleString('en')} accounts: this file would take you past that limit.`);
  }
  if (type === 'lists' && new Set(parsed.rows.map((r) => r.data.list_name)).size > LISTS_PER_ACCOUNT) {
    throw new ImportFormError(`The file names more than ${LISTS_PER_ACCOUNT} lists, more than one account may have.`);
  }
  const { created, job } = await transaction(ctx.db, async (tx) => {
    const created = await imports.insertImport(tx, { accountId: account.id, type, overwrite, filename: input.filename.slice(0, 255), rows: parsed.rows });
    const job = await addToOutbox(tx, 'processImport', { importId: created.id });
    return { created, job };
  });
  await ctx.jobs.enqueue(job).catch(() => {}); // the outbox sweeper queues it otherwise
  return created;
}

/** How an import's rows find the accounts and posts they name (jobs/imports.ts passes the federation look-ups). */
export interface ImportResolver {
  /** An account by address (`user` for ours, `user@domain`), fetched by WebFinger when not known; null if none. */
  account(acct: string): Promise<AccountRow | null>;
  /** A post by URI, ours or fetched; null if none. */
  status(uri: string): Promise<StatusRow | null>;
}

/** Why a row failed, in words for the page. */
function failureOf(err: unknown): string {
  if (err instanceof ApiError) return err.message.replace(/^Validation failed: /, '');
  return 'Could not be applied';
}

/**
 * One run of an import's job: the overwrite pass first (in batches, each run a batch), then up to ROWS_PER_RUN rows.
 * Returns whether another run is needed; the caller queues it.
 */
export async function runImport(ctx: AppContext, importId: string, resolve: ImportResolver): Promise<boolean> {
  const imp = await imports.findImport(ctx.db, importId);
  if (!imp || imp.state === 'finished') return false;
  if (imp.state === 'scheduled') {
    if (imp.overwrite && (await removeUnlisted(ctx, imp))) return true;
    await imports.setImportState(ctx.db, imp.id, 'in_progress');
  }
  const rows = await imports.pendingRows(ctx.db, imp.id, ROWS_PER_RUN);
  const done: string[] = [];
  const failed: { id: string; failure: string }[] = [];
  let next = 0;
  // Rows of one run naming the same new list, applied at once, must find one list, not make one each.
  const listsByTitle = new Map<string, Promise<ListRow>>();
  const work = async () => {
    while (next < rows.length) {
      const row = rows[next++]!;
      try {
        const failure = await applyRow(ctx, imp, row.data, resolve, listsByTitle);
        if (failure) failed.push({ id: row.id, failure });
        else done.push(row.id);
      } catch (err) {
        failed.push({ id: row.id, failure: failureOf(err) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ROW_CONCURRENCY, rows.length) }, work));
  const more = await transaction(ctx.db, async (tx) => {
    const left = await imports.recordBatch(tx, imp.id, done, failed);
    if (!left) await imports.setImportState(tx, imp.id, 'finished');
    return left;
  });
  return more;
}

/** Applies one row; returns why it failed, or null. */
async function applyRow(
  ctx: AppContext, imp: imports.ImportRow, data: imports.ImportRowData, resolve: ImportResolver, listsByTitle: Map<string, Promise<ListRow>>,
): Promise<string | null> {
  const me = imp.account_id;
  if (imp.type === 'domain_blocking') {
    await ctx.actors.ask(me, { type: 'blockDomain', domain: data.domain! });
    return null;
  }
  if (imp.type === 'bookmarks') {
    const status = await resolve.status(data.uri!);
    if (!status || status.deleted_at || !(await canSee(ctx.db, me, status))) return 'Post not found';
    await ctx.actors.ask(me, { type: 'bookmark', status });
    return null;
  }
  const target = await resolve.account(data.acct!);
  if (!target || target.suspended_at) return 'Account not found';
  switch (imp.type) {
    case 'following': {
      if (target.id === me) return 'This is your own account';
      await ctx.actors.ask(me, {
        type: 'follow', targetId: target.id,
        options: { reblogs: data.show_reblogs ?? undefined, notify: data.notify ?? undefined, languages: data.languages ?? undefined },
      });
      return null;
    }
    case 'blocking':
      if (target.id === me) return 'This is your own account';
      await ctx.actors.ask(me, { type: 'block', targetId: target.id });
      return null;
    case 'muting':
      if (target.id === me) return 'This is your own account';
      await ctx.actors.ask(me, { type: 'mute', targetId: target.id, options: { notifications: data.hide_notifications ?? true, expiresAt: null } });
      return null;
    case 'lists': {
      if (target.id === me) return 'This is your own account';
      // As Mastodon: the list is found by title or made, and its member followed first (a list holds followed accounts,
      // or, as Mastodon 4.x, ones asked to follow: the membership waits on the request, storage/lists.ts).
      const title = data.list_name!;
      let found = listsByTitle.get(title);
      if (!found) {
        found = listsOf(ctx.db, me).then((ls) => ls.find((l) => l.title === title) ?? ctx.actors.ask(me, { type: 'createList', list: { title } }));
        listsByTitle.set(title, found);
        found.catch(() => listsByTitle.delete(title)); // a list that could not be made is tried again by the next row
      }
      const list = await found;
      const outcome = await ctx.actors.ask(me, { type: 'follow', targetId: target.id, options: {} });
      if (outcome === 'requested') {
        return (await addRequestedListMembers(ctx.db, me, [list.id], target.id)) ? null : 'The list is full';
      }
      await ctx.actors.ask(me, { type: 'addListMembers', listId: list.id, accountIds: [target.id] });
      return null;
    }
  }
}

/** Rows the overwrite pass removes per run. */
const OVERWRITE_BATCH = 100;

/**
 * Mastodon's overwrite: what the account has that the file does not list goes, through the same actor messages as
 * the API's unfollow, unblock... One batch per run; returns whether there may be more.
 */
async function removeUnlisted(ctx: AppContext, imp: imports.ImportRow): Promise<boolean> {
  const me = imp.account_id;
  switch (imp.type) {
    case 'following':
    case 'blocking':
    case 'muting': {
      const table = imp.type === 'following' ? 'follows' : imp.type === 'blocking' ? 'blocks' : 'mutes';
      const batch = await imports.relationsNotListed(ctx.db, table, me, imp.id, '0', OVERWRITE_BATCH);
      for (const r of batch) {
        if (imp.type === 'following') await ctx.actors.ask(me, { type: 'unfollow', targetId: r.targetId });
        else if (imp.type === 'blocking') await ctx.actors.ask(me, { type: 'unblock', targetId: r.targetId });
        else await ctx.actors.ask(me, { type: 'unmute', targetId: r.targetId });
      }
      return batch.length === OVERWRITE_BATCH;
    }
    case 'domain_blocking': {
      const batch = await imports.domainBlocksNotListed(ctx.db, me, imp.id, '0', OVERWRITE_BATCH);
      for (const b of batch) await ctx.actors.ask(me, { type: 'unblockDomain', domain: b.domain });
      return batch.length === OVERWRITE_BATCH;
    }
    case 'bookmarks': {
      const batch = await imports.bookmarksNotListed(ctx.db, me, imp.id, ctx.config.publicUrl, '0', OVERWRITE_BATCH);
      for (const b of batch) await ctx.actors.ask(me, { type: 'unbookmark', status: { id: b.statusId } as StatusRow });
      return batch.length === OVERWRITE_BATCH;
    }
    case 'lists': {
      // Lists the file does not name go; the others are emptied and filled again from the file (as Mastodon does).
      for (const listId of await imports.listsNotListed(ctx.db, me, imp.id)) await ctx.actors.ask(me, { type: 'deleteList', listId });
      for (const list of await listsOf(ctx.db, me)) {
        const members = await imports.listMembersBatch(ctx.db, list.id, 1000);
        if (members.length > 0) await ctx.actors.ask(me, { type: 'removeListMembers', listId: list.id, accountIds: members });
      }
      return false;
    }
  }
}

/** The longest line's length in characters (a scan, no copies). */
function longestLine(text: string): number {
  let longest = 0;
  for (let start = 0; start < text.length;) {
    const end = text.indexOf('\n', start);
    const stop = end === -1 ? text.length : end;
    longest = Math.max(longest, stop - start);
    start = stop + 1;
  }
  return longest;
}
