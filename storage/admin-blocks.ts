import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** The operator's sign-up and access blocks (Mastodon's IpBlock, EmailDomainBlock and CanonicalEmailBlock). */
export type IpBlockSeverity = 'sign_up_requires_approval' | 'sign_up_block' | 'no_access';

export interface IpBlockRow {
  id: string;
  /** Always with its prefix length: `10.0.0.0/8`, `192.0.2.1/32`, `2001:db8::/32`. */
  ip: string;
  severity: IpBlockSeverity;
  comment: string;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface IpBlockFields {
  ip: string;
  severity: IpBlockSeverity;
  comment: string;
  expires_at: Date | null;
}

export interface EmailDomainBlockRow {
  id: string;
  domain: string;
  created_at: Date;
}

export interface CanonicalEmailBlockRow {
  id: string;
  canonical_email_hash: string;
  created_at: Date;
}

const IP_COLUMNS = `id::text, ip::text AS ip, severity, comment, expires_at, created_at, updated_at`;
const ACTIVE = `(expires_at IS NULL OR expires_at > now())`;
const EMAIL_DOMAIN_COLUMNS = `id::text, domain, created_at`;
const CANONICAL_COLUMNS = `id::text, canonical_email_hash, created_at`;

/** True when the error is the unique index of `table` refusing a second row. */
export function isDuplicate(err: unknown): boolean {
  return (err as { code?: string }).code === '23505';
}

// ---- IP blocks

export async function ipBlocksPage(db: Queryable, p: PageParams): Promise<IpBlockRow[]> {
  const values: unknown[] = [];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<IpBlockRow>(`SELECT ${IP_COLUMNS} FROM ip_blocks WHERE ${c.where} ORDER BY ${c.order} ${c.limit}`, values);
  return pageRows(rows, p);
}

export async function findIpBlock(db: Queryable, id: string): Promise<IpBlockRow | null> {
  const { rows } = await db.query<IpBlockRow>(`SELECT ${IP_COLUMNS} FROM ip_blocks WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Throws the unique violation (23505) when the range is blocked already. */
export async function insertIpBlock(db: Queryable, f: IpBlockFields): Promise<IpBlockRow> {
  const { rows } = await db.query<IpBlockRow>(
    `INSERT INTO ip_blocks (ip, severity, comment, expires_at) VALUES ($1::cidr, $2, $3, $4) RETURNING ${IP_COLUMNS}`,
    [f.ip, f.severity, f.comment, f.expires_at],
  );
  return rows[0]!;
}

export async function updateIpBlock(db: Queryable, id: string, f: IpBlockFields): Promise<IpBlockRow | null> {
  const { rows } = await db.query<IpBlockRow>(
    `UPDATE ip_blocks SET ip = $2::cidr, severity = $3, comment = $4, expires_at = $5, updated_at = now() WHERE id = $1 RETURNING ${IP_COLUMNS}`,
    [id, f.ip, f.severity, f.comment, f.expires_at],
  );
  return rows[0] ?? null;
}

export async function deleteIpBlock(db: Queryable, id: string): Promise<IpBlockRow | null> {
  const { rows } = await db.query<IpBlockRow>(`DELETE FROM ip_blocks WHERE id = $1 RETURNING ${IP_COLUMNS}`, [id]);
  return rows[0] ?? null;
}

/** The severities of the unexpired blocks whose range holds the address (an indexed `>>=` probe). */
export async function ipBlockSeveritiesFor(db: Queryable, ip: string): Promise<IpBlockSeverity[]> {
  const { rows } = await db.query<{ severity: IpBlockSeverity }>(
    `SELECT DISTINCT severity FROM ip_blocks WHERE ip >>= $1::inet AND ${ACTIVE}`, [ip],
  );
  return rows.map((r) => r.severity);
}

/** Every unexpired `no_access` range (the list each process keeps in memory for a few seconds). */
export async function activeNoAccessRanges(db: Queryable): Promise<{ ip: string; expires_at: Date | null }[]> {
  const { rows } = await db.query<{ ip: string; expires_at: Date | null }>(
    `SELECT ip::text AS ip, expires_at FROM ip_blocks WHERE severity = 'no_access' AND ${ACTIVE}`,
  );
  return rows;
}

// ---- E-mail domain blocks

export async function emailDomainBlocksPage(db: Queryable, p: PageParams): Promise<EmailDomainBlockRow[]> {
  const values: unknown[] = [];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<EmailDomainBlockRow>(
    `SELECT ${EMAIL_DOMAIN_COLUMNS} FROM email_domain_blocks WHERE ${c.where} ORDER BY ${c.order} ${c.limit}`, values,
  );
  return pageRows(rows, p);
}

export async function findEmailDomainBlock(db: Queryable, id: string): Promise<EmailDomainBlockRow | null> {
  const { rows } = await db.query<EmailDomainBlockRow>(`SELECT ${EMAIL_DOMAIN_COLUMNS} FROM email_domain_blocks WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Throws the unique violation (23505) when the domain is blocked already. */
export async function insertEmailDomainBlock(db: Queryable, domain: string): Promise<EmailDomainBlockRow> {
  const { rows } = await db.query<EmailDomainBlockRow>(
    `INSERT INTO email_domain_blocks (domain) VALUES ($1) RETURNING ${EMAIL_DOMAIN_COLUMNS}`, [domain],
  );
  return rows[0]!;
}

export async function deleteEmailDomainBlock(db: Queryable, id: string): Promise<EmailDomainBlockRow | null> {
  const { rows } = await db.query<EmailDomainBlockRow>(`DELETE FROM email_domain_blocks WHERE id = $1 RETURNING ${EMAIL_DOMAIN_COLUMNS}`, [id]);
  return rows[0] ?? null;
}

/** The blocks on any of these domains (a domain and those above it). */
export async function emailDomainBlocksOn(db: Queryable, domains: string[]): Promise<EmailDomainBlockRow[]> {
  const { rows } = await db.query<EmailDomainBlockRow>(
    `SELECT ${EMAIL_DOMAIN_COLUMNS} FROM email_domain_blocks WHERE domain = ANY($1::text[]) ORDER BY char_length(domain) DESC`, [domains],
  );
  return rows;
}

// ---- Canonical e-mail blocks

export async function canonicalEmailBlocksPage(db: Queryable, p: PageParams): Promise<CanonicalEmailBlockRow[]> {
  const values: unknown[] = [];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<CanonicalEmailBlockRow>(
    `SELECT ${CANONICAL_COLUMNS} FROM canonical_email_blocks WHERE ${c.where} ORDER BY ${c.order} ${c.limit}`, values,
  );
  return pageRows(rows, p);
}

export async function findCanonicalEmailBlock(db: Queryable, id: string): Promise<CanonicalEmailBlockRow | null> {
  const { rows } = await db.query<CanonicalEmailBlockRow>(`SELECT ${CANONICAL_COLUMNS} FROM canonical_email_blocks WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function canonicalEmailBlocksByHash(db: Queryable, hash: string): Promise<CanonicalEmailBlockRow[]> {
  const { rows } = await db.query<CanonicalEmailBlockRow>(
    `SELECT ${CANONICAL_COLUMNS} FROM canonical_email_blocks WHERE canonical_email_hash = $1`, [hash],
  );
  return rows;
}

/** Throws the unique violation (23505) when the hash is blocked already. */
export async function insertCanonicalEmailBlock(db: Queryable, hash: string, referenceAccountId: string | null = null): Promise<CanonicalEmailBlockRow> {
  const { rows } = await db.query<CanonicalEmailBlockRow>(
    `INSERT INTO canonical_email_blocks (canonical_email_hash, reference_account_id) VALUES ($1, $2) RETURNING ${CANONICAL_COLUMNS}`,
    [hash, referenceAccountId],
  );
  return rows[0]!;
}

export async function deleteCanonicalEmailBlock(db: Queryable, id: string): Promise<CanonicalEmailBlockRow | null> {
  const { rows } = await db.query<CanonicalEmailBlockRow>(`DELETE FROM canonical_email_blocks WHERE id = $1 RETURNING ${CANONICAL_COLUMNS}`, [id]);
  return rows[0] ?? null;
}
