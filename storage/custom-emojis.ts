import type { Queryable } from './db.ts';

/** A custom emoji: this server's (domain null, image on our file host) or another server's (its image where it said). */
export interface EmojiRow {
  id: string;
  shortcode: string;
  domain: string | null;
  uri: string | null;
  image_key: string | null;
  image_content_type: string | null;
  static_key: string | null;
  image_remote_url: string | null;
  category: string | null;
  visible_in_picker: boolean;
  disabled: boolean;
  updated_at: Date;
}

const NAMES = ['shortcode', 'domain', 'uri', 'image_key', 'image_content_type', 'static_key', 'image_remote_url', 'category', 'visible_in_picker', 'disabled', 'updated_at'];
const COLUMNS = ['id::text', ...NAMES].join(', ');
/** The same columns of the table named `e`. */
const E_COLUMNS = ['e.id::text', ...NAMES.map((n) => `e.${n}`)].join(', ');

/** This server's emoji by shortcode (operators add a few thousand at most; the list is bounded all the same). */
export async function listLocalEmojis(db: Queryable, options: { enabledOnly?: boolean } = {}): Promise<EmojiRow[]> {
  const { rows } = await db.query<EmojiRow>(
    `SELECT ${COLUMNS} FROM custom_emojis WHERE domain IS NULL ${options.enabledOnly ? 'AND NOT disabled' : ''}
      ORDER BY shortcode LIMIT 20000`,
  );
  return rows;
}

export async function findLocalEmoji(db: Queryable, shortcode: string): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(`SELECT ${COLUMNS} FROM custom_emojis WHERE domain IS NULL AND shortcode = $1`, [shortcode]);
  return rows[0] ?? null;
}

export async function findLocalEmojiById(db: Queryable, id: string): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(`SELECT ${COLUMNS} FROM custom_emojis WHERE domain IS NULL AND id = $1`, [id]);
  return rows[0] ?? null;
}

export interface NewLocalEmoji {
  shortcode: string;
  image_key: string;
  image_content_type: string;
  image_size: number;
  static_key: string;
  category: string | null;
  visible_in_picker: boolean;
}

/**
 * Adds a local emoji, or with `overwrite` replaces the image (and category, picker flag) of one of that shortcode; in a
 * transaction (`tx`). Returns the row and the keys of the image it replaced (for the caller to remove), or null when the shortcode is
 * taken and `overwrite` is off.
 */
export async function putLocalEmoji(tx: Queryable, e: NewLocalEmoji, overwrite: boolean): Promise<{ row: EmojiRow; replaced: string[] } | null> {
  const { rows: old } = await tx.query<{ image_key: string | null; static_key: string | null }>(
    `SELECT image_key, static_key FROM custom_emojis WHERE domain IS NULL AND shortcode = $1 FOR UPDATE`, [e.shortcode],
  );
  if (old[0] && !overwrite) return null;
  const values = [e.shortcode, e.image_key, e.image_content_type, e.image_size, e.static_key, e.category, e.visible_in_picker];
  const { rows } = old[0]
    ? await tx.query<EmojiRow>(
      `UPDATE custom_emojis SET image_key = $2, image_content_type = $3, image_size = $4, static_key = $5, category = $6,
         visible_in_picker = $7, updated_at = now()
        WHERE domain IS NULL AND shortcode = $1 RETURNING ${COLUMNS}`, values)
    : await tx.query<EmojiRow>(
      `INSERT INTO custom_emojis (shortcode, domain, image_key, image_content_type, image_size, static_key, category, visible_in_picker)
       VALUES ($1, NULL, $2, $3, $4, $5, $6, $7) ON CONFLICT (shortcode, domain) DO NOTHING RETURNING ${COLUMNS}`, values);
  if (!rows[0]) return null;
  return { row: rows[0], replaced: old[0] ? [old[0].image_key, old[0].static_key].filter((k): k is string => !!k) : [] };
}

export async function setLocalEmojiDisabled(db: Queryable, shortcode: string, disabled: boolean): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(
    `UPDATE custom_emojis SET disabled = $2, updated_at = now() WHERE domain IS NULL AND shortcode = $1 RETURNING ${COLUMNS}`,
    [shortcode, disabled],
  );
  return rows[0] ?? null;
}

export async function deleteLocalEmoji(db: Queryable, shortcode: string): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(`DELETE FROM custom_emojis WHERE domain IS NULL AND shortcode = $1 RETURNING ${COLUMNS}`, [shortcode]);
  return rows[0] ?? null;
}

/**
 * The enabled emoji of these (shortcode, domain) pairs, in one query: what statuses and accounts loaded together use.
 * `domain` null: this server's.
 */
export async function enabledEmojisOf(db: Queryable, wanted: { shortcode: string; domain: string | null }[]): Promise<EmojiRow[]> {
  if (wanted.length === 0) return [];
  const { rows } = await db.query<EmojiRow>(
    `SELECT ${E_COLUMNS} FROM unnest($1::text[], $2::text[]) AS w (shortcode, domain)
      JOIN custom_emojis e ON e.shortcode = w.shortcode AND e.domain IS NOT DISTINCT FROM NULLIF(w.domain, '')
     WHERE NOT e.disabled LIMIT 10000`,
    [wanted.map((w) => w.shortcode), wanted.map((w) => w.domain ?? '')],
  );
  return rows;
}

export interface RemoteEmoji {
  shortcode: string;
  domain: string;
  uri: string | null;
  image_remote_url: string;
  updated: Date | null;
}

/**
 * Stores other servers' emoji as their objects name them: new ones are added, known ones take the image and uri given
 * when the image URL changed or the emoji says it was updated since. Returns how many known ones changed (what was
 * rendered with them must then be rendered again).
 */
export async function upsertRemoteEmojis(db: Queryable, emojis: RemoteEmoji[]): Promise<number> {
  if (emojis.length === 0) return 0;
  const { rows } = await db.query<{ changed: number }>(
    `WITH given AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS g (shortcode, domain, uri, url, updated)
     ), changed AS (
       UPDATE custom_emojis c SET uri = g.uri, image_remote_url = g.url, updated_at = COALESCE(g.updated, now()),
              -- A copy of an image the emoji no longer names is not shown (the media proxy copies the new one).
              image_key = CASE WHEN c.image_remote_url IS DISTINCT FROM g.url THEN NULL ELSE c.image_key END,
              static_key = CASE WHEN c.image_remote_url IS DISTINCT FROM g.url THEN NULL ELSE c.static_key END
         FROM given g
        WHERE c.shortcode = g.shortcode AND c.domain = g.domain
          AND (c.image_remote_url IS DISTINCT FROM g.url OR g.updated > c.updated_at)
       RETURNING c.id
     ), added AS (
       INSERT INTO custom_emojis (shortcode, domain, uri, image_remote_url, updated_at)
       SELECT shortcode, domain, uri, url, COALESCE(updated, now()) FROM given
       ON CONFLICT (shortcode, domain) DO NOTHING
       RETURNING id
     )
     SELECT (SELECT count(*) FROM changed)::int AS changed, (SELECT count(*) FROM added)::int AS added`,
    [
      emojis.map((e) => e.shortcode), emojis.map((e) => e.domain), emojis.map((e) => e.uri), emojis.map((e) => e.image_remote_url),
      emojis.map((e) => e.updated?.toISOString() ?? null),
    ],
  );
  return rows[0]?.changed ?? 0;
}

/**
 * The enabled emoji of these (author, shortcode) pairs, of each author's server, in one query: what statuses loaded
 * together use. Each row says which author it was asked for.
 */
export async function enabledEmojisOfAuthors(db: Queryable, wanted: { account_id: string; shortcode: string }[]): Promise<(EmojiRow & { account_id: string })[]> {
  if (wanted.length === 0) return [];
  const { rows } = await db.query<EmojiRow & { account_id: string }>(
    `SELECT w.account_id::text AS account_id, ${E_COLUMNS}
       FROM unnest($1::bigint[], $2::text[]) AS w (account_id, shortcode)
       JOIN accounts a ON a.id = w.account_id
       JOIN custom_emojis e ON e.shortcode = w.shortcode AND e.domain IS NOT DISTINCT FROM a.domain
      WHERE NOT e.disabled LIMIT 10000`,
    [wanted.map((w) => w.account_id), wanted.map((w) => w.shortcode)],
  );
  return rows;
}

export async function findRemoteEmoji(db: Queryable, id: string): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(`SELECT ${COLUMNS} FROM custom_emojis WHERE id = $1 AND domain IS NOT NULL`, [id]);
  return rows[0] ?? null;
}

/** Sets another server's emoji's copy, only while the emoji still names the image the copy was made from. */
export async function setRemoteEmojiCopy(db: Queryable, id: string, c: { imageKey: string; staticKey: string; contentType: string; size: number; sourceUrl: string }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE custom_emojis SET image_key = $2, static_key = $3, image_content_type = $4, image_size = $5
      WHERE id = $1 AND domain IS NOT NULL AND image_remote_url = $6`,
    [id, c.imageKey, c.staticKey, c.contentType, c.size, c.sourceUrl],
  );
  return (rowCount ?? 0) > 0;
}

export async function findRemoteEmojiByShortcode(db: Queryable, shortcode: string, domain: string): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(`SELECT ${COLUMNS} FROM custom_emojis WHERE shortcode = $1 AND domain = $2`, [shortcode, domain]);
  return rows[0] ?? null;
}

/** Another server's emoji shown or not here (an operator's choice; its posts keep the :shortcode: as text). */
export async function setRemoteEmojiDisabled(db: Queryable, shortcode: string, domain: string, disabled: boolean): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(
    `UPDATE custom_emojis SET disabled = $3 WHERE domain = $2 AND shortcode = $1 RETURNING ${COLUMNS}`, [shortcode, domain, disabled],
  );
  return rows[0] ?? null;
}

/** Any emoji, this server's or another's, by its id. */
export async function findEmojiById(db: Queryable, id: string): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(`SELECT ${COLUMNS} FROM custom_emojis WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/**
 * The operators' list: this server's emoji or other servers' (all, or one domain's), those whose shortcode holds `q`,
 * by shortcode then domain, one page at a time (at most `limit`, after `offset`).
 */
export async function searchEmojis(db: Queryable, f: { remote: boolean; domain?: string | null; q?: string; limit: number; offset: number }): Promise<EmojiRow[]> {
  const params: unknown[] = [Math.min(f.limit, 200), Math.max(0, Math.min(f.offset, 100_000))];
  const where = [f.remote ? 'domain IS NOT NULL' : 'domain IS NULL'];
  if (f.remote && f.domain) where.push(`domain = $${params.push(f.domain)}`);
  if (f.q) where.push(`shortcode ILIKE $${params.push(`%${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)}`);
  const { rows } = await db.query<EmojiRow>(
    `SELECT ${COLUMNS} FROM custom_emojis WHERE ${where.join(' AND ')} ORDER BY shortcode, domain LIMIT $1 OFFSET $2`, params,
  );
  return rows;
}

/** Whether one of this server's emoji is offered in apps' pickers. */
export async function setLocalEmojiVisibleInPicker(db: Queryable, shortcode: string, visible: boolean): Promise<EmojiRow | null> {
  const { rows } = await db.query<EmojiRow>(
    `UPDATE custom_emojis SET visible_in_picker = $2, updated_at = now() WHERE domain IS NULL AND shortcode = $1 RETURNING ${COLUMNS}`, [shortcode, visible],
  );
  return rows[0] ?? null;
}
