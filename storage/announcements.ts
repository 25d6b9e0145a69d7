import type { Queryable } from './db.ts';

/** An operator's announcement (Mastodon's Announcement). */
export interface AnnouncementRow {
  id: string;
  text: string;
  published: boolean;
  all_day: boolean;
  scheduled_at: Date | null;
  starts_at: Date | null;
  ends_at: Date | null;
  published_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** An announcement's reactions of one name: how many, and whether the viewer is among them. */
export interface ReactionCount {
  announcement_id: string;
  name: string;
  count: number;
  me: boolean;
  custom_emoji_id: string | null;
}

const COLUMNS = `id::text, text, published, all_day, scheduled_at, starts_at, ends_at, published_at, created_at, updated_at`;

/** A server has a handful of announcements; lists are bounded all the same. */
const LIST_LIMIT = 200;

export interface NewAnnouncement {
  text: string;
  allDay: boolean;
  startsAt: Date | null;
  endsAt: Date | null;
  scheduledAt: Date | null;
  /** Published at once (no schedule). */
  published: boolean;
}

export async function insertAnnouncement(db: Queryable, a: NewAnnouncement): Promise<AnnouncementRow> {
  const { rows } = await db.query<AnnouncementRow>(
    `INSERT INTO announcements (text, all_day, starts_at, ends_at, scheduled_at, published, published_at)
     VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $6 THEN now() END) RETURNING ${COLUMNS}`,
    [a.text, a.allDay, a.startsAt, a.endsAt, a.scheduledAt, a.published],
  );
  return rows[0]!;
}

export async function findAnnouncement(db: Queryable, id: string): Promise<AnnouncementRow | null> {
  const { rows } = await db.query<AnnouncementRow>(`SELECT ${COLUMNS} FROM announcements WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Every announcement, newest first (for operators). */
export async function listAnnouncements(db: Queryable): Promise<AnnouncementRow[]> {
  const { rows } = await db.query<AnnouncementRow>(`SELECT ${COLUMNS} FROM announcements ORDER BY id DESC LIMIT ${LIST_LIMIT}`);
  return rows;
}

/** The published ones in Mastodon's order (chronological: by start, schedule, publication, then creation). */
export async function publishedAnnouncements(db: Queryable): Promise<AnnouncementRow[]> {
  const { rows } = await db.query<AnnouncementRow>(
    `SELECT ${COLUMNS} FROM announcements WHERE published
      ORDER BY coalesce(starts_at, scheduled_at, published_at, created_at), id LIMIT ${LIST_LIMIT}`,
  );
  return rows;
}

/**
 * Publishes or unpublishes; returns the row when it changed (null when it was already so, or is gone). Publishing
 * clears the schedule; a scheduled publication only happens if `onlyIfScheduledFor` still matches (the operator may
 * have changed or cancelled it since the job was queued).
 */
export async function setPublished(db: Queryable, id: string, published: boolean, onlyIfScheduledFor?: Date): Promise<AnnouncementRow | null> {
  const { rows } = await db.query<AnnouncementRow>(
    `UPDATE announcements SET published = $2, published_at = CASE WHEN $2 THEN now() ELSE published_at END,
            scheduled_at = CASE WHEN $2 THEN NULL ELSE scheduled_at END, updated_at = now()
      WHERE id = $1 AND published <> $2 AND ($3::timestamptz IS NULL OR scheduled_at = $3)
      RETURNING ${COLUMNS}`,
    [id, published, onlyIfScheduledFor ?? null],
  );
  return rows[0] ?? null;
}

export async function deleteAnnouncement(db: Queryable, id: string): Promise<AnnouncementRow | null> {
  const { rows } = await db.query<AnnouncementRow>(`DELETE FROM announcements WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
  return rows[0] ?? null;
}

/** Marks the announcement read for the account (idempotent). */
export async function dismissAnnouncement(db: Queryable, accountId: string, announcementId: string): Promise<void> {
  await db.query(
    `INSERT INTO announcement_mutes (account_id, announcement_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
    [accountId, announcementId],
  );
}

/** Which of these announcements the account has dismissed. */
export async function dismissedAmong(db: Queryable, accountId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    `SELECT announcement_id::text AS id FROM announcement_mutes WHERE account_id = $1 AND announcement_id = ANY($2::bigint[])`,
    [accountId, ids],
  );
  return new Set(rows.map((r) => r.id));
}

/** The account's reactions to an announcement, counted (Mastodon allows a few per person). */
export async function countOwnReactions(db: Queryable, accountId: string, announcementId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM announcement_reactions WHERE account_id = $1 AND announcement_id = $2`,
    [accountId, announcementId],
  );
  return rows[0]!.n;
}

/** Adds a reaction; false when the account had already reacted so. */
export async function addReaction(db: Queryable, r: { accountId: string; announcementId: string; name: string; customEmojiId: string | null }): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO announcement_reactions (account_id, announcement_id, name, custom_emoji_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [r.accountId, r.announcementId, r.name, r.customEmojiId],
  );
  return rowCount === 1;
}

/** Removes a reaction; false when there was none. */
export async function removeReaction(db: Queryable, accountId: string, announcementId: string, name: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM announcement_reactions WHERE account_id = $1 AND announcement_id = $2 AND name = $3`,
    [accountId, announcementId, name],
  );
  return rowCount === 1;
}

/** The reactions of these announcements by name, in order of first use, with whether the viewer is among each. */
export async function reactionCounts(db: Queryable, ids: string[], viewerId: string | null): Promise<ReactionCount[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<ReactionCount>(
    `SELECT announcement_id::text, name, count(*)::int AS count, coalesce(bool_or(account_id = $2), false) AS me,
            max(custom_emoji_id)::text AS custom_emoji_id
       FROM announcement_reactions WHERE announcement_id = ANY($1::bigint[])
      GROUP BY announcement_id, name ORDER BY announcement_id, min(id) LIMIT 2000`,
    [ids, viewerId],
  );
  return rows;
}
