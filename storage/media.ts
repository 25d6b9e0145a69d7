import type { Queryable } from './db.ts';

export type MediaType = 'image' | 'gifv' | 'video' | 'audio' | 'unknown';
export type MediaState = 'processing' | 'ready' | 'failed';

export interface MediaRow {
  id: string;
  account_id: string;
  status_id: string | null;
  type: MediaType;
  state: MediaState;
  staged_key: string | null;
  original_key: string | null;
  original_type: string | null;
  small_key: string | null;
  small_type: string | null;
  thumbnail_key: string | null;
  remote_url: string | null;
  /** Another server's preview image of its video or audio (copied as small_key with the attachment). */
  thumbnail_remote_url: string | null;
  meta: Record<string, unknown>;
  blurhash: string | null;
  description: string;
  focus_x: number;
  focus_y: number;
  failure: string | null;
  created_at: Date;
}

const COLUMNS = `id, account_id, status_id, type, state, staged_key, original_key, original_type, small_key, small_type, thumbnail_key,
  remote_url, thumbnail_remote_url, meta, blurhash, description, focus_x, focus_y, failure, created_at`;

export async function insertMedia(db: Queryable, m: { id: string; accountId: string; type: MediaType; stagedKey: string; description: string; focusX: number; focusY: number; thumbnailKey: string | null }): Promise<MediaRow> {
  const { rows } = await db.query<MediaRow>(
    `INSERT INTO media_attachments (id, account_id, type, staged_key, description, focus_x, focus_y, thumbnail_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [m.id, m.accountId, m.type, m.stagedKey, m.description, m.focusX, m.focusY, m.thumbnailKey],
  );
  return rows[0]!;
}

export async function newMediaId(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ id: string }>(`SELECT timestamp_id()::text AS id`);
  return rows[0]!.id;
}

export async function findMedia(db: Queryable, id: string): Promise<MediaRow | null> {
  const { rows } = await db.query<MediaRow>(`SELECT ${COLUMNS} FROM media_attachments WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** `type`: what processing found it to be (a video without sound is `gifv`); the upload's type when not given. */
export async function markMediaReady(db: Queryable, id: string, r: { originalKey: string; originalType: string; smallKey: string | null; smallType: string | null; meta: Record<string, unknown>; blurhash: string | null; type?: MediaType }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE media_attachments SET state = 'ready', staged_key = NULL, original_key = $2, original_type = $3, small_key = $4,
            small_type = $5, meta = $6, blurhash = $7, type = coalesce($8, type), updated_at = now()
      WHERE id = $1 AND state = 'processing'`,
    [id, r.originalKey, r.originalType, r.smallKey, r.smallType, JSON.stringify(r.meta), r.blurhash, r.type ?? null],
  );
  return rowCount === 1;
}

export async function markMediaFailed(db: Queryable, id: string, failure: string): Promise<void> {
  await db.query(`UPDATE media_attachments SET state = 'failed', staged_key = NULL, failure = $2, updated_at = now() WHERE id = $1 AND state = 'processing'`, [id, failure]);
}

export async function updateMediaDetails(db: Queryable, id: string, accountId: string, u: { description?: string | undefined; focusX?: number | undefined; focusY?: number | undefined; thumbnailKey?: string | undefined; audioColors?: object | undefined }): Promise<MediaRow | null> {
  const { rows } = await db.query<MediaRow>(
    `UPDATE media_attachments SET description = coalesce($3, description), focus_x = coalesce($4, focus_x), focus_y = coalesce($5, focus_y),
            thumbnail_key = coalesce($6, thumbnail_key), updated_at = now(),
            meta = CASE WHEN $7::jsonb IS NOT NULL AND type = 'audio' AND state = 'ready' THEN meta || jsonb_build_object('colors', $7::jsonb) ELSE meta END
      WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
    [id, accountId, u.description ?? null, u.focusX ?? null, u.focusY ?? null, u.thumbnailKey ?? null, u.audioColors ? JSON.stringify(u.audioColors) : null],
  );
  return rows[0] ?? null;
}

/** The row, locked for the rest of the transaction (so two edits of one attachment take turns). */
export async function lockMedia(db: Queryable, id: string): Promise<MediaRow | null> {
  const { rows } = await db.query<MediaRow>(`SELECT ${COLUMNS} FROM media_attachments WHERE id = $1 FOR UPDATE`, [id]);
  return rows[0] ?? null;
}

/**
 * Attaches the account's own, processed, unattached media to a status, in the order given. Returns how many were.
 * Media held by a scheduled status are attached only by its publishing (`scheduledId`).
 */
export async function attachMedia(db: Queryable, statusId: string, accountId: string, ids: string[], scheduledId: string | null = null): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await db.query(
    `UPDATE media_attachments m SET status_id = $1, position = o.position, updated_at = now()
       FROM unnest($3::bigint[]) WITH ORDINALITY AS o(id, position)
      WHERE m.id = o.id AND m.account_id = $2 AND m.status_id IS NULL AND m.state = 'ready'
        AND (m.scheduled_status_id IS NULL OR m.scheduled_status_id = $4)`,
    [statusId, accountId, ids, scheduledId],
  );
  return rowCount ?? 0;
}

/** What deciding whether files may be attached needs to know of them (services/attachments.ts), by id. */
export async function attachmentCandidates(db: Queryable, ids: readonly string[]): Promise<Map<string, Pick<MediaRow, 'id' | 'account_id' | 'status_id' | 'state' | 'type'> & { scheduled_status_id: string | null }>> {
  const { rows } = await db.query<Pick<MediaRow, 'id' | 'account_id' | 'status_id' | 'state' | 'type'> & { scheduled_status_id: string | null }>(
    `SELECT id, account_id, status_id, state, type, scheduled_status_id FROM media_attachments WHERE id = ANY($1::bigint[])`, [ids],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/** The media of statuses, in the order their posters gave. */
export async function mediaOfStatuses(db: Queryable, statusIds: string[]): Promise<Map<string, MediaRow[]>> {
  const out = new Map<string, MediaRow[]>();
  if (statusIds.length === 0) return out;
  const { rows } = await db.query<MediaRow>(
    // Position 0: taken off its status by an edit, kept for the status's history (storage/status-edits.ts).
    `SELECT ${COLUMNS} FROM media_attachments WHERE status_id = ANY($1::bigint[]) AND position > 0 ORDER BY status_id, position, id LIMIT 400`, [statusIds],
  );
  for (const r of rows) out.set(r.status_id!, [...(out.get(r.status_id!) ?? []), r]);
  return out;
}

/** Media by id, attached or not, whatever their status (a status's history shows what it had). */
export async function findMediaByIds(db: Queryable, ids: string[]): Promise<Map<string, MediaRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<MediaRow>(`SELECT ${COLUMNS} FROM media_attachments WHERE id = ANY($1::bigint[])`, [ids]);
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * The attachments of an edited status: these ids, in this order (the status's own, or the account's ready uploads
 * not attached anywhere), and the status's others set aside (position 0) for its history. Returns how many of
 * the ids were taken; fewer than asked means one was not the account's to attach.
 */
export async function reattachMedia(db: Queryable, statusId: string, accountId: string, ids: string[]): Promise<number> {
  await db.query(`UPDATE media_attachments SET position = 0, updated_at = now() WHERE status_id = $1 AND NOT (id = ANY($2::bigint[]))`, [statusId, ids]);
  if (ids.length === 0) return 0;
  const { rowCount } = await db.query(
    `UPDATE media_attachments m SET status_id = $1, position = o.position, updated_at = now()
       FROM unnest($3::bigint[]) WITH ORDINALITY AS o(id, position)
      WHERE m.id = o.id AND m.account_id = $2 AND (m.status_id = $1 OR (m.status_id IS NULL AND m.state = 'ready'))`,
    [statusId, accountId, ids],
  );
  return rowCount ?? 0;
}

/** Unattached uploads older than the cut-off, oldest first (the clean-up's work list). */
export async function abandonedMedia(db: Queryable, olderThan: Date, limit: number): Promise<MediaRow[]> {
  const { rows } = await db.query<MediaRow>(
    `SELECT ${COLUMNS} FROM media_attachments WHERE status_id IS NULL AND scheduled_status_id IS NULL AND created_at < $1 ORDER BY created_at LIMIT $2`, [olderThan, limit],
  );
  return rows;
}

export async function deleteMedia(db: Queryable, id: string): Promise<void> {
  await db.query(`DELETE FROM media_attachments WHERE id = $1 AND status_id IS NULL AND scheduled_status_id IS NULL`, [id]);
}

/** A remote status's attachment, kept as a link to where its server serves it. */
export interface RemoteMedia {
  type: MediaType;
  remoteUrl: string;
  contentType: string | null;
  description: string;
  width: number | null;
  height: number | null;
  /** As the other server computed it, and its focal point (-1..1 each way); null when it sent none. */
  blurhash?: string | null;
  focus?: { x: number; y: number } | null;
  /** A video's or audio's preview image, as the other server gives it (PeerTube's thumbnail). */
  previewUrl?: string | null;
}

export async function insertRemoteMedia(db: Queryable, statusId: string, accountId: string, media: RemoteMedia[]): Promise<void> {
  for (const [i, m] of media.entries()) {
    const meta = m.width && m.height ? { original: { width: m.width, height: m.height, size: `${m.width}x${m.height}`, aspect: m.width / m.height } } : {};
    await db.query(
      `INSERT INTO media_attachments (account_id, status_id, position, type, state, remote_url, original_type, description, meta, blurhash, focus_x, focus_y, thumbnail_remote_url)
       VALUES ($1, $2, $3, $4, 'ready', $5, $6, $7, $8, $9, $10, $11, $12)`,
      [accountId, statusId, i + 1, m.type, m.remoteUrl, m.contentType, m.description, JSON.stringify(meta), m.blurhash ?? null, m.focus?.x ?? 0, m.focus?.y ?? 0, m.previewUrl ?? null],
    );
  }
}
