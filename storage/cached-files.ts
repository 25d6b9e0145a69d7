import type { Queryable } from './db.ts';

/** Copies of other servers' files on our file host (the `cached_files` ledger, and the owning rows' keys). */
export type CachedKind = 'attachment' | 'avatar' | 'header' | 'emoji';

export interface CachedFile {
  key: string;
  kind: CachedKind;
  ownerId: string;
  sourceUrl: string;
  bytes: number;
}

export async function recordCachedFiles(db: Queryable, files: CachedFile[]): Promise<void> {
  if (files.length === 0) return;
  await db.query(
    `INSERT INTO cached_files (key, kind, owner_id, source_url, bytes)
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
     ON CONFLICT (key) DO UPDATE SET source_url = EXCLUDED.source_url, bytes = EXCLUDED.bytes, cached_at = now()`,
    [files.map((f) => f.key), files.map((f) => f.kind), files.map((f) => f.ownerId), files.map((f) => f.sourceUrl), files.map((f) => f.bytes)],
  );
}

/** The keys of one owner's copies of one kind (an account's avatars, old and new). */
export async function cachedKeysOf(db: Queryable, kind: CachedKind, ownerId: string): Promise<string[]> {
  const { rows } = await db.query<{ key: string }>(`SELECT key FROM cached_files WHERE kind = $1 AND owner_id = $2 LIMIT 100`, [kind, ownerId]);
  return rows.map((r) => r.key);
}

export async function forgetCachedFiles(db: Queryable, keys: string[]): Promise<void> {
  if (keys.length > 0) await db.query(`DELETE FROM cached_files WHERE key = ANY($1::text[])`, [keys]);
}

/** Up to `limit` copies of attachments made before `before`, oldest first. */
export async function cachedAttachmentsBefore(db: Queryable, before: Date, limit: number): Promise<{ key: string; ownerId: string }[]> {
  const { rows } = await db.query<{ key: string; owner_id: string }>(
    `SELECT key, owner_id FROM cached_files WHERE kind = 'attachment' AND cached_at < $1 ORDER BY cached_at, key LIMIT $2`, [before, limit],
  );
  return rows.map((r) => ({ key: r.key, ownerId: r.owner_id }));
}

export async function cachedUsage(db: Queryable): Promise<{ kind: CachedKind; files: number; bytes: number }[]> {
  const { rows } = await db.query<{ kind: CachedKind; files: string; bytes: string }>(
    `SELECT kind, count(*) AS files, coalesce(sum(bytes), 0) AS bytes FROM cached_files GROUP BY kind ORDER BY kind`,
  );
  return rows.map((r) => ({ kind: r.kind, files: Number(r.files), bytes: Number(r.bytes) }));
}

/** A remote attachment with what deciding to copy it needs: its author's domain. */
export interface RemoteAttachment {
  id: string;
  status_id: string | null;
  type: string;
  remote_url: string;
  thumbnail_remote_url: string | null;
  original_key: string | null;
  blurhash: string | null;
  meta: Record<string, unknown>;
  domain: string;
}

export async function remoteAttachments(db: Queryable, ids: string[]): Promise<RemoteAttachment[]> {
  const { rows } = await db.query<RemoteAttachment>(
    `SELECT m.id, m.status_id, m.type, m.remote_url, m.thumbnail_remote_url, m.original_key, m.blurhash, m.meta, a.domain
       FROM media_attachments m JOIN accounts a ON a.id = m.account_id
      WHERE m.id = ANY($1::bigint[]) AND m.remote_url IS NOT NULL AND a.domain IS NOT NULL`,
    [ids],
  );
  return rows;
}

export async function remoteAttachmentIdsOfStatus(db: Queryable, statusId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM media_attachments WHERE status_id = $1 AND remote_url IS NOT NULL ORDER BY position LIMIT 16`, [statusId],
  );
  return rows.map((r) => r.id);
}

/** The copy of a remote attachment: the keys it renders with; the blurhash and sizes the sender gave are kept. */
export async function setAttachmentCopy(db: Queryable, id: string, c: { originalKey: string; originalType: string; smallKey: string | null; smallType: string | null; meta: Record<string, unknown>; blurhash: string | null; type?: string | undefined }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE media_attachments SET original_key = $2, original_type = $3, small_key = $4, small_type = $5,
            meta = meta || $6::jsonb, blurhash = coalesce(blurhash, $7), type = coalesce($8, type)
      WHERE id = $1 AND remote_url IS NOT NULL`,
    [id, c.originalKey, c.originalType, c.smallKey, c.smallType, JSON.stringify(c.meta), c.blurhash, c.type ?? null],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * A copy converted to play everywhere: the attachment names the converted file, with its own `meta.original`, only
 * while it still names the copy that was converted (not pruned or copied anew meanwhile).
 */
export async function setConvertedAttachment(db: Queryable, id: string, c: { from: string; key: string; type: string; meta: Record<string, unknown> }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE media_attachments SET original_key = $3, original_type = $4, meta = meta || jsonb_build_object('original', $5::jsonb)
      WHERE id = $1 AND remote_url IS NOT NULL AND original_key = $2`,
    [id, c.from, c.key, c.type, JSON.stringify(c.meta)],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * A remote attachment whose file cannot be shown here: `unknown`, a link to its origin, as Mastodon keeps an attachment
 * it could not download. False when it has a copy, is gone, or was already so.
 */
export async function setAttachmentUnknown(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE media_attachments SET type = 'unknown' WHERE id = $1 AND remote_url IS NOT NULL AND original_key IS NULL AND type <> 'unknown'`, [id],
  );
  return (rowCount ?? 0) > 0;
}

/** Copies removed: the attachments render from the media proxy again. Returns their statuses. */
export async function clearAttachmentCopies(db: Queryable, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ status_id: string | null }>(
    `UPDATE media_attachments SET original_key = NULL, small_key = NULL
      WHERE id = ANY($1::bigint[]) AND remote_url IS NOT NULL RETURNING status_id`,
    [ids],
  );
  return [...new Set(rows.map((r) => r.status_id).filter((s): s is string => s !== null))];
}

export interface RemoteAccountImage {
  id: string;
  domain: string;
  remote_url: string | null;
  file: string | null;
}

export async function remoteAccountImage(db: Queryable, accountId: string, kind: 'avatar' | 'header'): Promise<RemoteAccountImage | null> {
  const { rows } = await db.query<RemoteAccountImage>(
    kind === 'avatar'
      ? `SELECT id, domain, avatar_remote_url AS remote_url, avatar_file AS file FROM accounts WHERE id = $1 AND domain IS NOT NULL`
      : `SELECT id, domain, header_remote_url AS remote_url, header_file AS file FROM accounts WHERE id = $1 AND domain IS NOT NULL`,
    [accountId],
  );
  return rows[0] ?? null;
}

/** Sets a remote account's copy, only while its actor still names the URL the copy was made from. */
export async function setAccountImageCopy(db: Queryable, accountId: string, kind: 'avatar' | 'header', key: string, contentType: string, sourceUrl: string): Promise<boolean> {
  const { rowCount } = await db.query(
    kind === 'avatar'
      ? `UPDATE accounts SET avatar_file = $2, avatar_content_type = $3 WHERE id = $1 AND domain IS NOT NULL AND avatar_remote_url = $4`
      : `UPDATE accounts SET header_file = $2, header_content_type = $3 WHERE id = $1 AND domain IS NOT NULL AND header_remote_url = $4`,
    [accountId, key, contentType, sourceUrl],
  );
  return (rowCount ?? 0) > 0;
}
