import type { Queryable } from './db.ts';
import type { OutboxRow } from './outbox.ts';
import type { LocalFollower } from './follows.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';
import { notSilencedSql } from './instance-domain-blocks.ts';

export type Visibility = 'public' | 'unlisted' | 'private' | 'direct';

export interface StatusRow {
  id: string;
  account_id: string;
  uri: string | null;
  url: string | null;
  text: string;
  content: string;
  spoiler_text: string;
  sensitive: boolean;
  visibility: Visibility;
  language: string | null;
  in_reply_to_id: string | null;
  in_reply_to_account_id: string | null;
  reblog_of_id: string | null;
  application_id: string | null;
  replies_count: number;
  reblogs_count: number;
  favourites_count: number;
  deleted_at: Date | null;
  edited_at: Date | null;
  created_at: Date;
  /** Who may quote it: 'public', 'followers' or 'nobody' (absent on rows made in memory: public). */
  quote_approval_policy?: string;
  /** Accepted quotes of it. */
  quotes_count?: number;
}

const COLUMNS = `id, account_id, uri, url, text, content, spoiler_text, sensitive, visibility, language,
  in_reply_to_id, in_reply_to_account_id, reblog_of_id, application_id, replies_count, reblogs_count,
  favourites_count, deleted_at, edited_at, created_at, quote_approval_policy, quotes_count`;

export interface NewStatus {
  accountId: string;
  text: string;
  content: string;
  spoilerText: string;
  sensitive: boolean;
  visibility: Visibility;
  language: string | null;
  inReplyToId: string | null;
  inReplyToAccountId: string | null;
  reblogOfId: string | null;
  applicationId: string | null;
  /** Remote statuses: their ActivityPub id and page; local ones derive both. */
  uri?: string | null;
  url?: string | null;
  createdAt?: Date | null;
}

/**
 * Inserts a status and moves the counters it affects, in the caller's transaction; with `countLater`, the caller
 * moves them itself (countNewStatus) at the end of its transaction.
 */
export async function insertStatus(db: Queryable, s: NewStatus, options: { countLater?: boolean } = {}): Promise<StatusRow> {
  const { rows } = await db.query<StatusRow>(
    `INSERT INTO statuses (account_id, text, content, spoiler_text, sensitive, visibility, language,
                           in_reply_to_id, in_reply_to_account_id, reblog_of_id, application_id, uri, url, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, coalesce($14, now())) RETURNING ${COLUMNS}`,
    [s.accountId, s.text, s.content, s.spoilerText, s.sensitive, s.visibility, s.language, s.inReplyToId, s.inReplyToAccountId, s.reblogOfId, s.applicationId,
      s.uri ?? null, s.url ?? null, s.createdAt ?? null],
  );
  const status = rows[0]!;
  if (!options.countLater) await countNewStatus(db, s);
  return status;
}

/**
 * The counters a new status moves: its author's, and its parent's or boosted post's. Each locks that row until the
 * transaction ends, so a transaction that does more after inserting its status moves them last: statuses of one
 * author arriving together (another server delivering several at once) then wait for each other only that long.
 */
export async function countNewStatus(db: Queryable, s: Pick<NewStatus, 'accountId' | 'inReplyToId' | 'reblogOfId'>): Promise<void> {
  await db.query(`UPDATE accounts SET statuses_count = statuses_count + 1, last_status_at = now() WHERE id = $1`, [s.accountId]);
  if (s.inReplyToId) await db.query(`UPDATE statuses SET replies_count = replies_count + 1 WHERE id = $1`, [s.inReplyToId]);
  if (s.reblogOfId) await db.query(`UPDATE statuses SET reblogs_count = reblogs_count + 1 WHERE id = $1`, [s.reblogOfId]);
}

/** What a new local post writes beside its row, in the same statement (storage/statuses.ts insertPost). */
export interface PostExtras {
  /** Absent visibility: the author's default (users.default_privacy), else public. */
  visibility: Visibility | null;
  idempotencyKey: string | null;
  /** Who may quote it; absent: the author's default (users.default_quote_policy). Private and direct posts: nobody. */
  quotePolicy?: string | null;
  mentionIds: string[];
  /** Tag ids, from `tagIds`. */
  tagIds: string[];
  /**
   * Outbox rows to write with it; each payload gets the new status's id as `statusId`. `remoteOnly`: only when some
   * other server has to hear of it (a remote follower, unless direct; a remote account mentioned or answered; a relay
   * accepted our subscription, for a public post), so
   * that a post nobody elsewhere follows queues no delivery job at all.
   */
  outbox: { kind: string; payload: Record<string, unknown>; remoteOnly?: boolean }[];
  /** A stored card to show at once (its link's), attached in the same statement: no link-card job is queued for it. */
  card?: { id: string; url: string } | null;
}

/**
 * A local post in one statement: its row, the author's counters, the parent's reply count, its mentions and tags,
 * its idempotency key and its outbox rows (services/statuses.ts runs it in a transaction, with what else a post
 * writes: media, a poll, notifications).
 * Null when the idempotency key is already held by a live claim (a racing twin won): nothing was written.
 */
export async function insertPost(db: Queryable, s: Omit<NewStatus, 'visibility' | 'reblogOfId' | 'uri' | 'url' | 'createdAt'>, x: PostExtras): Promise<{ status: StatusRow; outbox: OutboxRow[] } | null> {
  // Named, so that each connection parses and plans it once (planning it took PostgreSQL about 1 ms a post).
  const { rows } = await db.query<StatusRow & { outbox: OutboxRow[] | null }>({
    name: 'insert-post',
    text: `WITH new AS (SELECT timestamp_id() AS id),
     claim AS (
       INSERT INTO idempotency_keys (account_id, key, status_id) SELECT $1, $11, id FROM new WHERE $11::text IS NOT NULL
       ON CONFLICT (account_id, key) DO UPDATE SET status_id = EXCLUDED.status_id, created_at = now()
         WHERE idempotency_keys.created_at <= now() - interval '1 hour'
       RETURNING 1),
     status AS (
       INSERT INTO statuses (id, account_id, text, content, spoiler_text, sensitive, visibility, language,
                             in_reply_to_id, in_reply_to_account_id, application_id, quote_approval_policy)
       SELECT id, $1, $2, $3, $4, $5, v.visibility, $7, $8, $9, $10,
              CASE WHEN v.visibility IN ('private', 'direct') THEN 'nobody'
                   ELSE coalesce($17::text, (SELECT default_quote_policy FROM users WHERE account_id = $1), 'public') END
         FROM new, (SELECT coalesce($6::text, (SELECT default_privacy FROM users WHERE account_id = $1), 'public') AS visibility) v WHERE $11::text IS NULL OR EXISTS (SELECT 1 FROM claim)
       RETURNING ${COLUMNS}),
     author AS (UPDATE accounts SET statuses_count = statuses_count + 1, last_status_at = now() WHERE id = $1 AND EXISTS (SELECT 1 FROM status)),
     parent AS (UPDATE statuses SET replies_count = replies_count + 1 WHERE id = $8 AND EXISTS (SELECT 1 FROM status)),
     mentioned AS (INSERT INTO mentions (status_id, account_id) SELECT status.id, m FROM status, unnest($12::bigint[]) m ON CONFLICT DO NOTHING),
     tagged AS (INSERT INTO statuses_tags (tag_id, status_id) SELECT t, status.id FROM status, unnest($13::bigint[]) t ON CONFLICT DO NOTHING),
     remote AS (
       SELECT (status.visibility <> 'direct'
                AND EXISTS (SELECT 1 FROM follows f WHERE f.target_account_id = $1 AND NOT f.follower_local))
           OR EXISTS (SELECT 1 FROM accounts a WHERE (a.id = ANY($12::bigint[]) OR a.id = $9) AND a.domain IS NOT NULL)
           OR (status.visibility = 'public' AND EXISTS (SELECT 1 FROM relays r WHERE r.state = 'accepted')) AS audience
         FROM status),
     queued AS (
       INSERT INTO outbox (kind, payload)
       SELECT o.kind, o.payload || jsonb_build_object('statusId', status.id::text)
         FROM status, remote, unnest($14::text[], $15::jsonb[], $16::boolean[]) WITH ORDINALITY AS o(kind, payload, remote_only, n)
        WHERE NOT o.remote_only OR remote.audience
       ORDER BY o.n
       RETURNING id, kind, payload),
     -- Operators' webhooks that want status.created (services/webhooks.ts): one delivery each, in this statement
     -- (a scan of a table of a handful of rows; nothing when there is none).
     hooked AS (
       INSERT INTO outbox (kind, payload)
       SELECT 'deliverWebhook', jsonb_build_object('webhookId', w.id::text, 'event', 'status.created', 'objectId', status.id::text,
              'createdAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
         FROM status, webhooks w WHERE w.enabled AND 'status.created' = ANY (w.events)
       RETURNING id, kind, payload),
     carded AS (
       INSERT INTO preview_cards_statuses (status_id, preview_card_id, url, without_image)
       SELECT status.id, $18, $19, false FROM status WHERE $18::bigint IS NOT NULL)
     SELECT status.*, (SELECT json_agg(json_build_object('id', q.id::text, 'kind', q.kind, 'payload', q.payload) ORDER BY q.id)
                       FROM (SELECT * FROM queued UNION ALL SELECT * FROM hooked) q) AS outbox FROM status`,
    values: [s.accountId, s.text, s.content, s.spoilerText, s.sensitive, x.visibility, s.language, s.inReplyToId, s.inReplyToAccountId, s.applicationId,
      x.idempotencyKey, x.mentionIds, x.tagIds, x.outbox.map((o) => o.kind), x.outbox.map((o) => JSON.stringify(o.payload)), x.outbox.map((o) => o.remoteOnly === true), x.quotePolicy ?? null,
      x.card?.id ?? null, x.card?.url ?? null],
  });
  const row = rows[0];
  if (!row) return null;
  const { outbox, ...status } = row;
  return { status, outbox: outbox ?? [] };
}

/** Tag ids never change once made; each pool (one database) remembers those it has seen, a few thousand at most. */
const knownTags = new WeakMap<object, Map<string, string>>();
const KNOWN_TAGS_MAX = 5000;

/** The ids of these tags (names as written; matched without case), made if new. Mostly answered from memory. */
export async function tagIds(db: Queryable, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  let known = knownTags.get(db);
  if (!known) knownTags.set(db, (known = new Map()));
  const lower = [...new Set(names.map((n) => n.toLowerCase()))];
  const missing = lower.filter((n) => !known.has(n));
  if (missing.length > 0) {
    const original = new Map(names.map((n) => [n.toLowerCase(), n]));
    // Made in a statement of their own (a tag without statuses is harmless), so that the post's stays one statement.
    await db.query(`INSERT INTO tags (name) SELECT unnest($1::text[]) ON CONFLICT (lower(name)) DO NOTHING`, [missing.map((n) => original.get(n)!)]);
    const { rows } = await db.query<{ id: string; name: string }>(`SELECT id, lower(name) AS name FROM tags WHERE lower(name) = ANY($1::text[])`, [missing]);
    if (known.size + rows.length > KNOWN_TAGS_MAX) known.clear();
    for (const r of rows) known.set(r.name, r.id);
  }
  return lower.map((n) => known.get(n)).filter((id): id is string => id !== undefined);
}

/** Flags a status deleted (the row stays for threads and federation) and moves its counters back. */
export async function markStatusDeleted(db: Queryable, status: StatusRow): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE statuses SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL`, [status.id]);
  if (rowCount !== 1) return false;
  await db.query(`UPDATE accounts SET statuses_count = greatest(statuses_count - 1, 0) WHERE id = $1`, [status.account_id]);
  if (status.in_reply_to_id) await db.query(`UPDATE statuses SET replies_count = greatest(replies_count - 1, 0) WHERE id = $1`, [status.in_reply_to_id]);
  if (status.reblog_of_id) await db.query(`UPDATE statuses SET reblogs_count = greatest(reblogs_count - 1, 0) WHERE id = $1`, [status.reblog_of_id]);
  return true;
}

/** A status row whether deleted or not: only for telling other servers of a deletion (never rendered). */
export async function findStatusRecord(db: Queryable, id: string): Promise<StatusRow | null> {
  const { rows } = await db.query<StatusRow>(`SELECT ${COLUMNS} FROM statuses WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** A live (not deleted) status. */
export async function findStatus(db: Queryable, id: string): Promise<StatusRow | null> {
  const { rows } = await db.query<StatusRow>(`SELECT ${COLUMNS} FROM statuses WHERE id = $1 AND deleted_at IS NULL`, [id]);
  return rows[0] ?? null;
}

/** What fan-out needs of a status (jobs/fanout.ts), read in one query. */
export interface FanOutStatus {
  status: StatusRow;
  tagIds: string[];
  tagNames: string[];
  hasMedia: boolean;
  /** Silenced, or of a silenced server: kept off public streams and tag followers' feeds. */
  authorLimited: boolean;
  authorSuspended: boolean;
  /** Whether the author is in any list, and any local account follows one of its tags: no query for either if not. */
  inLists: boolean;
  tagFollowed: boolean;
  /** The author's first local followers in follow order (storage/follows.ts localFollowersBatch), none for a direct status. */
  firstFollowers: LocalFollower[];
}

/**
 * A live status with its tags, whether it has media, its author's standing and the first `followers` of the author's
 * local followers (the fan-out's first batch, read in the same round trip); null when deleted or unknown.
 */
export async function findStatusForFanOut(db: Queryable, id: string, followers: number): Promise<FanOutStatus | null> {
  const { rows } = await db.query<StatusRow & { tag_ids: string[]; tag_names: string[]; has_media: boolean; author_limited: boolean | null; author_suspended: boolean | null; in_lists: boolean; tag_followed: boolean; first_followers: [string, string, boolean][] | null }>({
    name: 'status-for-fan-out',
    text: `SELECT ${COLUMNS.split(',').map((c) => `s.${c.trim()}`).join(', ')},
            coalesce((SELECT array_agg(st.tag_id::text ORDER BY st.tag_id) FROM statuses_tags st WHERE st.status_id = s.id), '{}') AS tag_ids,
            coalesce((SELECT array_agg(t.name ORDER BY t.id) FROM statuses_tags st JOIN tags t ON t.id = st.tag_id WHERE st.status_id = s.id), '{}') AS tag_names,
            EXISTS (SELECT 1 FROM media_attachments m WHERE m.status_id = s.id AND m.position > 0) AS has_media,
            (SELECT a.silenced_at IS NOT NULL OR NOT ${notSilencedSql('a', 'NULL::bigint')} FROM accounts a WHERE a.id = s.account_id) AS author_limited,
            (SELECT a.suspended_at IS NOT NULL FROM accounts a WHERE a.id = s.account_id) AS author_suspended,
            EXISTS (SELECT 1 FROM list_accounts la WHERE la.account_id = s.account_id) AS in_lists,
            EXISTS (SELECT 1 FROM statuses_tags st JOIN tag_follows tf ON tf.tag_id = st.tag_id WHERE st.status_id = s.id) AS tag_followed,
            -- As JSON: parsed natively, where a bigint array is parsed a character at a time in JavaScript.
            (SELECT json_agg(json_build_array(f.id::text, f.account_id::text, f.show_reblogs) ORDER BY f.id)
               FROM (SELECT id, account_id, show_reblogs FROM follows
                      WHERE target_account_id = s.account_id AND follower_local AND s.visibility <> 'direct' ORDER BY id LIMIT $2) f) AS first_followers
       FROM statuses s WHERE s.id = $1 AND s.deleted_at IS NULL`,
    values: [id, followers],
  });
  const row = rows[0];
  if (!row) return null;
  const { tag_ids, tag_names, has_media, author_limited, author_suspended, in_lists, tag_followed, first_followers, ...status } = row;
  return {
    status, tagIds: tag_ids, tagNames: tag_names, hasMedia: has_media, authorLimited: author_limited ?? false, authorSuspended: author_suspended ?? false,
    inLists: in_lists, tagFollowed: tag_followed,
    firstFollowers: (first_followers ?? []).map(([followId, accountId, showReblogs]) => ({ followId, accountId, showReblogs })),
  };
}

/** Live statuses by id, in no particular order. */
export async function findStatusesByIds(db: Queryable, ids: string[]): Promise<StatusRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<StatusRow>(`SELECT ${COLUMNS} FROM statuses WHERE id = ANY($1::bigint[]) AND deleted_at IS NULL`, [ids]);
  return rows;
}

export async function findReblog(db: Queryable, accountId: string, statusId: string): Promise<StatusRow | null> {
  const { rows } = await db.query<StatusRow>(
    `SELECT ${COLUMNS} FROM statuses WHERE account_id = $1 AND reblog_of_id = $2 AND deleted_at IS NULL`,
    [accountId, statusId],
  );
  return rows[0] ?? null;
}

export async function insertMentions(db: Queryable, statusId: string, accountIds: string[]): Promise<void> {
  if (accountIds.length === 0) return;
  await db.query(
    `INSERT INTO mentions (status_id, account_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`,
    [statusId, accountIds],
  );
}

export async function insertTags(db: Queryable, statusId: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  await db.query(
    `INSERT INTO tags (name) SELECT unnest($1::text[]) ON CONFLICT (lower(name)) DO NOTHING`,
    [names],
  );
  await db.query(
    `INSERT INTO statuses_tags (tag_id, status_id)
     SELECT id, $1 FROM tags WHERE lower(name) = ANY($2::text[]) ON CONFLICT DO NOTHING`,
    [statusId, names.map((n) => n.toLowerCase())],
  );
}

export async function mentionsOf(db: Queryable, statusIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (statusIds.length === 0) return out;
  const { rows } = await db.query<{ status_id: string; account_id: string }>(
    `SELECT status_id, account_id FROM mentions WHERE status_id = ANY($1::bigint[])`, [statusIds],
  );
  for (const r of rows) out.set(r.status_id, [...(out.get(r.status_id) ?? []), r.account_id]);
  return out;
}

export async function tagsOf(db: Queryable, statusIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (statusIds.length === 0) return out;
  const { rows } = await db.query<{ status_id: string; name: string }>(
    `SELECT st.status_id, t.name FROM statuses_tags st JOIN tags t ON t.id = st.tag_id WHERE st.status_id = ANY($1::bigint[])`, [statusIds],
  );
  for (const r of rows) out.set(r.status_id, [...(out.get(r.status_id) ?? []), r.name]);
  return out;
}

/** What the viewer did to each status: favourited, reblogged. */
export async function viewerFlags(db: Queryable, viewerId: string, statusIds: string[]): Promise<{ favourited: Set<string>; reblogged: Set<string> }> {
  if (statusIds.length === 0) return { favourited: new Set(), reblogged: new Set() };
  const { rows } = await db.query<{ kind: string; status_id: string }>(
    `SELECT 'f' AS kind, status_id FROM favourites WHERE account_id = $1 AND status_id = ANY($2::bigint[])
     UNION ALL
     SELECT 'r', reblog_of_id FROM statuses WHERE account_id = $1 AND reblog_of_id = ANY($2::bigint[]) AND deleted_at IS NULL`,
    [viewerId, statusIds],
  );
  return {
    favourited: new Set(rows.filter((r) => r.kind === 'f').map((r) => r.status_id)),
    reblogged: new Set(rows.filter((r) => r.kind === 'r').map((r) => r.status_id)),
  };
}

/** Which of these authors the viewer follows, and which statuses mention the viewer: what visibility depends on. */
export async function visibilityFacts(db: Queryable, viewerId: string, statuses: StatusRow[]): Promise<{ follows: Set<string>; mentioned: Set<string> }> {
  const authors = [...new Set(statuses.map((s) => s.account_id))];
  const ids = statuses.map((s) => s.id);
  if (ids.length === 0) return { follows: new Set(), mentioned: new Set() };
  const [f, m] = await Promise.all([
    db.query<{ id: string }>(`SELECT target_account_id AS id FROM follows WHERE account_id = $1 AND target_account_id = ANY($2::bigint[])`, [viewerId, authors]),
    db.query<{ id: string }>(`SELECT status_id AS id FROM mentions WHERE account_id = $1 AND status_id = ANY($2::bigint[])`, [viewerId, ids]),
  ]);
  return { follows: new Set(f.rows.map((r) => r.id)), mentioned: new Set(m.rows.map((r) => r.id)) };
}

export interface AccountStatusFilters {
  excludeReplies?: boolean | undefined;
  excludeReblogs?: boolean | undefined;
  onlyMedia?: boolean | undefined;
  tagged?: string | undefined;
  /** Visibilities the viewer may see of this account. */
  visibilities: Visibility[];
  /** Also statuses of other visibilities that mention this viewer. */
  mentionedViewerId?: string | null;
}

export async function accountStatusIds(db: Queryable, accountId: string, f: AccountStatusFilters, p: PageParams): Promise<string[]> {
  const values: unknown[] = [accountId, f.visibilities];
  let extra = '';
  if (f.excludeReplies) extra += ` AND (s.in_reply_to_id IS NULL OR s.in_reply_to_account_id = s.account_id)`;
  if (f.excludeReblogs) extra += ` AND s.reblog_of_id IS NULL`;
  if (f.onlyMedia) extra += ` AND EXISTS (SELECT 1 FROM media_attachments ma WHERE ma.status_id = s.id)`;
  if (f.tagged) {
    values.push(f.tagged.toLowerCase());
    extra += ` AND EXISTS (SELECT 1 FROM statuses_tags st JOIN tags t ON t.id = st.tag_id WHERE st.status_id = s.id AND lower(t.name) = $${values.length})`;
  }
  let visible = `s.visibility = ANY($2::text[])`;
  if (f.mentionedViewerId) {
    values.push(f.mentionedViewerId);
    visible = `(${visible} OR EXISTS (SELECT 1 FROM mentions m WHERE m.status_id = s.id AND m.account_id = $${values.length}))`;
  }
  const c = pageClause('s.id', p, values);
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id FROM statuses s WHERE s.account_id = $1 AND s.deleted_at IS NULL AND ${visible}${extra} AND ${c.where}
      ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p).map((r) => r.id);
}

export async function publicTimelineIds(db: Queryable, o: { local: boolean; remote: boolean; tag?: string; onlyMedia?: boolean; viewerId?: string | null }, p: PageParams): Promise<string[]> {
  const values: unknown[] = [];
  let extra = '';
  if (o.onlyMedia) extra += ` AND EXISTS (SELECT 1 FROM media_attachments ma WHERE ma.status_id = s.id)`;
  if (o.local) extra += ` AND a.domain IS NULL`;
  if (o.remote) extra += ` AND a.domain IS NOT NULL`;
  if (o.tag) {
    values.push(o.tag.toLowerCase());
    extra += ` AND EXISTS (SELECT 1 FROM statuses_tags st JOIN tags t ON t.id = st.tag_id WHERE st.status_id = s.id AND lower(t.name) = $${values.length})`;
  }
  // Silenced servers' posts only for their followers (storage/instance-domain-blocks.ts).
  if (!o.local) {
    values.push(o.viewerId ?? null);
    extra += ` AND ${notSilencedSql('a', `$${values.length}::bigint`)}`;
  }
  const c = pageClause('s.id', p, values);
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id FROM statuses s JOIN accounts a ON a.id = s.account_id
      WHERE s.deleted_at IS NULL AND s.visibility = 'public' AND s.reblog_of_id IS NULL AND a.suspended_at IS NULL AND a.silenced_at IS NULL${extra} AND ${c.where}
      ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p).map((r) => r.id);
}

/** The newest statuses for a home feed: the account's own, those of whom it follows and of tags it follows (rebuilds of a lost feed). */
export async function homeFeedSourceIds(db: Queryable, accountId: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id FROM statuses s
      WHERE s.deleted_at IS NULL AND s.visibility <> 'direct'
        AND (s.account_id = $1 OR s.account_id IN (SELECT target_account_id FROM follows WHERE account_id = $1))
      UNION
     SELECT m.status_id FROM mentions m JOIN statuses s ON s.id = m.status_id
      WHERE m.account_id = $1 AND s.deleted_at IS NULL AND s.visibility = 'direct'
        AND s.account_id IN (SELECT target_account_id FROM follows WHERE account_id = $1)
      UNION
     -- Public posts with a tag it follows (its 100 latest follows), each tag's newest through statuses_tags' key.
     SELECT t.status_id FROM (SELECT tag_id FROM tag_follows WHERE account_id = $1 ORDER BY id DESC LIMIT 100) tf
       CROSS JOIN LATERAL (
         SELECT st.status_id FROM statuses_tags st JOIN statuses s ON s.id = st.status_id JOIN accounts a ON a.id = s.account_id
          WHERE st.tag_id = tf.tag_id AND s.deleted_at IS NULL AND s.visibility = 'public' AND s.reblog_of_id IS NULL
            AND a.suspended_at IS NULL AND a.silenced_at IS NULL
          ORDER BY st.status_id DESC LIMIT $2) t
      ORDER BY id DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows.map((r) => r.id);
}

/** Ancestors, oldest first (at most 40 up), and the whole reply tree below, bounded. */
export async function threadIds(db: Queryable, status: StatusRow): Promise<{ ancestors: string[]; descendants: { id: string; parent: string }[] }> {
  const up = await db.query<{ id: string }>(
    `WITH RECURSIVE up(id, parent, depth) AS (
       SELECT id, in_reply_to_id, 0 FROM statuses WHERE id = $1
       UNION ALL
       SELECT s.id, s.in_reply_to_id, up.depth + 1 FROM statuses s JOIN up ON s.id = up.parent WHERE up.depth < 40
     ) SELECT id FROM up WHERE id <> $1 ORDER BY depth DESC`,
    [status.id],
  );
  const down = await db.query<{ id: string; parent: string }>(
    `WITH RECURSIVE down(id, parent, depth) AS (
       SELECT id, in_reply_to_id, 1 FROM statuses WHERE in_reply_to_id = $1
       UNION ALL
       SELECT s.id, s.in_reply_to_id, down.depth + 1 FROM statuses s JOIN down ON s.in_reply_to_id = down.id WHERE down.depth < 256
     ) SELECT id, parent FROM down ORDER BY id LIMIT 4096`,
    [status.id],
  );
  return { ancestors: up.rows.map((r) => r.id), descendants: down.rows };
}

/** `uri`: the id of the Like (or EmojiReact) another server sent for it; null for a local favourite. */
export async function favourite(db: Queryable, accountId: string, statusId: string, uri: string | null = null): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO favourites (account_id, status_id, uri) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [accountId, statusId, uri],
  );
  if (rowCount === 1) await db.query(`UPDATE statuses SET favourites_count = favourites_count + 1 WHERE id = $1`, [statusId]);
  return rowCount === 1;
}

/** The status an account's favourite received under this Like id is of, or null. */
export async function favouritedByUri(db: Queryable, accountId: string, uri: string): Promise<string | null> {
  const { rows } = await db.query<{ status_id: string }>(`SELECT status_id FROM favourites WHERE uri = $1 AND account_id = $2 LIMIT 1`, [uri, accountId]);
  return rows[0]?.status_id ?? null;
}

export async function unfavourite(db: Queryable, accountId: string, statusId: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM favourites WHERE account_id = $1 AND status_id = $2`, [accountId, statusId]);
  if (rowCount === 1) await db.query(`UPDATE statuses SET favourites_count = greatest(favourites_count - 1, 0) WHERE id = $1`, [statusId]);
  return rowCount === 1;
}

/** Accounts that favourited or reblogged a status, paged by the favourite's or reblog's id. */
export async function actorsOf(db: Queryable, kind: 'favourited_by' | 'reblogged_by', statusId: string, p: PageParams): Promise<{ accountIds: string[]; firstId: string | null; lastId: string | null }> {
  const values: unknown[] = [statusId];
  const c = pageClause('r.id', p, values);
  const sql = kind === 'favourited_by'
    ? `SELECT r.id, r.account_id FROM favourites r WHERE r.status_id = $1 AND ${c.where} ORDER BY ${c.order} ${c.limit}`
    : `SELECT r.id, r.account_id FROM statuses r WHERE r.reblog_of_id = $1 AND r.deleted_at IS NULL AND ${c.where} ORDER BY ${c.order} ${c.limit}`;
  const { rows } = await db.query<{ id: string; account_id: string }>(sql, values);
  const ordered = pageRows(rows, p);
  return { accountIds: ordered.map((r) => r.account_id), firstId: ordered[0]?.id ?? null, lastId: ordered.at(-1)?.id ?? null };
}

export async function findIdempotentStatus(db: Queryable, accountId: string, key: string): Promise<string | null> {
  const { rows } = await db.query<{ status_id: string }>(
    `SELECT status_id FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created_at > now() - interval '1 hour'`,
    [accountId, key],
  );
  return rows[0]?.status_id ?? null;
}

/** A status by its ActivityPub id (remote statuses and reblogs store theirs). */
export async function findStatusByUri(db: Queryable, uri: string): Promise<StatusRow | null> {
  const { rows } = await db.query<StatusRow>(`SELECT ${COLUMNS} FROM statuses WHERE uri = $1`, [uri]);
  return rows[0] ?? null;
}

/** An edit of a remote status: new text and flags, kept in place. */
export async function updateRemoteStatus(db: Queryable, id: string, u: { content: string; spoilerText: string; sensitive: boolean; editedAt: Date }): Promise<StatusRow | null> {
  const { rows } = await db.query<StatusRow>(
    // An older edit arriving after a newer one changes nothing; an edit dated in the future counts as now.
    `UPDATE statuses SET content = $2, spoiler_text = $3, sensitive = $4, edited_at = least($5::timestamptz, now()), updated_at = now()
      WHERE id = $1 AND deleted_at IS NULL AND (edited_at IS NULL OR edited_at < least($5::timestamptz, now())) RETURNING ${COLUMNS}`,
    [id, u.content, u.spoilerText, u.sensitive, u.editedAt],
  );
  return rows[0] ?? null;
}

/** An edit of a local status: its new text and flags (the edit's time is the commit's). */
export async function updateLocalStatus(db: Queryable, id: string, u: { text: string; content: string; spoilerText: string; sensitive: boolean; language: string | null }): Promise<StatusRow | null> {
  const { rows } = await db.query<StatusRow>(
    `UPDATE statuses SET text = $2, content = $3, spoiler_text = $4, sensitive = $5, language = $6, edited_at = now(), updated_at = now()
      WHERE id = $1 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [id, u.text, u.content, u.spoilerText, u.sensitive, u.language],
  );
  return rows[0] ?? null;
}

/** A status's mentions become these accounts; returns the accounts newly mentioned. */
export async function replaceMentions(db: Queryable, statusId: string, accountIds: string[]): Promise<string[]> {
  await db.query(`DELETE FROM mentions WHERE status_id = $1 AND NOT (account_id = ANY($2::bigint[]))`, [statusId, accountIds]);
  if (accountIds.length === 0) return [];
  const { rows } = await db.query<{ account_id: string }>(
    `INSERT INTO mentions (status_id, account_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING RETURNING account_id`,
    [statusId, accountIds],
  );
  return rows.map((r) => r.account_id);
}

/** A status's hashtags become these. */
export async function replaceTags(db: Queryable, statusId: string, names: string[]): Promise<void> {
  await db.query(`DELETE FROM statuses_tags WHERE status_id = $1`, [statusId]);
  await insertTags(db, statusId, names);
}

/** Local accounts with a live reblog of a status (who hear of its edits). */
export async function localRebloggers(db: Queryable, statusId: string): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT s.account_id FROM statuses s JOIN accounts a ON a.id = s.account_id
      WHERE s.reblog_of_id = $1 AND s.deleted_at IS NULL AND a.domain IS NULL LIMIT 10000`,
    [statusId],
  );
  return rows.map((r) => r.account_id);
}

/** The id of an account's favourite of a status (what the Like we send is named after), or null. */
export async function favouriteId(db: Queryable, accountId: string, statusId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM favourites WHERE account_id = $1 AND status_id = $2`, [accountId, statusId]);
  return rows[0]?.id ?? null;
}

/** Who may quote a status ('public', 'followers', 'nobody'). */
export async function setQuotePolicy(db: Queryable, statusId: string, policy: string): Promise<void> {
  await db.query(`UPDATE statuses SET quote_approval_policy = $2 WHERE id = $1 AND deleted_at IS NULL`, [statusId, policy]);
}
