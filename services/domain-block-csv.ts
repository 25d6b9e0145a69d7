import { randomBytes } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { ApiError } from '../errors.ts';
import type { Db } from '../storage/db.ts';
import { domainAllowsPage, domainBlockRuleFor, domainBlocksPage, type DomainSeverity } from '../storage/instance-domain-blocks.ts';
import { createDomainAllow, createDomainBlock, SEVERITIES, updateDomainBlock, validDomain, type DomainAdminDeps } from './domain-blocks.ts';
import type { Actor } from './action-log.ts';
import { dropPendingImport, loadPendingImport, savePendingImport } from '../storage/pending-imports.ts';

/**
 * Domain blocks and allows as CSV, in the columns of Mastodon's export (Admin::ExportDomainBlocksController and
 * ExportDomainAllowsController), so that lists move between Mastodon servers and this one both ways.
 */
export const BLOCK_COLUMNS = ['#domain', '#severity', '#reject_media', '#reject_reports', '#public_comment', '#obfuscate'] as const;
export const ALLOW_COLUMNS = ['#domain'] as const;
/** An export or an import is bounded: lists of a few thousand servers are what operators share. */
export const CSV_ROWS_MAX = 10_000;
const CSV_BYTES_MAX = 2 * 1024 * 1024;

async function allPages<T extends { id: string }>(page: (maxId: string | undefined) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  let maxId: string | undefined;
  while (out.length < CSV_ROWS_MAX) {
    const rows = await page(maxId);
    out.push(...rows);
    if (rows.length < 200) break;
    maxId = rows.at(-1)!.id;
  }
  return out.slice(0, CSV_ROWS_MAX).reverse();
}

export async function domainBlocksCsv(db: Db): Promise<string> {
  const rows = await allPages((maxId) => domainBlocksPage(db, { limit: 200, maxId }));
  return stringify([
    [...BLOCK_COLUMNS],
    ...rows.map((b) => [b.domain, b.severity, String(b.reject_media), String(b.reject_reports), b.public_comment ?? '', String(b.obfuscate)]),
  ]);
}

export async function domainAllowsCsv(db: Db): Promise<string> {
  const rows = await allPages((maxId) => domainAllowsPage(db, { limit: 200, maxId }));
  return stringify([[...ALLOW_COLUMNS], ...rows.map((a) => [a.domain])]);
}

/** The CSV's records as objects by header; a file without Mastodon's `#domain` header is refused (422). */
function records(text: string): Record<string, string>[] {
  if (Buffer.byteLength(text) > CSV_BYTES_MAX) throw new ApiError(422, 'The file is larger than 2 MB.');
  let rows: Record<string, string>[];
  try {
    rows = parse(text, { bom: true, columns: (header: string[]) => header.map((h) => h.trim()), skip_empty_lines: true, relax_column_count: true, to: CSV_ROWS_MAX + 1, trim: true });
  } catch (err) {
    throw new ApiError(422, `The file is not valid CSV: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (rows.length > 0 && !('#domain' in rows[0]!)) throw new ApiError(422, 'The file has no #domain column (the first line names the columns, as in an export).');
  if (rows.length > CSV_ROWS_MAX) throw new ApiError(422, `The file has more than ${CSV_ROWS_MAX} rows.`);
  return rows;
}

export interface ImportOutcome {
  added: string[];
  /** Already blocked or allowed (by themselves or a domain above them): left as they are, as Mastodon does. */
  existing: string[];
  invalid: { line: number; why: string }[];
}

const TRUE = new Set(['true', '1', 'yes', 't']);

/** One block a file asks for, as read from its row. */
export interface ProposedBlock {
  domain: string;
  severity: DomainSeverity;
  reject_media: boolean;
  reject_reports: boolean;
  public_comment: string | null;
  obfuscate: boolean;
}

/** A block the file asks for, and the block here that already holds for its domain (its own, or one above it). */
export interface PreviewedBlock extends ProposedBlock {
  line: number;
  conflict: { id: string; domain: string; severity: DomainSeverity; reject_media: boolean; reject_reports: boolean; obfuscate: boolean; same: boolean } | null;
}

/**
 * What importing the file would do, changing nothing (the confirmation step of Mastodon's import): each row's block,
 * with the block here that already holds for its domain; rows whose domain or severity is not one, or whose domain
 * came earlier in the file, are reported and left out. A missing severity is `suspend` (Mastodon's import).
 */
export async function previewDomainBlockImport(deps: Pick<DomainAdminDeps, 'db'>, text: string): Promise<{ rows: PreviewedBlock[]; invalid: { line: number; why: string }[] }> {
  const rows: PreviewedBlock[] = [];
  const invalid: { line: number; why: string }[] = [];
  const seen = new Set<string>();
  for (const [i, r] of records(text).entries()) {
    const line = i + 2;
    let proposed: ProposedBlock;
    try {
      proposed = proposedBlock(r);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) {
        invalid.push({ line, why: err.message.replace(/^Validation failed: /, '') });
        continue;
      }
      throw err;
    }
    if (seen.has(proposed.domain)) {
      invalid.push({ line, why: `${proposed.domain} is in the file already` });
      continue;
    }
    seen.add(proposed.domain);
    const existing = await domainBlockRuleFor(deps.db, proposed.domain);
    rows.push({
      ...proposed, line,
      conflict: existing && {
        id: existing.id, domain: existing.domain, severity: existing.severity, reject_media: existing.reject_media, reject_reports: existing.reject_reports,
        obfuscate: existing.obfuscate, same: existing.domain === proposed.domain,
      },
    });
  }
  return { rows, invalid };
}

/** A row of the file (or of the confirmation form) as a block; 422 when its domain or severity is not one. */
export function proposedBlock(r: Record<string, string | undefined>): ProposedBlock {
  const severity = (r['#severity'] || 'suspend') as DomainSeverity;
  if (!SEVERITIES.includes(severity)) throw new ApiError(422, `unknown severity ${JSON.stringify(r['#severity'])}`);
  return {
    domain: validDomain(r['#domain']), severity,
    reject_media: TRUE.has((r['#reject_media'] ?? '').toLowerCase()), reject_reports: TRUE.has((r['#reject_reports'] ?? '').toLowerCase()),
    public_comment: r['#public_comment'] || null, obfuscate: TRUE.has((r['#obfuscate'] ?? '').toLowerCase()),
  };
}

export interface ApplyOutcome extends ImportOutcome {
  /** Blocks of the same domain that were there and now have the file's settings. */
  changed: string[];
}

/**
 * Applies the blocks an operator ticked on the confirmation page, through the same services as the API (each with
 * its audit log entry): a new block for a domain nothing covers; the file's settings for a block of the same domain
 * already here (ticking such a row is choosing the file's over it); a domain covered by a block of a domain above it
 * is left under that block, as Mastodon does.
 */
export async function applyDomainBlockImport(deps: DomainAdminDeps, blocks: ProposedBlock[], by: Actor): Promise<ApplyOutcome> {
  const out: ApplyOutcome = { added: [], changed: [], existing: [], invalid: [] };
  for (const b of blocks) {
    const { domain, ...input } = b;
    const result = await createDomainBlock(deps, domain, input, by);
    if ('block' in result) out.added.push(result.block.domain);
    else if (result.existing.domain === domain && (await updateDomainBlock(deps, result.existing.id, input, by))) out.changed.push(domain);
    else out.existing.push(domain);
  }
  return out;
}

export async function importDomainAllows(deps: DomainAdminDeps, text: string, by: Actor): Promise<ImportOutcome> {
  const out: ImportOutcome = { added: [], existing: [], invalid: [] };
  const known = new Set((await allPages((maxId) => domainAllowsPage(deps.db, { limit: 200, maxId }))).map((a) => a.domain));
  for (const [i, r] of records(text).entries()) {
    try {
      const domain = validDomain(r['#domain']);
      if (known.has(domain)) {
        out.existing.push(domain);
        continue;
      }
      await createDomainAllow(deps, domain, by);
      known.add(domain);
      out.added.push(domain);
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 422) out.invalid.push({ line: i + 2, why: err.message.replace(/^Validation failed: /, '') });
      else throw err;
    }
  }
  return out;
}

/** Rows one confirmation page shows (a form carries at most about a thousand fields: bigger files take several pages). */
export const CONFIRM_PAGE_ROWS = 500;

interface PendingBlockImport {
  by: Actor;
  rows: PreviewedBlock[];
  invalid: { line: number; why: string }[];
  /** The first row of the page waiting to be confirmed. */
  offset: number;
  done: ApplyOutcome;
}

/** A page of an import waiting for its confirmation. */
export interface ImportPage {
  token: string;
  rows: PreviewedBlock[];
  /** The index (in the file's rows) of the page's first row, and how many rows there are in all. */
  offset: number;
  total: number;
  invalid: { line: number; why: string }[];
  done: ApplyOutcome;
}

const pageOf = (token: string, p: PendingBlockImport): ImportPage => ({
  token, rows: p.rows.slice(p.offset, p.offset + CONFIRM_PAGE_ROWS), offset: p.offset, total: p.rows.length, invalid: p.invalid, done: p.done,
});

/**
 * Reads the file and keeps what it would do for an hour, for `by` alone, changing nothing: the first page to confirm.
 */
export async function startDomainBlockImport(deps: DomainAdminDeps, text: string, by: Actor): Promise<ImportPage> {
  const preview = await previewDomainBlockImport(deps, text);
  const token = randomBytes(16).toString('hex');
  const pending: PendingBlockImport = { by, ...preview, offset: 0, done: { added: [], changed: [], existing: [], invalid: [] } };
  await savePendingImport(deps.redis, deps.redisPrefix, token, pending);
  return pageOf(token, pending);
}

/**
 * Applies the rows of the waiting page that the operator ticked (`ticked`: their indices in the file's rows), through
 * applyDomainBlockImport. Returns the next page when the file has more, else the whole outcome. 404 when the import
 * is unknown, expired or another operator's; 422 when a ticked index is not one of the page's rows.
 */
export async function confirmDomainBlockImport(deps: DomainAdminDeps, token: string, ticked: string[], by: Actor): Promise<{ next: ImportPage } | { outcome: ApplyOutcome }> {
  const pending = /^[0-9a-f]{32}$/.test(token) ? await loadPendingImport<PendingBlockImport>(deps.redis, deps.redisPrefix, token) : null;
  if (!pending || pending.by !== by) throw new ApiError(404, 'This import is no longer waiting: send the file again.');
  const end = Math.min(pending.offset + CONFIRM_PAGE_ROWS, pending.rows.length);
  const chosen = new Set<number>();
  for (const t of ticked) {
    const i = /^\d{1,6}$/.test(t) ? Number(t) : -1;
    if (i < pending.offset || i >= end) throw new ApiError(422, 'The confirmation names a row of no page waiting: send the file again.');
    chosen.add(i);
  }
  // A block of the same domain met by an unticked row is left as it is: counted with those already blocked.
  const blocks = [...chosen].sort((a, b) => a - b).map((i) => pending.rows[i]!).map(({ line: _line, conflict: _conflict, ...block }) => block);
  const outcome = await applyDomainBlockImport(deps, blocks, by);
  const done: ApplyOutcome = {
    added: [...pending.done.added, ...outcome.added], changed: [...pending.done.changed, ...outcome.changed],
    existing: [...pending.done.existing, ...outcome.existing], invalid: pending.done.invalid,
  };
  if (end < pending.rows.length) {
    const next: PendingBlockImport = { ...pending, offset: end, done };
    await savePendingImport(deps.redis, deps.redisPrefix, token, next);
    return { next: pageOf(token, next) };
  }
  await dropPendingImport(deps.redis, deps.redisPrefix, token);
  return { outcome: { ...done, invalid: pending.invalid } };
}
