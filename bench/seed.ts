// Synthetic data for benchmarks only: bulk rows straight into the tables, far faster than the API for 10,000 accounts.
import type { Db } from '../storage/db.ts';

/** Creates `count` local accounts (no users, no keys) following `targetId`; returns their ids. */
export async function seedFollowers(db: Db, targetId: string, count: number, prefix: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO accounts (username) SELECT $1 || g FROM generate_series(1, $2) g RETURNING id`, [prefix, count],
  );
  const ids = rows.map((r) => r.id);
  await db.query(
    `INSERT INTO follows (account_id, target_account_id) SELECT unnest($1::bigint[]), $2`, [ids, targetId],
  );
  await db.query(`UPDATE accounts SET followers_count = followers_count + $2 WHERE id = $1`, [targetId, count]);
  return ids;
}

/** A remote follower as the benchmark's receiving servers host it. */
export interface RemoteFollower {
  username: string;
  domain: string;
  inbox: string;
  sharedInbox: string | null;
}

/** Creates remote accounts following `targetId`, with the inboxes given. */
export async function seedRemoteFollowers(db: Db, targetId: string, followers: RemoteFollower[]): Promise<void> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO accounts (username, domain, uri, inbox_url, shared_inbox_url, fetched_at)
     SELECT u, d, 'http://' || d || '/users/' || u, i, s, now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS f(u, d, i, s)
     RETURNING id`,
    [followers.map((f) => f.username), followers.map((f) => f.domain), followers.map((f) => f.inbox), followers.map((f) => f.sharedInbox)],
  );
  await db.query(`INSERT INTO follows (account_id, target_account_id) SELECT unnest($1::bigint[]), $2`, [rows.map((r) => r.id), targetId]);
  await db.query(`UPDATE accounts SET followers_count = followers_count + $2 WHERE id = $1`, [targetId, rows.length]);
}
