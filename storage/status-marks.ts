import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';
import type { Visibility } from './statuses.ts';

// What a person marks on statuses for themselves: bookmarks, pins and muted conversations (Mastodon's Bookmark,
// StatusPin and ConversationMute), and the paging of their favourites.

/** How far up a thread its root is looked for (threads deeper than this are cut there). */
const THREAD_DEPTH = 128;

/** A page of statuses marked by an account, by the mark's id (newest first), with the ids Link paging names. */
export interface MarkPage {
  statusIds: string[];
  firstId: string | null;
  lastId: string | null;
}

async function marksPage(db: Queryable, table: 'bookmarks' | 'favourites', accountId: string, p: PageParams): Promise<MarkPage> {
  const values: unknown[] = [accountId];
  const c = pageClause('m.id', p, values);
  const { rows } = await db.query<{ id: string; status_id: string }>(
    `SELECT m.id, m.status_id FROM ${table} m JOIN statuses s ON s.id = m.status_id
      WHERE m.account_id = $1 AND s.deleted_at IS NULL AND ${c.where} ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  const ordered = pageRows(rows, p);
  return { statusIds: ordered.map((r) => r.status_id), firstId: ordered[0]?.id ?? null, lastId: ordered.at(-1)?.id ?? null };
}

export const bookmarksPage = (db: Queryable, accountId: string, p: PageParams) => marksPage(db, 'bookmarks', accountId, p);
export const favouritesPage = (db: Queryable, accountId: string, p: PageParams) => marksPage(db, 'favourites', accountId, p);

export async function insertBookmark(db: Queryable, accountId: string, statusId: string): Promise<boolean> {
  const { rowCount } = await db.query(`INSERT INTO bookmarks (account_id, status_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [accountId, statusId]);
  return rowCount === 1;
}

export async function deleteBookmark(db: Queryable, accountId: string, statusId: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM bookmarks WHERE account_id = $1 AND status_id = $2`, [accountId, statusId]);
  return rowCount === 1;
}

/** Takes the account's row lock, so that pins counted in this transaction stay counted until it ends. */
export async function lockAccount(db: Queryable, accountId: string): Promise<void> {
  await db.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
}

/** Pins of live statuses an account has. */
export async function countPins(db: Queryable, accountId: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM status_pins p JOIN statuses s ON s.id = p.status_id WHERE p.account_id = $1 AND s.deleted_at IS NULL`,
    [accountId],
  );
  return Number(rows[0]!.n);
}

export async function isPinned(db: Queryable, accountId: string, statusId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM status_pins WHERE account_id = $1 AND status_id = $2`, [accountId, statusId]);
  return rows.length > 0;
}

export async function insertPin(db: Queryable, accountId: string, statusId: string): Promise<boolean> {
  const { rowCount } = await db.query(`INSERT INTO status_pins (account_id, status_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [accountId, statusId]);
  return rowCount === 1;
}

export async function deletePin(db: Queryable, accountId: string, statusId: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM status_pins WHERE account_id = $1 AND status_id = $2`, [accountId, statusId]);
  return rowCount === 1;
}

/**
 * An account's pinned statuses that a viewer may see (of `visibilities`, or mentioning `mentionedViewerId`), newest
 * pin first, at most `limit`.
 */
export async function pinnedStatusIds(db: Queryable, accountId: string, o: { visibilities: Visibility[]; mentionedViewerId?: string | null; limit: number }): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id FROM status_pins p JOIN statuses s ON s.id = p.status_id
      WHERE p.account_id = $1 AND s.account_id = $1 AND s.deleted_at IS NULL AND s.reblog_of_id IS NULL
        AND (s.visibility = ANY($2::text[])
             OR ($3::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM mentions m WHERE m.status_id = s.id AND m.account_id = $3)))
      ORDER BY p.id DESC LIMIT $4`,
    [accountId, o.visibilities, o.mentionedViewerId ?? null, o.limit],
  );
  return rows.map((r) => r.id);
}

/**
 * Makes a remote account's pins exactly `statusIds` (its featured collection, newest first), keeping pins that stay;
 * new ones are inserted oldest first so that pin ids keep the collection's order. Returns whether anything changed.
 */
export async function replacePins(db: Queryable, accountId: string, statusIds: string[]): Promise<boolean> {
  const removed = await db.query(`DELETE FROM status_pins WHERE account_id = $1 AND NOT (status_id = ANY($2::bigint[]))`, [accountId, statusIds]);
  let added = 0;
  for (const id of [...statusIds].reverse()) if (await insertPin(db, accountId, id)) added++;
  return (removed.rowCount ?? 0) > 0 || added > 0;
}

/** The root of the thread a status is in, as far as it is known here (the status itself when it replies to nothing). */
export async function threadRootOf(db: Queryable, statusId: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `WITH RECURSIVE up(id, parent, depth) AS (
       SELECT id, in_reply_to_id, 0 FROM statuses WHERE id = $1
       UNION ALL
       SELECT s.id, s.in_reply_to_id, up.depth + 1 FROM statuses s JOIN up ON s.id = up.parent WHERE up.depth < ${THREAD_DEPTH}
     ) SELECT id FROM up ORDER BY depth DESC LIMIT 1`,
    [statusId],
  );
  return rows[0]?.id ?? statusId;
}

export async function insertConversationMute(db: Queryable, accountId: string, rootId: string): Promise<boolean> {
  const { rowCount } = await db.query(`INSERT INTO conversation_mutes (account_id, root_status_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [accountId, rootId]);
  return rowCount === 1;
}

export async function deleteConversationMute(db: Queryable, accountId: string, rootId: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM conversation_mutes WHERE account_id = $1 AND root_status_id = $2`, [accountId, rootId]);
  return rowCount === 1;
}

/** Removes the account's mutes of the conversations a status is in (any root among its ancestors or itself). */
export async function deleteConversationMutesOver(db: Queryable, accountId: string, statusId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH RECURSIVE up(id, parent, depth) AS (
       SELECT id, in_reply_to_id, 0 FROM statuses WHERE id = $2
       UNION ALL
       SELECT s.id, s.in_reply_to_id, up.depth + 1 FROM statuses s JOIN up ON s.id = up.parent WHERE up.depth < ${THREAD_DEPTH}
     ) DELETE FROM conversation_mutes WHERE account_id = $1 AND root_status_id IN (SELECT id FROM up)`,
    [accountId, statusId],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Which of these statuses are in a conversation the account muted: a muted root among each one's ancestors. Costs
 * nothing beyond an index probe for the many who mute no conversation.
 */
export async function inMutedConversations(db: Queryable, accountId: string, statusIds: string[]): Promise<Set<string>> {
  if (statusIds.length === 0) return new Set();
  const { rows } = await db.query<{ origin: string }>(
    `WITH RECURSIVE up(origin, id, parent, depth) AS (
       SELECT s.id, s.id, s.in_reply_to_id, 0 FROM statuses s
        WHERE s.id = ANY($2::bigint[]) AND EXISTS (SELECT 1 FROM conversation_mutes WHERE account_id = $1)
       UNION ALL
       SELECT up.origin, s.id, s.in_reply_to_id, up.depth + 1 FROM statuses s JOIN up ON s.id = up.parent WHERE up.depth < ${THREAD_DEPTH}
     ) SELECT DISTINCT up.origin FROM up JOIN conversation_mutes cm ON cm.account_id = $1 AND cm.root_status_id = up.id`,
    [accountId, statusIds],
  );
  return new Set(rows.map((r) => r.origin));
}

/** What a viewer marked among these statuses: bookmarked, pinned (their own), in a conversation they muted. One query. */
export async function viewerMarks(db: Queryable, viewerId: string, statusIds: string[]): Promise<{ bookmarked: Set<string>; pinned: Set<string>; muted: Set<string> }> {
  const out = { bookmarked: new Set<string>(), pinned: new Set<string>(), muted: new Set<string>() };
  if (statusIds.length === 0) return out;
  const { rows } = await db.query<{ kind: string; status_id: string }>(
    `WITH RECURSIVE up(origin, id, parent, depth) AS (
       SELECT s.id, s.id, s.in_reply_to_id, 0 FROM statuses s
        WHERE s.id = ANY($2::bigint[]) AND EXISTS (SELECT 1 FROM conversation_mutes WHERE account_id = $1)
       UNION ALL
       SELECT up.origin, s.id, s.in_reply_to_id, up.depth + 1 FROM statuses s JOIN up ON s.id = up.parent WHERE up.depth < ${THREAD_DEPTH}
     )
     SELECT 'b' AS kind, status_id FROM bookmarks WHERE account_id = $1 AND status_id = ANY($2::bigint[])
     UNION ALL
     SELECT 'p', status_id FROM status_pins WHERE account_id = $1 AND status_id = ANY($2::bigint[])
     UNION ALL
     SELECT 'm', up.origin FROM up JOIN conversation_mutes cm ON cm.account_id = $1 AND cm.root_status_id = up.id`,
    [viewerId, statusIds],
  );
  for (const r of rows) (r.kind === 'b' ? out.bookmarked : r.kind === 'p' ? out.pinned : out.muted).add(r.status_id);
  return out;
}

/** What one viewer has done with one status: the per-viewer fields of its Status entity. */
export interface ViewerMarks {
  favourited: boolean;
  reblogged: boolean;
  bookmarked: boolean;
  pinned: boolean;
  /** Whether they muted the conversation it is in. */
  muted: boolean;
  /** Their choices in its poll. */
  choices: number[];
}

/** A viewer who has done nothing with the status. */
export const noViewerMarks = (): ViewerMarks => ({ favourited: false, reblogged: false, bookmarked: false, pinned: false, muted: false, choices: [] });

/**
 * viewerFlags and viewerMarks for many viewers of one status at once, with their votes in its poll: only the viewers
 * who did anything with it are in the map (a live stream asks this for a thousand receivers of a post at once).
 */
export async function marksOfViewers(db: Queryable, viewerIds: string[], statusId: string): Promise<Map<string, ViewerMarks>> {
  const out = new Map<string, ViewerMarks>();
  if (viewerIds.length === 0) return out;
  const { rows } = await db.query<{ kind: string; account_id: string; choice: number | null }>(
    `WITH RECURSIVE up(id, parent, depth) AS (
       SELECT id, in_reply_to_id, 0 FROM statuses WHERE id = $2
       UNION ALL
       SELECT s.id, s.in_reply_to_id, up.depth + 1 FROM statuses s JOIN up ON s.id = up.parent WHERE up.depth < ${THREAD_DEPTH}
     )
     SELECT 'f' AS kind, account_id, NULL::int AS choice FROM favourites WHERE status_id = $2 AND account_id = ANY($1::bigint[])
     UNION ALL
     SELECT 'r', account_id, NULL FROM statuses WHERE reblog_of_id = $2 AND account_id = ANY($1::bigint[]) AND deleted_at IS NULL
     UNION ALL
     SELECT 'b', account_id, NULL FROM bookmarks WHERE status_id = $2 AND account_id = ANY($1::bigint[])
     UNION ALL
     SELECT 'p', account_id, NULL FROM status_pins WHERE status_id = $2 AND account_id = ANY($1::bigint[])
     UNION ALL
     SELECT DISTINCT 'm', cm.account_id, NULL::int FROM up JOIN conversation_mutes cm ON cm.root_status_id = up.id WHERE cm.account_id = ANY($1::bigint[])
     UNION ALL
     SELECT 'v', v.account_id, v.choice FROM polls p JOIN poll_votes v ON v.poll_id = p.id WHERE p.status_id = $2 AND v.account_id = ANY($1::bigint[])
     ORDER BY choice`,
    [viewerIds, statusId],
  );
  for (const r of rows) {
    let marks = out.get(r.account_id);
    if (!marks) out.set(r.account_id, (marks = noViewerMarks()));
    if (r.kind === 'v') marks.choices.push(r.choice!);
    else marks[({ f: 'favourited', r: 'reblogged', b: 'bookmarked', p: 'pinned', m: 'muted' } as const)[r.kind as 'f' | 'r' | 'b' | 'p' | 'm']] = true;
  }
  return out;
}

/** Where a remote account's featured collection is (null: it has none). */
export async function setFeaturedCollectionUrl(db: Queryable, accountId: string, url: string | null): Promise<void> {
  await db.query(`UPDATE accounts SET featured_collection_url = $2 WHERE id = $1 AND domain IS NOT NULL AND featured_collection_url IS DISTINCT FROM $2`, [accountId, url]);
}

export async function featuredCollectionUrl(db: Queryable, accountId: string): Promise<string | null> {
  const { rows } = await db.query<{ url: string | null }>(`SELECT featured_collection_url AS url FROM accounts WHERE id = $1`, [accountId]);
  return rows[0]?.url ?? null;
}

/** An account's pinned statuses, newest pin first (the featured collection of a local account). */
export async function pinnedIdsOf(db: Queryable, accountId: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id FROM status_pins p JOIN statuses s ON s.id = p.status_id
      WHERE p.account_id = $1 AND s.account_id = $1 AND s.deleted_at IS NULL ORDER BY p.id DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows.map((r) => r.id);
}
