import type { Queryable } from './db.ts';

/**
 * What the CSV exports of /settings/export read (Mastodon's Export): one account's follows, followers, list members,
 * blocks, mutes, domain blocks and bookmarks, a page at a time. Every page is a keyset page on an (account_id, id)
 * index, newest first as Mastodon orders them (`reorder(id: :desc)`), so an export never holds a whole table.
 */

/** An account named in an export: its username and domain (NULL for ours). */
export interface NamedAccount {
  username: string;
  domain: string | null;
}

export interface FollowingExportRow extends NamedAccount {
  id: string;
  show_reblogs: boolean;
  notify: boolean;
  languages: string[] | null;
}

export interface MuteExportRow extends NamedAccount {
  id: string;
  hide_notifications: boolean;
}

/** `before`: the id of the last row of the previous page (null for the first page). */
export async function followingPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<FollowingExportRow[]> {
  const { rows } = await db.query<FollowingExportRow>(
    `SELECT f.id, a.username, a.domain, f.show_reblogs, f.notify, f.languages
       FROM follows f JOIN accounts a ON a.id = f.target_account_id
      WHERE f.account_id = $1 AND ($2::bigint IS NULL OR f.id < $2) ORDER BY f.id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows;
}

export async function followersPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<(NamedAccount & { id: string })[]> {
  const { rows } = await db.query<NamedAccount & { id: string }>(
    `SELECT f.id, a.username, a.domain FROM follows f JOIN accounts a ON a.id = f.account_id
      WHERE f.target_account_id = $1 AND ($2::bigint IS NULL OR f.id < $2) ORDER BY f.id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows;
}

export async function blocksPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<(NamedAccount & { id: string })[]> {
  const { rows } = await db.query<NamedAccount & { id: string }>(
    `SELECT b.id, a.username, a.domain FROM blocks b JOIN accounts a ON a.id = b.target_account_id
      WHERE b.account_id = $1 AND ($2::bigint IS NULL OR b.id < $2) ORDER BY b.id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows;
}

/** Mutes in force: a timed mute past its end counts as gone everywhere, so here too. */
export async function mutesPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<MuteExportRow[]> {
  const { rows } = await db.query<MuteExportRow>(
    `SELECT m.id, a.username, a.domain, m.hide_notifications FROM mutes m JOIN accounts a ON a.id = m.target_account_id
      WHERE m.account_id = $1 AND (m.expires_at IS NULL OR m.expires_at > now()) AND ($2::bigint IS NULL OR m.id < $2)
      ORDER BY m.id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows;
}

export async function domainBlocksPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<{ id: string; domain: string }[]> {
  const { rows } = await db.query<{ id: string; domain: string }>(
    `SELECT id, domain FROM account_domain_blocks WHERE account_id = $1 AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows;
}

/** A status named by an export: its stored uri (remote) or what ours is derived from. */
export interface NamedStatus {
  id: string;
  status_id: string;
  uri: string | null;
  author_username: string;
}

/** Bookmarks of statuses still there (a deleted status has no address worth exporting). */
export async function bookmarksPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<NamedStatus[]> {
  const { rows } = await db.query<NamedStatus>(
    `SELECT b.id, s.id AS status_id, s.uri, a.username AS author_username
       FROM bookmarks b JOIN statuses s ON s.id = b.status_id JOIN accounts a ON a.id = s.account_id
      WHERE b.account_id = $1 AND s.deleted_at IS NULL AND ($2::bigint IS NULL OR b.id < $2) ORDER BY b.id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows;
}

/** Favourites, for the archive's likes.json, as bookmarksPage. */
export async function favouritesPage(db: Queryable, accountId: string, before: string | null, limit: number): Promise<NamedStatus[]> {
  const { rows } = await db.query<NamedStatus>(
    `SELECT f.id, s.id AS status_id, s.uri, a.username AS author_username
       FROM favourites f JOIN statuses s ON s.id = f.status_id JOIN accounts a ON a.id = s.account_id
      WHERE f.account_id = $1 AND s.deleted_at IS NULL AND ($2::bigint IS NULL OR f.id < $2) ORDER BY f.id DESC LIMIT $3`,
    [accountId, before, limit],
  );
  return rows;
}

export interface ListMemberExportRow extends NamedAccount {
  list_id: string;
  member_id: string;
  title: string;
}

/**
 * Members of the account's lists, list by list (oldest list first, as Mastodon walks `owned_lists`), each list's
 * members in the order they were added. `after`: the (list id, member row id) the previous page ended on.
 */
export async function listMembersPage(db: Queryable, accountId: string, after: { listId: string; memberId: string } | null, limit: number): Promise<ListMemberExportRow[]> {
  const { rows } = await db.query<ListMemberExportRow>(
    `SELECT l.id AS list_id, la.id AS member_id, l.title, a.username, a.domain
       FROM lists l JOIN list_accounts la ON la.list_id = l.id JOIN accounts a ON a.id = la.account_id
      WHERE l.account_id = $1 AND ($2::bigint IS NULL OR (l.id, la.id) > ($2::bigint, $3::bigint))
      ORDER BY l.id, la.id LIMIT $4`,
    [accountId, after?.listId ?? null, after?.memberId ?? null, limit],
  );
  return rows;
}

export interface ExportCounts {
  statuses: number;
  media: number;
  following: number;
  followers: number;
  lists: number;
  blocks: number;
  mutes: number;
  domainBlocks: number;
  bookmarks: number;
}

/**
 * The figures of the export page, as Mastodon's shows them. Each count walks one account's (account_id, id) index;
 * posts, follows and followers are the account's kept counters. Media is counted in files (sizes are not stored).
 */
export async function exportCounts(db: Queryable, accountId: string): Promise<ExportCounts> {
  const { rows } = await db.query<Record<keyof ExportCounts, number>>(
    `SELECT a.statuses_count AS statuses, a.following_count AS following, a.followers_count AS followers,
            (SELECT count(*)::int FROM media_attachments ma JOIN statuses s ON s.id = ma.status_id
              WHERE s.account_id = a.id AND s.deleted_at IS NULL AND ma.original_key IS NOT NULL) AS media,
            (SELECT count(*)::int FROM lists WHERE account_id = a.id) AS lists,
            (SELECT count(*)::int FROM blocks WHERE account_id = a.id) AS blocks,
            (SELECT count(*)::int FROM mutes WHERE account_id = a.id AND (expires_at IS NULL OR expires_at > now())) AS mutes,
            (SELECT count(*)::int FROM account_domain_blocks WHERE account_id = a.id) AS "domainBlocks",
            (SELECT count(*)::int FROM bookmarks WHERE account_id = a.id) AS bookmarks
       FROM accounts a WHERE a.id = $1`,
    [accountId],
  );
  const r = rows[0];
  return {
    statuses: r?.statuses ?? 0, media: r?.media ?? 0, following: r?.following ?? 0, followers: r?.followers ?? 0,
    lists: r?.lists ?? 0, blocks: r?.blocks ?? 0, mutes: r?.mutes ?? 0, domainBlocks: r?.domainBlocks ?? 0, bookmarks: r?.bookmarks ?? 0,
  };
}
