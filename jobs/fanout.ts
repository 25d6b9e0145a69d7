import type { Db } from '../storage/db.ts';
import type { HomeFeeds } from '../storage/feeds.ts';
import { findStatus } from '../storage/statuses.ts';
import { localFollowersBatch, whoFollow } from '../storage/follows.ts';

const BATCH = 1000;

/**
 * Puts a new status into the home feeds of the author's local followers (DESIGN.md, "The flow of a post"),
 * a thousand followers per query and one Redis round trip per batch. Feeds not built are skipped: they are
 * rebuilt from PostgreSQL when next read. ZADD is idempotent, so a retried job does no harm.
 */
export async function fanOutStatus(db: Db, feeds: HomeFeeds, statusId: string): Promise<number> {
  const status = await findStatus(db, statusId);
  if (!status) return 0;
  let delivered = 0;
  if (status.visibility === 'direct') {
    // Direct statuses reach the home feeds of mentioned accounts that follow the author.
    const { rows } = await db.query<{ account_id: string }>(`SELECT account_id FROM mentions WHERE status_id = $1`, [statusId]);
    const followers = await whoFollow(db, rows.map((r) => r.account_id), status.account_id);
    const ready = await feeds.readyAmong([...followers]);
    await feeds.addToMany(ready, statusId);
    return ready.length;
  }
  // A reply to someone else reaches only followers who follow that someone too, as in Mastodon.
  const replyToOther = status.in_reply_to_account_id && status.in_reply_to_account_id !== status.account_id ? status.in_reply_to_account_id : null;
  let after = '0';
  for (;;) {
    const batch = await localFollowersBatch(db, status.account_id, after, BATCH);
    if (batch.length === 0) break;
    after = batch.at(-1)!.followId;
    let targets = batch.filter((f) => !status.reblog_of_id || f.showReblogs).map((f) => f.accountId);
    if (replyToOther) {
      const alsoFollow = await whoFollow(db, targets, replyToOther);
      targets = targets.filter((id) => alsoFollow.has(id) || id === replyToOther);
    }
    const ready = await feeds.readyAmong(targets);
    await feeds.addToMany(ready, statusId);
    delivered += ready.length;
    if (batch.length < BATCH) break;
  }
  return delivered;
}

/** Takes a deleted status (and its reblogs) out of every local feed it may be in. */
export async function removeStatusFromFeeds(db: Db, feeds: HomeFeeds, statusIds: string[], authorId: string, mentionedIds: string[]): Promise<void> {
  await feeds.remove([authorId, ...mentionedIds], statusIds);
  let after = '0';
  for (;;) {
    const batch = await localFollowersBatch(db, authorId, after, BATCH);
    if (batch.length === 0) break;
    after = batch.at(-1)!.followId;
    await feeds.remove(batch.map((f) => f.accountId), statusIds);
    if (batch.length < BATCH) break;
  }
}
