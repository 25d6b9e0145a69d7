import { domainToASCII } from 'node:url';
import type { RedisClient } from '../storage/redis.ts';
import type { Config } from '../config.ts';
import type { Db } from '../storage/db.ts';
import type { KeyTracking } from '../storage/key-tracking.ts';
import { domainAllowRuleFor, domainBlockRuleFor, type DomainBlockRow } from '../storage/instance-domain-blocks.ts';

/**
 * What this server's instance-wide domain blocks and allows say about another server (Mastodon's DomainBlock.rule_for
 * and domain_not_allowed?), asked on every inbox POST, delivery and remote fetch, so answered from memory: each
 * process keeps the rules it has looked up (by domain, at most MAX_ENTRIES) and drops them all when the version key
 * in Redis changes. That key is read under client tracking (storage/key-tracking.ts) when it is on, so a change made by
 * any process (the admin API, the CLI) reaches every process's memory without a read per question; without tracking,
 * the key is read on each question (one GET).
 */
const MAX_ENTRIES = 10_000;

interface Entry {
  block: DomainBlockRow | null;
  /** Looked up only in limited federation mode. */
  allowed?: boolean;
}

export function domainPolicyVersionKey(redisPrefix: string): string {
  return `${redisPrefix}domain-policy:version`;
}

/** Tells every process that blocks or allows changed (from anywhere that has Redis: the CLI too). */
export async function publishDomainPolicyChange(redis: RedisClient, redisPrefix: string): Promise<void> {
  await redis.incr(domainPolicyVersionKey(redisPrefix));
}

/**
 * A domain as Mastodon stores it (DomainNormalizable): trimmed, without a trailing dot, lower case, an IDN in its
 * ASCII form; a port is kept (servers on other ports are other servers, and their accounts' domains carry it). Null
 * when it is no valid host name.
 */
export function normalizeDomain(input: string): string | null {
  const match = /^([^:]*?)\.?(?::(\d{1,5}))?$/.exec(input.trim());
  if (!match || match[1] === '' || /[\s/@?#\\]/.test(match[1]!)) return null;
  const ascii = domainToASCII(match[1]!.toLowerCase());
  if (!ascii || ascii.length > 253) return null;
  const label = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
  if (!ascii.split('.').every((l) => label.test(l))) return null;
  return match[2] ? `${ascii}:${Number(match[2])}` : ascii;
}

/** The host (and port) of a URL or a bare domain, normalised; null when it has none. */
function hostOf(domainOrUrl: string): string | null {
  if (domainOrUrl.includes('://')) {
    if (!URL.canParse(domainOrUrl)) return null;
    return normalizeDomain(new URL(domainOrUrl).host);
  }
  return normalizeDomain(domainOrUrl);
}

export class DomainPolicy {
  private readonly entries = new Map<string, Entry>();
  /** Bumped whenever the entries are dropped: a lookup that started before must not store what it found. */
  private generation = 0;
  private version: string | null = null;
  /** The version was read under tracking and nothing has changed since: no need to read it again. */
  private tracked = false;
  private readonly key: string;

  private readonly db: Db;
  private readonly redis: RedisClient;
  private readonly config: Pick<Config, 'redisPrefix' | 'localDomain' | 'limitedFederationMode'>;
  private readonly tracking: KeyTracking | undefined;

  constructor(db: Db, redis: RedisClient, config: Pick<Config, 'redisPrefix' | 'localDomain' | 'limitedFederationMode'>, tracking?: KeyTracking) {
    this.db = db;
    this.redis = redis;
    this.config = config;
    this.tracking = tracking;
    this.key = domainPolicyVersionKey(config.redisPrefix);
    tracking?.onInvalidate((keys) => {
      if (keys === null || keys.includes(this.key)) this.clear();
    });
  }

  /** The block that holds for a domain (its own or the nearest one above it), or null. */
  async ruleFor(domainOrUrl: string | null | undefined): Promise<DomainBlockRow | null> {
    const domain = domainOrUrl ? hostOf(domainOrUrl) : null;
    if (!domain || domain === this.config.localDomain) return null;
    return (await this.entry(domain)).block;
  }

  /**
   * Whether nothing may be exchanged with this domain or URL's host (Mastodon's domain_not_allowed?): it is
   * suspended or, in limited federation mode, not allowed. Our own domain never is.
   */
  async refuses(domainOrUrl: string | null | undefined): Promise<boolean> {
    const domain = domainOrUrl ? hostOf(domainOrUrl) : null;
    if (!domain || domain === this.config.localDomain) return false;
    const entry = await this.entry(domain);
    if (this.config.limitedFederationMode) return !entry.allowed;
    return entry.block?.severity === 'suspend';
  }

  async rejectsMedia(domain: string | null | undefined): Promise<boolean> {
    const rule = await this.ruleFor(domain);
    return rule !== null && (rule.severity === 'suspend' || rule.reject_media);
  }

  /** Whether reports (Flags) from this server are ignored. */
  async rejectsReports(domain: string | null | undefined): Promise<boolean> {
    const rule = await this.ruleFor(domain);
    return rule !== null && (rule.severity === 'suspend' || rule.reject_reports);
  }

  /** Forgets every rule looked up (after a change here; other processes hear of it through the version key). */
  clear(): void {
    this.entries.clear();
    this.generation++;
    this.tracked = false;
  }

  private async entry(domain: string): Promise<Entry> {
    await this.current();
    const cached = this.entries.get(domain);
    if (cached) {
      this.entries.delete(domain); // most recently used last
      this.entries.set(domain, cached);
      return cached;
    }
    const generation = this.generation;
    const [block, allow] = await Promise.all([
      domainBlockRuleFor(this.db, domain),
      this.config.limitedFederationMode ? domainAllowRuleFor(this.db, domain) : Promise.resolve(null),
    ]);
    const entry: Entry = { block, ...(this.config.limitedFederationMode ? { allowed: allow !== null } : {}) };
    if (generation === this.generation) {
      this.entries.set(domain, entry);
      if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    }
    return entry;
  }

  /** Drops the entries when the version in Redis is not the one they were looked up under. */
  private async current(): Promise<void> {
    if (this.tracked && this.tracking?.active) return;
    const ticket = this.tracking?.begin();
    try {
      const version = (await (this.tracking?.reader ?? this.redis).get(this.key)) ?? '0';
      if (version !== this.version) {
        this.clear();
        this.version = version;
      }
      this.tracked = ticket !== undefined && this.tracking!.unchanged(ticket, [this.key]);
    } finally {
      if (ticket) this.tracking!.end(ticket);
    }
  }
}

const policies = new WeakMap<object, DomainPolicy>();

/** The process's policy for a context (one per context: tests run several servers in one process). */
export function domainPolicy(ctx: { db: Db; redis: RedisClient; config: Config; tracking?: KeyTracking }): DomainPolicy {
  let policy = policies.get(ctx);
  if (!policy) {
    policy = new DomainPolicy(ctx.db, ctx.redis, ctx.config, ctx.tracking);
    policies.set(ctx, policy);
  }
  return policy;
}

/** Mastodon's public_domain: the middle of an obfuscated domain starred, dots kept. */
export function obfuscatedDomain(domain: string): string {
  const chars = [...domain];
  const visible = Math.floor(chars.length / 4);
  return chars.map((c, i) => (i > visible && i < chars.length - visible && c !== '.' ? '*' : c)).join('');
}
