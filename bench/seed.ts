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

/** Creates `count` remote accounts on ten servers, followed by the local account `followerId`; returns their ids. */
export async function seedRemoteAuthors(db: Db, count: number, prefix: string, followerId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO accounts (username, domain, uri, inbox_url, fetched_at)
     SELECT $1 || g, $1 || (g % 10) || '.bench.example', 'https://' || $1 || (g % 10) || '.bench.example/users/' || $1 || g,
            'https://' || $1 || (g % 10) || '.bench.example/users/' || $1 || g || '/inbox', now()
       FROM generate_series(1, $2) g RETURNING id`,
    [prefix, count],
  );
  const ids = rows.map((r) => r.id);
  await db.query(`INSERT INTO follows (account_id, target_account_id) SELECT $2, unnest($1::bigint[])`, [ids, followerId]);
  await db.query(`UPDATE accounts SET followers_count = followers_count + 1 WHERE id = ANY($1::bigint[])`, [ids]);
  await db.query(`UPDATE accounts SET following_count = following_count + $2 WHERE id = $1`, [followerId, ids.length]);
  return ids;
}

/**
 * Old posts of remote `authors` (round robin), published and received `daysOld` days ago: `posts` of them with a tag each, one in
 * ten mentioning another of the authors, one in twenty with an image attachment whose original and small files are
 * written under `filesRoot`, one in a hundred with a poll; then `kept` more that `keptBy` favourited.
 */
export async function seedOldRemotePosts(
  db: Db, o: { authors: string[]; posts: number; kept: number; keptBy: string; daysOld: number; filesRoot: string },
): Promise<{ media: number; files: number; polls: number; mentions: number }> {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  // Ids as they would have been given when the posts arrived, `daysOld` days ago (ids are times: storage/ids.ts),
  // so the posts sit where such posts sit in feeds and timelines: behind everything newer.
  const insert = async (count: number, shift: number) => (await db.query<{ id: string }>(
    `INSERT INTO statuses (id, account_id, visibility, uri, url, text, content, created_at, updated_at)
     SELECT (floor(extract(epoch FROM t) * 1000)::bigint << 16) | (g & 65535), a.id, 'public', a.uri || '/statuses/' || g || '-' || $4, a.uri || '/statuses/' || g || '-' || $4, '',
            '<p>An old post, number ' || g || ', about <a href="https://x.example/tags/archive">#archive</a> and other things worth a sentence or two.</p>',
            t, t
       FROM generate_series(1, $2) g
       CROSS JOIN LATERAL (SELECT now() - make_interval(days => $3) + (g + $5) * interval '1 second' AS t) c
       JOIN (SELECT id, uri, row_number() OVER (ORDER BY id) - 1 AS n FROM accounts WHERE id = ANY($1::bigint[])) a ON a.n = g % cardinality($1::bigint[])
     RETURNING id::text`,
    [o.authors, count, o.daysOld, Math.random().toString(36).slice(2, 8), shift],
  )).rows.map((r) => r.id);
  const ids = await insert(o.posts, 0);
  const { rows: [tag] } = await db.query<{ id: string }>(`INSERT INTO tags (name) VALUES ('archive') ON CONFLICT (lower(name)) DO UPDATE SET name = EXCLUDED.name RETURNING id::text`);
  await db.query(`INSERT INTO statuses_tags (status_id, tag_id) SELECT unnest($1::bigint[]), $2`, [ids, tag!.id]);
  const mentions = await db.query(
    `INSERT INTO mentions (status_id, account_id) SELECT s, ($2::bigint[])[1 + (i % cardinality($2::bigint[]))]
       FROM unnest($1::bigint[]) WITH ORDINALITY AS t(s, i) WHERE i % 10 = 0`, [ids, o.authors],
  );
  const polls = await db.query(
    `INSERT INTO polls (status_id, account_id, options, cached_tallies, expires_at)
     SELECT s.id, s.account_id, ARRAY['yes', 'no'], ARRAY[3, 4], s.created_at + interval '1 day'
       FROM statuses s JOIN unnest($1::bigint[]) WITH ORDINALITY AS t(id, i) ON t.id = s.id WHERE t.i % 100 = 0`, [ids],
  );
  const { rows: media } = await db.query<{ id: string }>(
    `INSERT INTO media_attachments (account_id, status_id, type, state, remote_url, original_type, small_type)
     SELECT s.account_id, s.id, 'image', 'ready', 'https://files.bench.example/' || s.id || '.jpg', 'image/jpeg', 'image/webp'
       FROM statuses s JOIN unnest($1::bigint[]) WITH ORDINALITY AS t(id, i) ON t.id = s.id WHERE t.i % 20 = 0
     RETURNING id::text`, [ids],
  );
  await db.query(
    `UPDATE media_attachments SET original_key = 'cache/media/' || id || '/original.jpg', small_key = 'cache/media/' || id || '/small.webp' WHERE id = ANY($1::bigint[])`,
    [media.map((m) => m.id)],
  );
  const bytes = Buffer.alloc(300, 7);
  for (const m of media) {
    const dir = join(o.filesRoot, 'cache', 'media', m.id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'original.jpg'), bytes);
    writeFileSync(join(dir, 'small.webp'), bytes);
  }
  const kept = await insert(o.kept, o.posts);
  await db.query(`INSERT INTO favourites (account_id, status_id) SELECT $2, unnest($1::bigint[])`, [kept, o.keptBy]);
  await db.query(`UPDATE statuses SET favourites_count = 1 WHERE id = ANY($1::bigint[])`, [kept]);
  await db.query(
    `UPDATE accounts a SET statuses_count = statuses_count + c.n FROM (SELECT account_id, count(*)::int AS n FROM statuses WHERE id = ANY($1::bigint[]) GROUP BY 1) c WHERE a.id = c.account_id`,
    [[...ids, ...kept]],
  );
  await db.query(`ANALYZE`);
  return { media: media.length, files: media.length * 2, polls: polls.rowCount ?? 0, mentions: mentions.rowCount ?? 0 };
}
