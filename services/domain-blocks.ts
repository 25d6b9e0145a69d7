import type { RedisClient } from '../storage/redis.ts';
import { ApiError } from '../errors.ts';
import { transaction, type Db, type Queryable } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import {
  deleteDomainAllow as deleteAllowRow, deleteDomainBlock as deleteBlockRow, domainBlockRuleFor, findDomainAllowByDomain,
  findDomainBlock, findDomainBlockByDomain, insertDomainAllow, insertDomainBlock, updateDomainBlock as updateBlockRow,
  type DomainAllowRow, type DomainBlockFields, type DomainBlockRow, type DomainSeverity,
} from '../storage/instance-domain-blocks.ts';
import { normalizeDomain, publishDomainPolicyChange } from './domain-policy.ts';
import { logAction, type ActionName, type Actor } from './action-log.ts';

/**
 * The operator's instance-wide domain blocks and allows, as the admin API and the CLI make them. A change is told to
 * every process (the policy version in Redis) and queues, through the outbox of its transaction, the job that
 * suspends or unsuspends the domain's accounts (jobs/domain-blocks.ts).
 */
export interface DomainAdminDeps {
  db: Db;
  redis: RedisClient;
  redisPrefix: string;
  /** Queues an outbox row's job after the commit (the CLI runs it there and then). */
  enqueue: (row: OutboxRow) => Promise<void>;
  /** Called after a change is committed (the process's own policy cache is dropped at once). */
  changed?: () => void;
}

export const DOMAIN_BLOCK_JOB = 'domainBlock';
export const SEVERITIES: readonly DomainSeverity[] = ['silence', 'suspend', 'noop'];
/** Comments are kept to a paragraph or two. */
export const COMMENT_LIMIT = 1000;

export type DomainBlockInput = Partial<DomainBlockFields>;

/** The domain, normalised, or Mastodon's 422s for a blank or malformed one. */
export function validDomain(input: string | undefined | null): string {
  if (input === undefined || input === null || input.trim() === '') throw new ApiError(422, "Validation failed: Domain can't be blank");
  const domain = normalizeDomain(input);
  if (!domain) throw new ApiError(422, 'Validation failed: Domain is not a valid domain name');
  return domain;
}

function fields(base: DomainBlockFields, input: DomainBlockInput): DomainBlockFields {
  const f = { ...base };
  if (input.severity !== undefined) f.severity = input.severity;
  if (input.reject_media !== undefined) f.reject_media = input.reject_media;
  if (input.reject_reports !== undefined) f.reject_reports = input.reject_reports;
  if (input.obfuscate !== undefined) f.obfuscate = input.obfuscate;
  // An empty comment is no comment.
  if (input.private_comment !== undefined) f.private_comment = input.private_comment?.trim() || null;
  if (input.public_comment !== undefined) f.public_comment = input.public_comment?.trim() || null;
  if (!SEVERITIES.includes(f.severity)) throw new ApiError(422, `Validation failed: Severity is not included in the list`);
  for (const [name, value] of [['Private comment', f.private_comment], ['Public comment', f.public_comment]] as const) {
    if (value && [...value].length > COMMENT_LIMIT) throw new ApiError(422, `Validation failed: ${name} is too long (maximum is ${COMMENT_LIMIT} characters)`);
  }
  return f;
}

const DEFAULTS: DomainBlockFields = {
  severity: 'silence', reject_media: false, reject_reports: false, private_comment: null, public_comment: null, obfuscate: false,
};

async function afterChange(deps: DomainAdminDeps, row: OutboxRow | null): Promise<void> {
  deps.changed?.();
  await publishDomainPolicyChange(deps.redis, deps.redisPrefix);
  deps.changed?.();
  if (row) await deps.enqueue(row);
}

/** Writes a change with the outbox row of the job that applies it to the domain's accounts, and its audit log entry. */
async function withJob<T extends DomainBlockRow | null>(deps: DomainAdminDeps, log: { by: Actor | undefined; action: ActionName }, write: (tx: Queryable) => Promise<T>): Promise<T> {
  const { value, row } = await transaction(deps.db, async (tx) => {
    const value = await write(tx);
    if (value) await logAction(tx, log.by, log.action, { type: 'DomainBlock', id: log.action === 'destroy' ? null : value.id, name: value.domain });
    const row = value ? await addToOutbox(tx, DOMAIN_BLOCK_JOB, { domain: value.domain, createdAt: value.created_at.toISOString() }) : null;
    return { value, row };
  });
  if (value) await afterChange(deps, row);
  return value;
}

/**
 * A new block; `{ existing }` when a block on the domain or on a domain above it already holds (Mastodon answers 422
 * with it), as when two operators block the same domain at once.
 */
export async function createDomainBlock(deps: DomainAdminDeps, domainInput: string | undefined, input: DomainBlockInput, by?: Actor): Promise<{ block: DomainBlockRow } | { existing: DomainBlockRow }> {
  const domain = validDomain(domainInput);
  const f = fields(DEFAULTS, input);
  const existing = await domainBlockRuleFor(deps.db, domain);
  if (existing) return { existing };
  const block = await withJob(deps, { by, action: 'create' }, (tx) => insertDomainBlock(tx, domain, f));
  if (block) return { block };
  const raced = await findDomainBlockByDomain(deps.db, domain);
  if (!raced) throw new ApiError(422, 'Validation failed: Domain has already been taken');
  return { existing: raced };
}

/** Changes what is given, keeps the rest; null when there is no such block. */
export async function updateDomainBlock(deps: DomainAdminDeps, id: string, input: DomainBlockInput, by?: Actor): Promise<DomainBlockRow | null> {
  const current = await findDomainBlock(deps.db, id);
  if (!current) return null;
  const f = fields(current, input);
  return withJob(deps, { by, action: 'update' }, (tx) => updateBlockRow(tx, id, f));
}

/** Lifts a block (its suspensions are lifted by the job); null when there is no such block. */
export async function deleteDomainBlock(deps: DomainAdminDeps, id: string, by?: Actor): Promise<DomainBlockRow | null> {
  return withJob(deps, { by, action: 'destroy' }, (tx) => deleteBlockRow(tx, id));
}

/** Allows a domain; an allow that exists is returned as it is (Mastodon's find_by, else create!). */
export async function createDomainAllow(deps: DomainAdminDeps, domainInput: string | undefined, by?: Actor): Promise<DomainAllowRow> {
  const domain = validDomain(domainInput);
  const known = await findDomainAllowByDomain(deps.db, domain);
  if (known) return known;
  const allow = await transaction(deps.db, async (tx) => {
    const allow = await insertDomainAllow(tx, domain);
    await logAction(tx, by, 'create', { type: 'DomainAllow', id: allow.id, name: allow.domain });
    return allow;
  });
  await afterChange(deps, null);
  return allow;
}

export async function deleteDomainAllow(deps: DomainAdminDeps, id: string, by?: Actor): Promise<DomainAllowRow | null> {
  const allow = await transaction(deps.db, async (tx) => {
    const allow = await deleteAllowRow(tx, id);
    if (allow) await logAction(tx, by, 'destroy', { type: 'DomainAllow', id: null, name: allow.domain });
    return allow;
  });
  if (allow) await afterChange(deps, null);
  return allow;
}
