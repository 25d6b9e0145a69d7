import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** Instance-wide domain blocks and allows (Mastodon's DomainBlock and DomainAllow); domains are stored normalised. */
export type DomainSeverity = 'silence' | 'suspend' | 'noop';

export interface DomainBlockRow {
  id: string;
  domain: string;
  severity: DomainSeverity;
  reject_media: boolean;
  reject_reports: boolean;
  private_comment: string | null;
  public_comment: string | null;
  obfuscate: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface DomainAllowRow {
  id: string;
  domain: string;
  created_at: Date;
}

export interface DomainBlockFields {
  severity: DomainSeverity;
  reject_media: boolean;
  reject_reports: boolean;
  private_comment: string | null;
  public_comment: string | null;
  obfuscate: boolean;
}

const BLOCK_COLUMNS = `id::text, domain, severity, reject_media, reject_reports, private_comment, public_comment, obfuscate, created_at, updated_at`;
const ALLOW_COLUMNS = `id::text, domain, created_at`;

/**
 * `a.b.example` -> [a.b.example, b.example, example]; with a port, those with it first, then those without (what
 * domain_variants() computes in SQL).
 */
export function domainVariants(domain: string): string[] {
  const [host, port] = domain.split(':', 2) as [string, string | undefined];
  const parts = host.split('.');
  const hosts = parts.map((_, i) => parts.slice(i).join('.'));
  return port ? [...hosts.map((h) => `${h}:${port}`), ...hosts] : hosts;
}

/** The rule that holds for a domain: the block on it or on the nearest domain above it (Mastodon's rule_for). */
export async function domainBlockRuleFor(db: Queryable, domain: string): Promise<DomainBlockRow | null> {
  const { rows } = await db.query<DomainBlockRow>(
    `SELECT ${BLOCK_COLUMNS} FROM instance_domain_blocks WHERE domain = ANY($1::text[]) ORDER BY char_length(domain) DESC LIMIT 1`,
    [domainVariants(domain)],
  );
  return rows[0] ?? null;
}

/** Whether an allow covers the domain (itself or a domain above it). */
export async function domainAllowRuleFor(db: Queryable, domain: string): Promise<DomainAllowRow | null> {
  const { rows } = await db.query<DomainAllowRow>(
    `SELECT ${ALLOW_COLUMNS} FROM instance_domain_allows WHERE domain = ANY($1::text[]) ORDER BY char_length(domain) DESC LIMIT 1`,
    [domainVariants(domain)],
  );
  return rows[0] ?? null;
}

export async function findDomainBlock(db: Queryable, id: string): Promise<DomainBlockRow | null> {
  const { rows } = await db.query<DomainBlockRow>(`SELECT ${BLOCK_COLUMNS} FROM instance_domain_blocks WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function findDomainBlockByDomain(db: Queryable, domain: string): Promise<DomainBlockRow | null> {
  const { rows } = await db.query<DomainBlockRow>(`SELECT ${BLOCK_COLUMNS} FROM instance_domain_blocks WHERE domain = $1`, [domain]);
  return rows[0] ?? null;
}

/** Null when the domain is blocked already (the unique constraint decides between two at once). */
export async function insertDomainBlock(db: Queryable, domain: string, f: DomainBlockFields): Promise<DomainBlockRow | null> {
  const { rows } = await db.query<DomainBlockRow>(
    `INSERT INTO instance_domain_blocks (domain, severity, reject_media, reject_reports, private_comment, public_comment, obfuscate)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (domain) DO NOTHING RETURNING ${BLOCK_COLUMNS}`,
    [domain, f.severity, f.reject_media, f.reject_reports, f.private_comment, f.public_comment, f.obfuscate],
  );
  return rows[0] ?? null;
}

export async function updateDomainBlock(db: Queryable, id: string, f: DomainBlockFields): Promise<DomainBlockRow | null> {
  const { rows } = await db.query<DomainBlockRow>(
    `UPDATE instance_domain_blocks SET severity = $2, reject_media = $3, reject_reports = $4, private_comment = $5,
            public_comment = $6, obfuscate = $7, updated_at = now()
      WHERE id = $1 RETURNING ${BLOCK_COLUMNS}`,
    [id, f.severity, f.reject_media, f.reject_reports, f.private_comment, f.public_comment, f.obfuscate],
  );
  return rows[0] ?? null;
}

export async function deleteDomainBlock(db: Queryable, id: string): Promise<DomainBlockRow | null> {
  const { rows } = await db.query<DomainBlockRow>(`DELETE FROM instance_domain_blocks WHERE id = $1 RETURNING ${BLOCK_COLUMNS}`, [id]);
  return rows[0] ?? null;
}

/** Newest first, paged by id (the admin API). */
export async function domainBlocksPage(db: Queryable, p: PageParams): Promise<DomainBlockRow[]> {
  const values: unknown[] = [];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<DomainBlockRow>(
    `SELECT ${BLOCK_COLUMNS} FROM instance_domain_blocks WHERE ${c.where} ORDER BY ${c.order} ${c.limit}`, values,
  );
  return pageRows(rows, p);
}

/**
 * The silences and suspensions shown to the public (Mastodon's with_user_facing_limitations.by_severity): silences
 * first, then suspensions, each by domain. Bounded: a list of thousands is more than any server publishes.
 */
export async function userFacingDomainBlocks(db: Queryable, limit = 5000): Promise<DomainBlockRow[]> {
  const { rows } = await db.query<DomainBlockRow>(
    `SELECT ${BLOCK_COLUMNS} FROM instance_domain_blocks WHERE severity IN ('silence', 'suspend')
      ORDER BY CASE severity WHEN 'silence' THEN 1 ELSE 2 END, domain LIMIT $1`,
    [limit],
  );
  return rows;
}

export async function insertDomainAllow(db: Queryable, domain: string): Promise<DomainAllowRow> {
  const { rows } = await db.query<DomainAllowRow>(
    `INSERT INTO instance_domain_allows (domain) VALUES ($1)
     ON CONFLICT (domain) DO UPDATE SET domain = excluded.domain RETURNING ${ALLOW_COLUMNS}`,
    [domain],
  );
  return rows[0]!;
}

export async function findDomainAllow(db: Queryable, id: string): Promise<DomainAllowRow | null> {
  const { rows } = await db.query<DomainAllowRow>(`SELECT ${ALLOW_COLUMNS} FROM instance_domain_allows WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function findDomainAllowByDomain(db: Queryable, domain: string): Promise<DomainAllowRow | null> {
  const { rows } = await db.query<DomainAllowRow>(`SELECT ${ALLOW_COLUMNS} FROM instance_domain_allows WHERE domain = $1`, [domain]);
  return rows[0] ?? null;
}

export async function deleteDomainAllow(db: Queryable, id: string): Promise<DomainAllowRow | null> {
  const { rows } = await db.query<DomainAllowRow>(`DELETE FROM instance_domain_allows WHERE id = $1 RETURNING ${ALLOW_COLUMNS}`, [id]);
  return rows[0] ?? null;
}

export async function domainAllowsPage(db: Queryable, p: PageParams): Promise<DomainAllowRow[]> {
  const values: unknown[] = [];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<DomainAllowRow>(
    `SELECT ${ALLOW_COLUMNS} FROM instance_domain_allows WHERE ${c.where} ORDER BY ${c.order} ${c.limit}`, values,
  );
  return pageRows(rows, p);
}

/**
 * Suspends up to `limit` accounts of the domain and its subdomains not suspended yet, marking them with the block's
 * timestamp; returns their ids (none left when fewer than `limit`).
 */
export async function suspendDomainAccountsBatch(db: Queryable, domain: string, at: Date, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE accounts SET suspended_at = $2, updated_at = now()
      WHERE id IN (SELECT id FROM accounts
                    WHERE domain IS NOT NULL AND domain_variants(lower(domain)) @> ARRAY[$1::text] AND suspended_at IS NULL
                    LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING id::text`,
    [domain, at, limit],
  );
  return rows.map((r) => r.id);
}

/** Lifts the suspension of up to `limit` accounts that the block made at `at` (and no other suspension). */
export async function unsuspendDomainAccountsBatch(db: Queryable, domain: string, at: Date, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE accounts SET suspended_at = NULL, updated_at = now()
      WHERE id IN (SELECT id FROM accounts
                    WHERE domain IS NOT NULL AND domain_variants(lower(domain)) @> ARRAY[$1::text] AND suspended_at = $2 AND deleted_at IS NULL
                    LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING id::text`,
    [domain, at, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * Media rejected (reject_media): up to `limit` accounts of the domain whose stored avatar or header links, or whose
 * statuses' attachments, still point at their server lose them (attachments become `unknown`: shown as a link, never
 * loaded inline). Returns the accounts and statuses changed and how many attachments were.
 */
export async function rejectDomainMediaBatch(db: Queryable, domain: string, limit: number): Promise<{ accounts: string[]; statuses: string[]; attachments: number }> {
  const accounts = await db.query<{ id: string }>(
    `UPDATE accounts SET avatar_remote_url = NULL, header_remote_url = NULL, updated_at = now()
      WHERE id IN (SELECT id FROM accounts
                    WHERE domain IS NOT NULL AND domain_variants(lower(domain)) @> ARRAY[$1::text]
                      AND (avatar_remote_url IS NOT NULL OR header_remote_url IS NOT NULL)
                    LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING id::text`,
    [domain, limit],
  );
  const media = await db.query<{ status_id: string }>(
    `UPDATE media_attachments SET type = 'unknown'
      WHERE id IN (SELECT m.id FROM accounts a JOIN media_attachments m ON m.account_id = a.id
                    WHERE a.domain IS NOT NULL AND domain_variants(lower(a.domain)) @> ARRAY[$1::text]
                      AND m.remote_url IS NOT NULL AND m.type <> 'unknown'
                    LIMIT $2 FOR UPDATE OF m SKIP LOCKED)
      RETURNING status_id::text`,
    [domain, limit],
  );
  const statuses = [...new Set(media.rows.map((r) => r.status_id).filter((id) => id !== null))];
  return { accounts: accounts.rows.map((r) => r.id), statuses, attachments: media.rows.length };
}

/**
 * SQL keeping statuses of silenced domains out of public timelines for anyone who does not follow their author:
 * the account (alias `a`) is local, or the rule that holds for its domain is not a silence, or the viewer (the
 * parameter `viewerParam`, possibly null) follows it. One indexed probe of the small blocks table per remote row, and
 * nothing at all while no silence exists (the first test is evaluated once per query).
 */
export function notSilencedSql(a: string, viewerParam: string): string {
  return `(${a}.domain IS NULL
    OR NOT EXISTS (SELECT 1 FROM instance_domain_blocks WHERE severity = 'silence')
    OR coalesce((SELECT b.severity FROM instance_domain_blocks b WHERE b.domain = ANY(domain_variants(lower(${a}.domain)))
                  ORDER BY char_length(b.domain) DESC LIMIT 1), '') <> 'silence'
    OR EXISTS (SELECT 1 FROM follows f WHERE f.account_id = ${viewerParam} AND f.target_account_id = ${a}.id))`;
}
