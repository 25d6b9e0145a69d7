import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';

/** A link's preview card (Mastodon's PreviewCard), one per URL. */
export interface PreviewCardRow {
  id: string;
  url: string;
  title: string;
  description: string;
  type: 'link' | 'photo' | 'video' | 'rich';
  author_name: string;
  author_url: string;
  provider_name: string;
  provider_url: string;
  html: string;
  embed_url: string;
  width: number;
  height: number;
  image_remote_url: string | null;
  image_key: string | null;
  blurhash: string | null;
  published_at: Date | null;
  /** The page's language (a code of services/languages.ts), if it says. */
  language: string | null;
  /** The image's alt text. */
  image_description: string;
  /** The author's fediverse account (`fediverse:creator`), when it may be credited for the page. */
  author_account_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** What a fetch of the page found: everything but the ids and dates. */
export type NewPreviewCard = Omit<PreviewCardRow, 'id' | 'created_at' | 'updated_at' | 'language' | 'image_description' | 'author_account_id'>
  & Partial<Pick<PreviewCardRow, 'language' | 'image_description' | 'author_account_id'>>;

/** A card as statuses show it: with its author's account, when it has one (loaded with it). */
export interface ShownPreviewCard extends PreviewCardRow {
  author_account?: AccountRow | null;
}

const COLUMNS = `id, url, title, description, type, author_name, author_url, provider_name, provider_url, html, embed_url,
  width, height, image_remote_url, image_key, blurhash, published_at, language, image_description, author_account_id::text, created_at, updated_at`;

// The columns read through the alias `c` in joins.
const CARD_COLUMNS_OF_C = COLUMNS.split(/,\s*/).map((c) => `c.${c}`).join(', ');

export async function findCardByUrl(db: Queryable, url: string): Promise<PreviewCardRow | null> {
  const { rows } = await db.query<PreviewCardRow>({ name: 'card-by-url', text: `SELECT ${COLUMNS} FROM preview_cards WHERE url = $1`, values: [url] });
  return rows[0] ?? null;
}

const KEEP_IMAGE = `EXCLUDED.image_key IS NULL AND coalesce(EXCLUDED.html, '') = '' AND preview_cards.image_key IS NOT NULL
  AND preview_cards.image_remote_url IS NOT DISTINCT FROM EXCLUDED.image_remote_url`;

/**
 * Stores the card of a URL, replacing what an earlier fetch stored. Returns the row and the image key it replaced
 * (for the caller to delete from the file host), if any.
 */
export async function upsertCard(db: Queryable, c: NewPreviewCard): Promise<{ card: PreviewCardRow; replacedImageKey: string | null }> {
  const { rows } = await db.query<PreviewCardRow & { old_image_key: string | null }>(
    `WITH old AS (SELECT image_key FROM preview_cards WHERE url = $1)
     INSERT INTO preview_cards (url, title, description, type, author_name, author_url, provider_name, provider_url, html, embed_url,
                                width, height, image_remote_url, image_key, blurhash, published_at, language, image_description, author_account_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
     ON CONFLICT (url) DO UPDATE SET title = EXCLUDED.title, description = EXCLUDED.description, type = EXCLUDED.type,
       author_name = EXCLUDED.author_name, author_url = EXCLUDED.author_url, provider_name = EXCLUDED.provider_name,
       provider_url = EXCLUDED.provider_url, html = EXCLUDED.html, embed_url = EXCLUDED.embed_url,
       image_remote_url = EXCLUDED.image_remote_url, published_at = EXCLUDED.published_at, language = EXCLUDED.language,
       image_description = EXCLUDED.image_description, author_account_id = EXCLUDED.author_account_id, updated_at = now(),
       -- A fetch made without the image (for a post of a server whose media we reject) keeps the image another fetch
       -- of the same page stored meanwhile: the card is one per URL, and which post's job runs last is chance.
       width = CASE WHEN ${KEEP_IMAGE} THEN preview_cards.width ELSE EXCLUDED.width END,
       height = CASE WHEN ${KEEP_IMAGE} THEN preview_cards.height ELSE EXCLUDED.height END,
       image_key = CASE WHEN ${KEEP_IMAGE} THEN preview_cards.image_key ELSE EXCLUDED.image_key END,
       blurhash = CASE WHEN ${KEEP_IMAGE} THEN preview_cards.blurhash ELSE EXCLUDED.blurhash END
     RETURNING ${COLUMNS}, (SELECT image_key FROM old) AS old_image_key`,
    [c.url, c.title, c.description, c.type, c.author_name, c.author_url, c.provider_name, c.provider_url, c.html, c.embed_url,
      c.width, c.height, c.image_remote_url, c.image_key, c.blurhash, c.published_at, c.language ?? null, c.image_description ?? '', c.author_account_id ?? null],
  );
  const { old_image_key, ...card } = rows[0]!;
  return { card, replacedImageKey: old_image_key && old_image_key !== card.image_key ? old_image_key : null };
}

/** Gives a card its image (fetched later than its page). Returns the image key it replaced, if any. */
export async function setCardImage(db: Queryable, cardId: string, image: { key: string; width: number; height: number; blurhash: string }): Promise<string | null> {
  const { rows } = await db.query<{ old: string | null }>(
    `UPDATE preview_cards c SET image_key = $2, width = $3, height = $4, blurhash = $5, updated_at = now()
       FROM (SELECT id, image_key FROM preview_cards WHERE id = $1 FOR UPDATE) o WHERE c.id = o.id RETURNING o.image_key AS old`,
    [cardId, image.key, image.width, image.height, image.blurhash],
  );
  const old = rows[0]?.old ?? null;
  return old && old !== image.key ? old : null;
}

/**
 * Links a status to its card (replacing the card it had). Returns whether anything changed: the status's renderings
 * are then out of date.
 */
export async function attachCard(db: Queryable, statusId: string, cardId: string, url: string, withoutImage: boolean): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO preview_cards_statuses (status_id, preview_card_id, url, without_image) VALUES ($1, $2, $3, $4)
     ON CONFLICT (status_id) DO UPDATE SET preview_card_id = EXCLUDED.preview_card_id, url = EXCLUDED.url, without_image = EXCLUDED.without_image
       WHERE (preview_cards_statuses.preview_card_id, preview_cards_statuses.without_image) IS DISTINCT FROM (EXCLUDED.preview_card_id, EXCLUDED.without_image)`,
    [statusId, cardId, url, withoutImage],
  );
  return (rowCount ?? 0) > 0;
}

/** Takes a status's card away (an edit removed its link, or gave it media). Whether it had one. */
export async function detachCard(db: Queryable, statusId: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM preview_cards_statuses WHERE status_id = $1`, [statusId]);
  return (rowCount ?? 0) > 0;
}

/**
 * The card each of these statuses shows, by status id, with its author's account; a card shown without its image has
 * no image here.
 */
export async function cardsOfStatuses(db: Queryable, statusIds: string[]): Promise<Map<string, ShownPreviewCard>> {
  const out = new Map<string, ShownPreviewCard>();
  if (statusIds.length === 0) return out;
  const { rows } = await db.query<PreviewCardRow & { status_id: string; without_image: boolean }>(
    `SELECT pcs.status_id::text, pcs.without_image, ${CARD_COLUMNS_OF_C}
       FROM preview_cards_statuses pcs JOIN preview_cards c ON c.id = pcs.preview_card_id
      WHERE pcs.status_id = ANY($1::bigint[])`,
    [statusIds],
  );
  const authors = await withAuthorAccounts(db, rows);
  for (const { status_id, without_image, ...card } of rows) {
    const shown = { ...card, author_account: card.author_account_id ? (authors.get(card.author_account_id) ?? null) : null };
    out.set(status_id, without_image ? { ...shown, image_key: null, blurhash: null, width: 0, height: 0 } : shown);
  }
  return out;
}

/** The author accounts of these cards, by id (one query for all; a card has at most one). */
export async function withAuthorAccounts(db: Queryable, cards: Pick<PreviewCardRow, 'author_account_id'>[]): Promise<Map<string, AccountRow>> {
  const ids = [...new Set(cards.map((c) => c.author_account_id).filter((id): id is string => !!id))];
  if (ids.length === 0) return new Map();
  return new Map((await findAccountsByIds(db, ids)).map((a) => [a.id, a]));
}

/** The latest statuses showing a card (whose renderings change with it), at most `limit`. */
export async function statusesWithCard(db: Queryable, cardId: string, limit = 1000): Promise<string[]> {
  const { rows } = await db.query<{ status_id: string }>(
    `SELECT status_id::text FROM preview_cards_statuses WHERE preview_card_id = $1 ORDER BY status_id DESC LIMIT $2`, [cardId, limit],
  );
  return rows.map((r) => r.status_id);
}

/**
 * What the link-card job needs of a status, in one query: whether it has media (then no card, as in Mastodon) and
 * whether it shows a card now. Named: a job runs it for every post with a link.
 */
export async function statusForLinkCard(db: Queryable, statusId: string) {
  const { rows } = await db.query<{ deleted_at: Date | null; reblog_of_id: string | null; content: string; account_id: string; uri: string | null; has_media: boolean; has_card: boolean }>({
    name: 'status-for-link-card',
    text: `SELECT s.deleted_at, s.reblog_of_id::text, s.content, s.account_id::text, s.uri,
                  EXISTS (SELECT 1 FROM media_attachments m WHERE m.status_id = s.id AND m.position > 0) AS has_media,
                  EXISTS (SELECT 1 FROM preview_cards_statuses c WHERE c.status_id = s.id) AS has_card
             FROM statuses s WHERE s.id = $1`,
    values: [statusId],
  });
  return rows[0] ?? null;
}
