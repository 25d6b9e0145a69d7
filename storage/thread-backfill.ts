import type { Queryable } from './db.ts';

/**
 * What fetching a remote thread's missing posts writes (services/thread-backfill.ts, federation/thread-backfill.ts):
 * when a status's replies were last fetched (its cooldown), and a status joined to the parent it names once that
 * parent is here.
 */

/**
 * Records that a status's replies are being fetched now, unless they were fetched less than `cooldownMinutes` ago
 * (Mastodon's `fetched_replies_at` and its cooldown). True when this call took it: of two requests at once, one.
 */
export async function claimReplyFetch(db: Queryable, statusId: string, cooldownMinutes: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO status_reply_fetches (status_id) VALUES ($1)
     ON CONFLICT (status_id) DO UPDATE SET fetched_at = now()
       WHERE status_reply_fetches.fetched_at <= now() - make_interval(mins => $2)
     RETURNING 1`,
    [statusId, cooldownMinutes],
  );
  return rowCount === 1;
}

/** When a status's replies were last fetched, or null when never. */
export async function repliesFetchedAt(db: Queryable, statusId: string): Promise<Date | null> {
  const { rows } = await db.query<{ fetched_at: Date }>(`SELECT fetched_at FROM status_reply_fetches WHERE status_id = $1`, [statusId]);
  return rows[0]?.fetched_at ?? null;
}

/**
 * The topmost status of a status's chain of parents here, at most `maxDepth` levels up, with how far up it is. Its
 * `in_reply_to_id` is set only when the chain goes on past `maxDepth`.
 */
export async function topmostAncestor(db: Queryable, statusId: string, maxDepth: number): Promise<{ id: string; uri: string | null; in_reply_to_id: string | null; depth: number } | null> {
  const { rows } = await db.query<{ id: string; uri: string | null; in_reply_to_id: string | null; depth: number }>(
    `WITH RECURSIVE up(id, parent, depth) AS (
       SELECT id, in_reply_to_id, 0 FROM statuses WHERE id = $1
       UNION ALL
       SELECT s.id, s.in_reply_to_id, up.depth + 1 FROM statuses s JOIN up ON s.id = up.parent WHERE up.depth < $2
     )
     SELECT s.id, s.uri, s.in_reply_to_id, up.depth FROM up JOIN statuses s ON s.id = up.id ORDER BY up.depth DESC LIMIT 1`,
    [statusId, maxDepth],
  );
  return rows[0] ?? null;
}

/**
 * Makes `childId` a reply to `parentId` (Mastodon's ThreadResolveWorker: a reply that came before its parent), moving
 * the parent's reply count. Nothing is written when the child already has a parent, either is a reblog, or the
 * parent is below the child in the thread (a loop). True when it was joined.
 */
export async function attachToParent(db: Queryable, childId: string, parentId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH RECURSIVE above(id, depth) AS (
       SELECT $2::bigint, 0
       UNION ALL
       SELECT s.in_reply_to_id, above.depth + 1 FROM statuses s JOIN above ON s.id = above.id
        WHERE s.in_reply_to_id IS NOT NULL AND above.depth < 256
     ),
     joined AS (
       UPDATE statuses c SET in_reply_to_id = p.id, in_reply_to_account_id = p.account_id
         FROM statuses p
        WHERE c.id = $1 AND p.id = $2 AND c.in_reply_to_id IS NULL AND c.reblog_of_id IS NULL AND p.reblog_of_id IS NULL
          AND NOT EXISTS (SELECT 1 FROM above WHERE above.id = $1)
       RETURNING c.id
     )
     UPDATE statuses SET replies_count = replies_count + 1 WHERE id = $2 AND EXISTS (SELECT 1 FROM joined) RETURNING id`,
    [childId, parentId],
  );
  return rowCount === 1;
}
