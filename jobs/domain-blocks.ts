import type { Db } from '../storage/db.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import {
  findDomainBlockByDomain, rejectDomainMediaBatch, suspendDomainAccountsBatch, unsuspendDomainAccountsBatch,
} from '../storage/instance-domain-blocks.ts';

/** Accounts changed per statement: each batch is its own short transaction, followed by its cache-version bumps. */
const BATCH = 500;

export interface DomainBlockOutcome {
  suspended: number;
  unsuspended: number;
  mediaRejected: number;
}

/**
 * Brings a domain's stored accounts in line with the block made at `createdAt` (Mastodon's BlockDomainService and
 * UnblockDomainService), whatever happened to it since the job was queued: while it stands and suspends, the
 * domain's accounts (subdomains too) that are not suspended are suspended with the block's timestamp; once it is
 * lifted or no longer suspends, the accounts carrying that timestamp are unsuspended, and no others. With reject_media,
 * their avatars, headers and attachments stop being shown inline. Every changed account and status has its cache
 * version bumped, so rendered statuses and pages that show them are made again (a suspended author's statuses vanish).
 * Idempotent: running it twice changes nothing more.
 */
export async function applyDomainBlock(deps: { db: Db; versions: CacheVersions }, domain: string, createdAt: string): Promise<DomainBlockOutcome> {
  const at = new Date(createdAt);
  const block = await findDomainBlockByDomain(deps.db, domain);
  const standing = block && block.created_at.getTime() === at.getTime() ? block : null;
  const outcome: DomainBlockOutcome = { suspended: 0, unsuspended: 0, mediaRejected: 0 };
  const batches = async (step: () => Promise<string[]>) => {
    let total = 0;
    for (;;) {
      const ids = await step();
      if (ids.length > 0) await deps.versions.bump({ accounts: ids });
      total += ids.length;
      if (ids.length < BATCH) return total;
    }
  };
  if (standing?.severity === 'suspend') {
    outcome.suspended = await batches(() => suspendDomainAccountsBatch(deps.db, domain, at, BATCH));
  } else {
    outcome.unsuspended = await batches(() => unsuspendDomainAccountsBatch(deps.db, domain, at, BATCH));
  }
  if (standing?.reject_media) {
    for (;;) {
      const changed = await rejectDomainMediaBatch(deps.db, domain, BATCH);
      await deps.versions.bump({ accounts: changed.accounts, statuses: changed.statuses });
      outcome.mediaRejected += changed.accounts.length + changed.attachments;
      if (changed.accounts.length < BATCH && changed.attachments < BATCH) break;
    }
  }
  return outcome;
}
