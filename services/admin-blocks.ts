import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { RedisClient } from '../storage/redis.ts';
import { groupsForCommand } from '../storage/redis-keys.ts';
import { ApiError } from '../errors.ts';
import { transaction, type Db, type Queryable } from '../storage/db.ts';
import { logAction, type ActionName, type Actor, type TargetType } from './action-log.ts';
import {
  activeNoAccessRanges, canonicalEmailBlocksByHash, deleteCanonicalEmailBlock, deleteEmailDomainBlock, deleteIpBlock,
  emailDomainBlocksOn, findIpBlock, insertCanonicalEmailBlock, insertEmailDomainBlock, insertIpBlock, ipBlockSeveritiesFor,
  isDuplicate, updateIpBlock as updateIpBlockRow,
  type CanonicalEmailBlockRow, type EmailDomainBlockRow, type IpBlockFields, type IpBlockRow, type IpBlockSeverity,
} from '../storage/admin-blocks.ts';
import { normalizeDomain } from './domain-policy.ts';
import { domainVariants } from '../storage/instance-domain-blocks.ts';

/**
 * The operator's blocks of addresses, e-mail domains and e-mail addresses, as Mastodon 4.5 has them (IpBlock,
 * EmailDomainBlock, CanonicalEmailBlock): what the admin API accepts, and what sign-ups and requests are refused.
 */

export const IP_SEVERITIES: readonly IpBlockSeverity[] = ['sign_up_requires_approval', 'sign_up_block', 'no_access'];
const invalid = (message: string) => new ApiError(422, `Validation failed: ${message}`);

// ---- Addresses

/**
 * A range as the operator writes it (`10.0.0.0/8`, `192.0.2.1`, `2001:db8::/32`) in canonical form, its address
 * masked to the network (`10.1.2.3/8` -> `10.0.0.0/8`, as Mastodon's IPAddr does); a bare address is a /32 or /128.
 * Null when it is not one (IPv4 only in dotted decimal, no zone ids).
 */
export function parseIpRange(input: string): string | null {
  const s = input.trim();
  const slash = s.indexOf('/');
  const addr = slash === -1 ? s : s.slice(0, slash);
  const bitsText = slash === -1 ? null : s.slice(slash + 1);
  let kind: 'ipv4' | 'ipv6';
  if (ipaddr.IPv4.isValidFourPartDecimal(addr)) kind = 'ipv4';
  else if (!addr.includes('%') && addr.includes(':') && ipaddr.IPv6.isValid(addr)) kind = 'ipv6';
  else return null;
  const max = kind === 'ipv4' ? 32 : 128;
  if (bitsText !== null && !/^\d{1,3}$/.test(bitsText)) return null;
  const bits = bitsText === null ? max : Number(bitsText);
  if (bits > max) return null;
  const network = kind === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${addr}/${bits}`) : ipaddr.IPv6.networkAddressFromCIDR(`${addr}/${bits}`);
  return `${network.toString()}/${bits}`;
}

/** A client's address as blocks see it (an IPv4 address mapped into IPv6 is the IPv4 one); null when it is none. */
export function clientAddress(ip: string | undefined | null): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (!ip || !ipaddr.isValid(ip)) return null;
  try {
    return ipaddr.process(ip);
  } catch {
    return null;
  }
}

/** Mastodon never refuses requests from the machine itself (its Rack::Attack safelist), so an operator cannot lock out localhost. */
function isLoopback(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return addr.range() === 'loopback';
}

/**
 * The unexpired `no_access` ranges, kept in memory and read again from PostgreSQL at most every `ttlMs` (changes in
 * this process are seen at once; those of other processes within that time), so a request costs no query.
 */
export class IpAccessList {
  private ranges: { range: [ipaddr.IPv4 | ipaddr.IPv6, number]; expires: number }[] = [];
  private loadedAt = -Infinity;
  private loading: Promise<void> | null = null;
  private generation = 0;

  private readonly db: Queryable;
  private readonly ttlMs: number;

  constructor(db: Queryable, ttlMs = 5000) {
    this.db = db;
    this.ttlMs = ttlMs;
  }

  /** Forgets the list (after a change), so the next request reads it again. */
  invalidate(): void {
    this.generation++;
    this.loadedAt = -Infinity;
  }

  /** Whether the list must be read before `blocks` can answer. */
  get stale(): boolean {
    return Date.now() - this.loadedAt > this.ttlMs;
  }

  /** Reads the list again (one read at a time); if PostgreSQL cannot be reached the last list is kept. */
  refresh(): Promise<void> {
    this.loading ??= (async () => {
      const generation = this.generation;
      try {
        const rows = await activeNoAccessRanges(this.db);
        this.ranges = rows.map((r) => ({ range: ipaddr.parseCIDR(r.ip), expires: r.expires_at ? r.expires_at.getTime() : Infinity }));
        if (generation === this.generation) this.loadedAt = Date.now();
      } catch (err) {
        // Tried again after the same few seconds, not on every request while PostgreSQL is away.
        if (generation === this.generation) this.loadedAt = Date.now();
        throw err;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /** Whether the address is refused everything, by the list as last read. */
  blocks(ip: string | undefined): boolean {
    if (this.ranges.length === 0) return false;
    const addr = clientAddress(ip);
    if (!addr || isLoopback(addr)) return false;
    const now = Date.now();
    for (const { range, expires } of this.ranges) {
      if (expires > now && range[0].kind() === addr.kind() && addr.match(range)) return true;
    }
    return false;
  }
}

const accessLists = new WeakMap<Queryable, IpAccessList>();

/** The process's access list for this database. */
export function ipAccessList(db: Queryable): IpAccessList {
  let list = accessLists.get(db);
  if (!list) accessLists.set(db, (list = new IpAccessList(db)));
  return list;
}

/** What a sign-up from this address meets: refused, held for approval, or nothing. */
export async function signUpIpPolicy(db: Queryable, ip: string | undefined | null): Promise<'block' | 'approval' | null> {
  const addr = clientAddress(ip);
  if (!addr) return null;
  const severities = await ipBlockSeveritiesFor(db, addr.toString());
  // A range that refuses everything refuses sign-ups too (the request would not even get here while it is cached).
  if (severities.includes('sign_up_block') || severities.includes('no_access')) return 'block';
  if (severities.includes('sign_up_requires_approval')) return 'approval';
  return null;
}

export interface IpBlockInput {
  ip?: string | undefined;
  severity?: string | undefined;
  comment?: string | null | undefined;
  /** Seconds from now; null or '' for none. */
  expires_in?: number | string | null | undefined;
}

function expiresAt(value: number | string | null): Date | null {
  if (value === null || value === '') return null;
  const seconds = typeof value === 'number' ? value : /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(seconds)) throw invalid('Expires in is not a number');
  // At most a century, so the date stays one PostgreSQL and JavaScript both hold.
  return new Date(Date.now() + Math.min(seconds, 100 * 365 * 86400) * 1000);
}

function ipBlockFields(base: IpBlockFields | null, input: IpBlockInput): IpBlockFields {
  const errors: string[] = [];
  let ip = base?.ip ?? null;
  if (input.ip !== undefined || !base) {
    const raw = input.ip ?? '';
    ip = raw.trim() === '' ? null : parseIpRange(raw);
    if (raw.trim() === '') errors.push("Ip can't be blank");
    else if (!ip) errors.push('Ip is invalid');
  }
  const severity = input.severity !== undefined ? input.severity : base?.severity;
  if (severity === undefined || severity.trim() === '') errors.push("Severity can't be blank");
  else if (!IP_SEVERITIES.includes(severity as IpBlockSeverity)) errors.push('Severity is not included in the list');
  if (errors.length) throw invalid(errors.join(', '));
  const comment = input.comment !== undefined ? (input.comment ?? '').trim() : base?.comment ?? '';
  const expires = input.expires_in !== undefined ? expiresAt(input.expires_in) : base?.expires_at ?? null;
  return { ip: ip!, severity: severity as IpBlockSeverity, comment, expires_at: expires };
}

const IP_TAKEN = () => invalid('Ip has already been taken');

/** A block's write and its audit log entry, in one transaction (a removed block is named, no longer pointed to). */
async function logged<T extends { id: string } | null>(db: Db, by: Actor | undefined, action: ActionName, type: TargetType, name: (row: NonNullable<T>) => string, write: (tx: Queryable) => Promise<T>): Promise<T> {
  return transaction(db, async (tx) => {
    const row = await write(tx);
    if (row) await logAction(tx, by, action, { type, id: action === 'destroy' ? null : row.id, name: name(row as NonNullable<T>) });
    return row;
  });
}

export async function createIpBlock(db: Db, input: IpBlockInput, by?: Actor): Promise<IpBlockRow> {
  const fields = ipBlockFields(null, input);
  try {
    return await logged(db, by, 'create', 'IpBlock', (r) => r.ip, (tx) => insertIpBlock(tx, fields));
  } catch (err) {
    if (isDuplicate(err)) throw IP_TAKEN();
    throw err;
  } finally {
    ipAccessList(db).invalidate();
  }
}

/** Null when there is no such block. */
export async function updateIpBlock(db: Db, id: string, input: IpBlockInput, by?: Actor): Promise<IpBlockRow | null> {
  const existing = await findIpBlock(db, id);
  if (!existing) return null;
  const fields = ipBlockFields(existing, input);
  try {
    return await logged(db, by, 'update', 'IpBlock', (r) => r.ip, (tx) => updateIpBlockRow(tx, id, fields));
  } catch (err) {
    if (isDuplicate(err)) throw IP_TAKEN();
    throw err;
  } finally {
    ipAccessList(db).invalidate();
  }
}

export async function removeIpBlock(db: Db, id: string, by?: Actor): Promise<IpBlockRow | null> {
  const row = await logged<IpBlockRow | null>(db, by, 'destroy', 'IpBlock', (r) => r.ip, (tx) => deleteIpBlock(tx, id));
  ipAccessList(db).invalidate();
  return row;
}

// ---- E-mail domains

/** The domain after the (first) `@`, normalised; null when it is not a domain name. */
export function emailDomainOf(email: string): string | null {
  const at = email.indexOf('@');
  if (at === -1) return null;
  const domain = normalizeDomain(email.slice(at + 1));
  return domain && !domain.includes(':') ? domain : null;
}

export async function createEmailDomainBlock(db: Db, input: string | undefined | null, by?: Actor): Promise<EmailDomainBlockRow> {
  if (input === undefined || input === null || input.trim() === '') throw invalid("Domain can't be blank");
  const domain = normalizeDomain(input);
  if (!domain || domain.includes(':')) throw invalid('Domain is not a valid domain name');
  try {
    return await logged(db, by, 'create', 'EmailDomainBlock', (r) => r.domain, (tx) => insertEmailDomainBlock(tx, domain));
  } catch (err) {
    if (isDuplicate(err)) throw invalid('Domain has already been taken');
    throw err;
  }
}

export function removeEmailDomainBlock(db: Db, id: string, by?: Actor): Promise<EmailDomainBlockRow | null> {
  return logged(db, by, 'destroy', 'EmailDomainBlock', (r) => r.domain, (tx) => deleteEmailDomainBlock(tx, id));
}

const DAY = 86400;
const HISTORY_DAYS = 7;
const historyKey = (prefix: string, id: string, day: number, what: 'uses' | 'accounts') => `${prefix}email-domain-block:{${id}}:${day}:${what}`;
const today = () => Math.floor(Date.now() / 1000 / DAY) * DAY;

/**
 * Counts a refused sign-up against the blocks that refused it, as Mastodon's history does: `uses` is attempts in the
 * day, `accounts` the distinct addresses they came from. Kept in Redis for a little over a week.
 */
async function recordAttempt(redis: RedisClient, prefix: string, blocks: EmailDomainBlockRow[], ip: string | null | undefined): Promise<void> {
  const day = today();
  // One transaction on a single Redis; one per block on a cluster, where a block's keys share its tag but two
  // blocks' keys may be on two nodes.
  await Promise.all(groupsForCommand(redis, blocks, (block) => historyKey(prefix, block.id, day, 'uses')).map((group) => {
    const multi = redis.multi();
    for (const block of group) {
      const uses = historyKey(prefix, block.id, day, 'uses');
      multi.incr(uses).expire(uses, (HISTORY_DAYS + 1) * DAY);
      if (ip) {
        const accounts = historyKey(prefix, block.id, day, 'accounts');
        multi.pfadd(accounts, ip).expire(accounts, (HISTORY_DAYS + 1) * DAY);
      }
    }
    return multi.exec();
  }));
}

export interface EmailDomainBlockHistoryDay { day: string; accounts: string; uses: string }

/** The last seven days of each block, today first (Mastodon's Admin::EmailDomainBlock `history`). */
export async function emailDomainBlockHistories(redis: RedisClient, prefix: string, ids: string[]): Promise<Map<string, EmailDomainBlockHistoryDay[]>> {
  const days = Array.from({ length: HISTORY_DAYS }, (_, i) => today() - i * DAY);
  // One pipeline on a single Redis; one per block on a cluster (a block's keys share its tag, so one node).
  const groups = groupsForCommand(redis, ids, (id) => historyKey(prefix, id, 0, 'uses'));
  const replies = await Promise.all(groups.map(async (group) => {
    const pipeline = redis.pipeline();
    for (const id of group) for (const day of days) pipeline.get(historyKey(prefix, id, day, 'uses')).pfcount(historyKey(prefix, id, day, 'accounts'));
    return (await pipeline.exec()) ?? [];
  }));
  const out = new Map<string, EmailDomainBlockHistoryDay[]>();
  for (const [g, group] of groups.entries()) {
    let i = 0;
    for (const id of group) {
      out.set(id, days.map((day) => {
        const uses = Number(replies[g]![i++]?.[1] ?? 0) || 0;
        const accounts = Number(replies[g]![i++]?.[1] ?? 0) || 0;
        return { day: String(day), accounts: String(accounts), uses: String(uses) };
      }));
    }
  }
  return out;
}

// ---- Canonical addresses

/** Mastodon's canonical form of an address: lower case, and in the local part no dots and nothing from the first `+`. */
export function canonicalEmail(email: string): string {
  const lower = email.toLowerCase();
  const at = lower.indexOf('@');
  const local = at === -1 ? lower : lower.slice(0, at);
  const domain = at === -1 ? '' : lower.slice(at + 1);
  return `${local.replaceAll('.', '').split('+', 1)[0]}@${domain}`;
}

export function canonicalEmailHash(email: string): string {
  return createHash('sha256').update(canonicalEmail(email)).digest('hex');
}

export async function createCanonicalEmailBlock(db: Db, input: { email?: string | null | undefined; canonical_email_hash?: string | null | undefined }, by?: Actor): Promise<CanonicalEmailBlockRow> {
  let hash: string;
  if (input.email !== undefined && input.email !== null && input.email.trim() !== '') hash = canonicalEmailHash(input.email.trim());
  else {
    const raw = (input.canonical_email_hash ?? '').trim().toLowerCase();
    if (raw === '') throw invalid("Canonical email hash can't be blank");
    if (!/^[0-9a-f]{64}$/.test(raw)) throw invalid('Canonical email hash is invalid');
    hash = raw;
  }
  try {
    return await logged(db, by, 'create', 'CanonicalEmailBlock', (r) => r.canonical_email_hash, (tx) => insertCanonicalEmailBlock(tx, hash));
  } catch (err) {
    if (isDuplicate(err)) throw invalid('Canonical email hash has already been taken');
    throw err;
  }
}

export async function canonicalEmailBlocksMatching(db: Queryable, email: string): Promise<CanonicalEmailBlockRow[]> {
  return canonicalEmailBlocksByHash(db, canonicalEmailHash(email.trim()));
}

export function removeCanonicalEmailBlock(db: Db, id: string, by?: Actor): Promise<CanonicalEmailBlockRow | null> {
  return logged(db, by, 'destroy', 'CanonicalEmailBlock', (r) => r.canonical_email_hash, (tx) => deleteCanonicalEmailBlock(tx, id));
}

// ---- What a sign-up (or a change of address) meets

export interface EmailBlockDeps { db: Queryable; redis: RedisClient; redisPrefix: string }

/**
 * Mastodon's UserEmailValidator for an address already well formed: a blocked e-mail domain (or one above it) is
 * ERR_BLOCKED "uses a disallowed e-mail provider" (a domain that is not a domain name counts as blocked, as there);
 * a blocked canonical address is ERR_TAKEN "is already taken" (so nobody learns the address was blocked).
 * A refusal by domain is counted in that block's history, with the address the attempt came from.
 */
export async function emailBlockErrors(deps: EmailBlockDeps, email: string, ip?: string | null): Promise<{ error: string; description: string }[]> {
  const errors: { error: string; description: string }[] = [];
  const domain = emailDomainOf(email);
  const blocks = domain ? await emailDomainBlocksOn(deps.db, domainVariants(domain)) : [];
  if (!domain || blocks.length > 0) errors.push({ error: 'ERR_BLOCKED', description: 'uses a disallowed e-mail provider' });
  if (blocks.length > 0) await recordAttempt(deps.redis, deps.redisPrefix, blocks, clientAddress(ip)?.toString()).catch(() => {});
  if ((await canonicalEmailBlocksMatching(deps.db, email)).length > 0) errors.push({ error: 'ERR_TAKEN', description: 'is already taken' });
  return errors;
}
