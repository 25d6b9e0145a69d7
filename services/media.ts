import { loadSharp } from './sharp.ts';
import { encode as encodeBlurhash } from 'blurhash';
import type { Db } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import type { FileHost } from '../storage/filehost/index.ts';
import type { JobQueues } from '../jobs/queues.ts';
import { addToOutbox } from '../storage/outbox.ts';
import { abandonedMedia, deleteMedia, findMedia, insertMedia, lockMedia, markMediaFailed, markMediaReady, newMediaId, updateMediaDetails, type MediaRow } from '../storage/media.ts';
import { randomBytes } from 'node:crypto';
import { unprocessable } from '../errors.ts';
import type { Config } from '../config.ts';

export interface MediaDeps {
  db: Db;
  fileHost: FileHost;
  jobs: JobQueues;
  config: Pick<Config, 'maxImageBytes' | 'maxVideoBytes'>;
}

/** Video and audio are stored as sent (no transcoding yet), by what their bytes are. */
const AV_TYPES: Record<string, { type: 'video' | 'audio'; extension: string }> = {
  'video/mp4': { type: 'video', extension: 'mp4' },
  'video/webm': { type: 'video', extension: 'webm' },
  'video/quicktime': { type: 'video', extension: 'mov' },
  'audio/mpeg': { type: 'audio', extension: 'mp3' },
  'audio/ogg': { type: 'audio', extension: 'ogg' },
  'audio/opus': { type: 'audio', extension: 'opus' },
  'audio/wav': { type: 'audio', extension: 'wav' },
  'audio/x-wav': { type: 'audio', extension: 'wav' },
  'audio/flac': { type: 'audio', extension: 'flac' },
  'audio/x-flac': { type: 'audio', extension: 'flac' },
  'audio/mp4': { type: 'audio', extension: 'm4a' },
  'audio/x-m4a': { type: 'audio', extension: 'm4a' },
  'audio/webm': { type: 'audio', extension: 'weba' },
};

const megabytes = (bytes: number) => `${Math.floor(bytes / 1024 / 1024)} MB`;

/** What an upload is, by its content: an image sharp reads, or a video or audio container; null for anything else. */
async function kindOf(data: Buffer): Promise<{ type: 'image' | 'video' | 'audio'; mime: string } | null> {
  const sharp = await loadSharp();
  try {
    const format = (await sharp(data, { limitInputPixels: MAX_INPUT_PIXELS }).metadata()).format;
    if (format && format in IMAGE_FORMATS) return { type: 'image', mime: IMAGE_FORMATS[format]!.contentType };
  } catch {
    // not an image sharp can read: perhaps video or audio
  }
  const sniffed = await (await import('file-type')).fileTypeFromBuffer(data); // file-type loaded at the first upload
  const av = sniffed ? AV_TYPES[sniffed.mime] : undefined;
  return av && sniffed ? { type: av.type, mime: sniffed.mime } : null;
}

/** Image formats taken, by what sharp reads in the bytes (AVIF is read as `heif`), and how each is stored. */
const IMAGE_FORMATS: Record<string, { contentType: string; extension: string }> = {
  jpeg: { contentType: 'image/jpeg', extension: 'jpg' },
  png: { contentType: 'image/png', extension: 'png' },
  gif: { contentType: 'image/gif', extension: 'gif' },
  webp: { contentType: 'image/webp', extension: 'webp' },
  heif: { contentType: 'image/avif', extension: 'avif' },
};

/** What uploads may be, by content (the instance entity's supported_mime_types). */
export const SUPPORTED_MIME_TYPES: readonly string[] = [...Object.values(IMAGE_FORMATS).map((f) => f.contentType), ...Object.keys(AV_TYPES)];

/** Decompression bombs are refused before decoding. */
const MAX_INPUT_PIXELS = 16_384 * 16_384;
/** Mastodon's caps: originals to 3840×2160 worth of pixels, previews to 480×480 worth. */
export const ORIGINAL_PIXELS = 3840 * 2160;
const SMALL_PIXELS = 480 * 480;

export interface UploadDetails {
  description: string;
  focusX: number;
  focusY: number;
  /** A custom preview image (for video and audio, or to replace an image's own). */
  thumbnail?: Buffer | undefined;
}

/** A custom thumbnail, made into a preview at once (it is small) and stored under a fresh key. */
async function storeThumbnail(deps: MediaDeps, mediaId: string, data: Buffer): Promise<string> {
  if (data.length > deps.config.maxImageBytes) throw unprocessable(`Validation failed: Thumbnail file size must be less than ${megabytes(deps.config.maxImageBytes)}`);
  let preview: Buffer;
  const sharp = await loadSharp();
  try {
    const meta = await sharp(data, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    if (!meta.format || !(meta.format in IMAGE_FORMATS) || !meta.width || !meta.height) throw new Error('not an image');
    const size = fit(meta.width, meta.height, SMALL_PIXELS);
    preview = await sharp(data, { failOn: 'truncated', limitInputPixels: MAX_INPUT_PIXELS }).rotate().resize({ width: size.width, height: size.height, fit: 'inside' }).webp({ quality: 80 }).toBuffer();
  } catch {
    throw unprocessable('Validation failed: Thumbnail content type is invalid');
  }
  const key = `media/${mediaId}/thumbnail-${randomBytes(6).toString('hex')}.webp`;
  await deps.fileHost.put(key, preview, 'image/webp');
  return key;
}

/** PUT /api/v1/media/:id: description, focus and thumbnail of the owner's unattached upload. */
export async function updateMedia(deps: MediaDeps, accountId: string, id: string, u: { description?: string | undefined; focusX?: number | undefined; focusY?: number | undefined; thumbnail?: Buffer | undefined }): Promise<MediaRow | null> {
  const thumbnailKey = u.thumbnail ? await storeThumbnail(deps, id, u.thumbnail) : undefined;
  try {
    const { media, replaced } = await transaction(deps.db, async (tx) => {
      const before = await lockMedia(tx, id);
      if (!before || before.account_id !== accountId || before.status_id !== null) return { media: null, replaced: null };
      const media = await updateMediaDetails(tx, id, accountId, { description: u.description, focusX: u.focusX, focusY: u.focusY, thumbnailKey });
      return { media, replaced: thumbnailKey ? before.thumbnail_key : null };
    });
    if (!media && thumbnailKey) await deps.fileHost.delete(thumbnailKey).catch(() => {});
    if (replaced) await deps.fileHost.delete(replaced).catch(() => {});
    return media;
  } catch (err) {
    if (thumbnailKey) await deps.fileHost.delete(thumbnailKey).catch(() => {});
    throw err;
  }
}

/**
 * POST /api/v2/media: checks the file by its content at once, stages it on the file host (which web and worker
 * processes both reach), and records it with a processing job in one transaction. Returns the new attachment.
 */
export async function acceptUpload(deps: MediaDeps, accountId: string, data: Buffer, details: UploadDetails): Promise<MediaRow> {
  if (data.length === 0) throw unprocessable('Validation failed: File is empty');
  const kind = await kindOf(data);
  if (!kind) throw unprocessable('Validation failed: File content type is invalid');
  const limit = kind.type === 'image' ? deps.config.maxImageBytes : deps.config.maxVideoBytes;
  if (data.length > limit) throw unprocessable(`Validation failed: File file size must be less than ${megabytes(limit)}`);
  const id = await newMediaId(deps.db);
  const thumbnailKey = details.thumbnail ? await storeThumbnail(deps, id, details.thumbnail) : null;
  // Unguessable, as some buckets serve everything: the staged file still has its metadata (a photo's location).
  const stagedKey = `staging/${id}-${randomBytes(16).toString('hex')}`;
  await deps.fileHost.put(stagedKey, data, 'application/octet-stream');
  try {
    const { media, outbox } = await transaction(deps.db, async (tx) => {
      const media = await insertMedia(tx, { id, accountId, type: kind.type, stagedKey, description: details.description, focusX: details.focusX, focusY: details.focusY, thumbnailKey });
      return { media, outbox: await addToOutbox(tx, 'processMedia', { mediaId: id }) };
    });
    await deps.jobs.enqueue(outbox).catch(() => {}); // the outbox sweeper queues it otherwise
    return media;
  } catch (err) {
    await deps.fileHost.delete(stagedKey).catch(() => {});
    if (thumbnailKey) await deps.fileHost.delete(thumbnailKey).catch(() => {});
    throw err;
  }
}

/**
 * Waits (bounded) for an upload's processing job, as an app polls `GET /api/v1/media/:id`: for a form that posts
 * the file and the status at once. The row as it is then; still `processing` when the time ran out.
 */
export async function whenProcessed(deps: Pick<MediaDeps, 'db'>, id: string, timeoutMs = 20_000): Promise<MediaRow | null> {
  const until = Date.now() + timeoutMs;
  for (let wait = 50; ; wait = Math.min(wait * 2, 500)) {
    const media = await findMedia(deps.db, id);
    if (!media || media.state !== 'processing' || Date.now() >= until) return media;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

export class Undecodable extends Error {}

/**
 * The processing job: orientation applied, metadata (EXIF location…) dropped, capped in size, a small preview, meta
 * and blurhash, both files on the file host, the attachment marked ready. File names come from the attachment id, so
 * a job that runs twice writes the same two files. A file that cannot be decoded fails the attachment once; file-host
 * errors throw, and the job is retried.
 */
export async function processMedia(deps: MediaDeps, mediaId: string): Promise<void> {
  const media = await findMedia(deps.db, mediaId);
  if (!media || media.state !== 'processing' || !media.staged_key) return;
  const staged = await deps.fileHost.get(media.staged_key);
  if (!staged) {
    await markMediaFailed(deps.db, mediaId, 'the uploaded file is gone');
    return;
  }
  if (media.type === 'video' || media.type === 'audio') {
    await storeAsSent(deps, media, staged);
    return;
  }
  let result;
  try {
    result = await renderImage(staged);
  } catch (err) {
    if (!(err instanceof Undecodable)) throw err;
    await markMediaFailed(deps.db, mediaId, err.message);
    await deps.fileHost.delete(media.staged_key).catch(() => {});
    return;
  }
  const originalKey = `media/${mediaId}/original.${result.original.extension}`;
  const smallKey = `media/${mediaId}/small.webp`;
  await deps.fileHost.put(originalKey, result.original.data, result.original.contentType);
  await deps.fileHost.put(smallKey, result.small.data, 'image/webp');
  const meta = {
    original: dims(result.original.width, result.original.height),
    small: dims(result.small.width, result.small.height),
    focus: { x: media.focus_x, y: media.focus_y },
  };
  await markMediaReady(deps.db, mediaId, { originalKey, originalType: result.original.contentType, smallKey, smallType: 'image/webp', meta, blurhash: result.blurhash });
  await deps.fileHost.delete(media.staged_key).catch(() => {});
}

/** A video or audio container by its bytes (the kinds uploads may be), or null. */
export async function avFormatOf(data: Buffer): Promise<{ type: 'video' | 'audio'; mime: string; extension: string } | null> {
  const sniffed = await (await import('file-type')).fileTypeFromBuffer(data);
  const av = sniffed ? AV_TYPES[sniffed.mime] : undefined;
  return av && sniffed ? { type: av.type, mime: sniffed.mime, extension: av.extension } : null;
}

/** Video and audio: kept as sent (their container checked when accepted); no preview until transcoding exists. */
async function storeAsSent(deps: MediaDeps, media: MediaRow, data: Buffer): Promise<void> {
  const sniffed = await (await import('file-type')).fileTypeFromBuffer(data); // file-type loaded at the first upload
  const av = sniffed ? AV_TYPES[sniffed.mime] : undefined;
  if (!av || !sniffed) {
    await markMediaFailed(deps.db, media.id, 'the file is not a video or audio file that can be read');
    await deps.fileHost.delete(media.staged_key!).catch(() => {});
    return;
  }
  const originalKey = `media/${media.id}/original.${av.extension}`;
  await deps.fileHost.put(originalKey, data, sniffed.mime);
  await markMediaReady(deps.db, media.id, {
    originalKey, originalType: sniffed.mime, smallKey: null, smallType: null, meta: { focus: { x: media.focus_x, y: media.focus_y } }, blurhash: null,
  });
  await deps.fileHost.delete(media.staged_key!).catch(() => {});
}

export function dims(width: number, height: number) {
  return { width, height, size: `${width}x${height}`, aspect: width / height };
}

function fit(width: number, height: number, maxPixels: number): { width: number; height: number } {
  if (width * height <= maxPixels) return { width, height };
  const scale = Math.sqrt(maxPixels / (width * height));
  return { width: Math.max(1, Math.floor(width * scale)), height: Math.max(1, Math.floor(height * scale)) };
}

export async function renderImage(input: Buffer) {
  const sharp = await loadSharp();
  let meta;
  try {
    meta = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
  } catch {
    throw new Undecodable('the file is not an image that can be read');
  }
  const format = IMAGE_FORMATS[meta.format ?? ''];
  if (!format || !meta.width || !meta.height) throw new Undecodable('the file is not an image that can be read');
  const animated = (meta.format === 'gif' || meta.format === 'webp') && (meta.pages ?? 1) > 1;
  try {
    // rotate() applies the EXIF orientation; sharp writes no metadata unless asked, so EXIF (location…) is gone.
    const oriented = (meta.orientation ?? 1) >= 5 ? { width: meta.height, height: meta.width } : { width: meta.width, height: meta.height };
    const size = fit(oriented.width, animated ? (meta.pageHeight ?? oriented.height) : oriented.height, ORIGINAL_PIXELS);
    const base = () => sharp(input, { animated, failOn: 'truncated', limitInputPixels: MAX_INPUT_PIXELS }).rotate();
    let pipeline = base().resize({ width: size.width, height: size.height, fit: 'inside', withoutEnlargement: true });
    pipeline = meta.format === 'jpeg' ? pipeline.jpeg({ quality: 90 })
      : meta.format === 'png' ? pipeline.png()
      : meta.format === 'gif' ? pipeline.gif()
      : meta.format === 'webp' ? pipeline.webp({ quality: 90 })
      : pipeline.avif({ quality: 70 });
    const original = await pipeline.toBuffer({ resolveWithObject: true });
    const smallSize = fit(original.info.width, animated ? (original.info.pageHeight ?? original.info.height) : original.info.height, SMALL_PIXELS);
    const small = await sharp(original.data, { failOn: 'truncated' }).resize({ width: smallSize.width, height: smallSize.height, fit: 'inside' }).webp({ quality: 80 }).toBuffer({ resolveWithObject: true });
    const pixels = await sharp(small.data).resize({ width: 32, height: 32, fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const blurhash = encodeBlurhash(new Uint8ClampedArray(pixels.data), pixels.info.width, pixels.info.height, 4, 3);
    return {
      original: { data: original.data, contentType: format.contentType, extension: format.extension, width: original.info.width, height: animated ? (original.info.pageHeight ?? original.info.height) : original.info.height },
      small: { data: small.data, width: small.info.width, height: small.info.height },
      blurhash,
    };
  } catch (err) {
    throw new Undecodable(`the image could not be processed: ${(err as Error).message}`);
  }
}

/** Uploads never attached to a status within a day are removed, files first, a batch at a time (a repeating job). */
export async function removeAbandonedMedia(deps: MediaDeps, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - 24 * 3600 * 1000);
  let removed = 0;
  for (;;) {
    const batch = await abandonedMedia(deps.db, cutoff, 200);
    for (const m of batch) {
      for (const key of [m.staged_key, m.original_key, m.small_key, m.thumbnail_key]) if (key) await deps.fileHost.delete(key);
      await deleteMedia(deps.db, m.id);
    }
    removed += batch.length;
    if (batch.length < 200) return removed;
  }
}
