import { loadSharp } from './sharp.ts';
import { encode as encodeBlurhash } from 'blurhash';
import { fit, IMAGE_FORMATS, MAX_INPUT_PIXELS, ORIGINAL_PIXELS, renderImage, SMALL_PIXELS, Undecodable } from './image-rendering.ts';
import type { Db } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import type { FileHost } from '../storage/filehost/index.ts';
import type { JobQueues } from '../jobs/queues.ts';
import { addToOutbox } from '../storage/outbox.ts';
import { abandonedMedia, deleteMedia, findMedia, insertMedia, lockMedia, markMediaFailed, markMediaReady, newMediaId, updateMediaDetails, type MediaRow } from '../storage/media.ts';
import { randomBytes } from 'node:crypto';
import { unprocessable } from '../errors.ts';
import type { Config } from '../config.ts';
import { mediaTools, type ToolConfig } from './media-tools.ts';
import { colorsOf } from './media-colors.ts';
import { heicToJpeg, MAX_VIDEO_PIXELS, probeUpload, processAnimation, processAudio, processVideo, Unprocessable, type AvResult } from './media-av.ts';

export interface MediaDeps {
  db: Db;
  fileHost: FileHost;
  jobs: JobQueues;
  config: Pick<Config, 'maxImageBytes' | 'maxVideoBytes'> & ToolConfig;
}

/** Video and audio containers taken, by what their bytes are; ffmpeg makes them MP4 or MP3 (services/media-av.ts). */
const AV_TYPES: Record<string, { type: 'video' | 'audio'; extension: string }> = {
  'video/mp4': { type: 'video', extension: 'mp4' },
  'video/webm': { type: 'video', extension: 'webm' },
  'video/quicktime': { type: 'video', extension: 'mov' },
  'video/x-m4v': { type: 'video', extension: 'm4v' },
  'video/ogg': { type: 'video', extension: 'ogv' },
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
  'audio/aac': { type: 'audio', extension: 'aac' },
};

/**
 * What file-type says a file is, without parameters: it names Opus in Ogg `audio/ogg; codecs=opus`, which is Ogg
 * audio as any other (ffprobe reads the codec).
 */
async function sniff(data: Buffer): Promise<string | null> {
  const sniffed = await (await import('file-type')).fileTypeFromBuffer(data); // file-type loaded at the first use
  return sniffed ? sniffed.mime.split(';')[0]!.trim().toLowerCase() : null;
}

/** HEIC/HEIF photos (HEVC inside), made JPEG by heif-convert; AVIF (AV1 inside) is read by sharp itself. */
const HEIC_TYPES = ['image/heic', 'image/heif'];

const megabytes = (bytes: number) => `${Math.floor(bytes / 1024 / 1024)} MB`;

/**
 * How an upload is processed, by its content: `image` by sharp (today's path, in the job's own process); the rest by
 * the machine's programs in child processes, on the media queue: `heic` (heif-convert, then as an image), `animation`
 * (an animated GIF, PNG or WebP, made a silent MP4: gifv), `av` (video or audio, by ffprobe and ffmpeg).
 */
export type Processing = 'image' | 'heic' | 'animation' | 'av';

interface Kind { type: 'image' | 'gifv' | 'video' | 'audio'; mime: string; processing: Processing; width?: number; height?: number }

/** Whether a PNG is animated (APNG): an `acTL` chunk before its first `IDAT`. */
function isApng(data: Buffer): boolean {
  let at = 8;
  while (at + 8 <= data.length) {
    const length = data.readUInt32BE(at);
    const type = data.toString('latin1', at + 4, at + 8);
    if (type === 'acTL') return true;
    if (type === 'IDAT' || type === 'IEND') return false;
    at += 12 + length;
  }
  return false;
}

/** What an upload is, by its content; null for anything not taken. Animated images are gifv only where ffmpeg is. */
async function kindOf(data: Buffer, config: ToolConfig): Promise<Kind | null> {
  const sharp = await loadSharp();
  try {
    const meta = await sharp(data, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    const format = meta.format;
    if (format === 'heif' && meta.compression === 'hevc') return { type: 'image', mime: 'image/heic', processing: 'heic' };
    if (format && format in IMAGE_FORMATS) {
      const animated = ((format === 'gif' || format === 'webp') && (meta.pages ?? 1) > 1) || (format === 'png' && isApng(data));
      const tools = mediaTools(config);
      if (animated && tools.ffmpeg && tools.ffprobe) return { type: 'gifv', mime: IMAGE_FORMATS[format]!.contentType, processing: 'animation', width: meta.width, height: meta.pageHeight ?? meta.height };
      return { type: 'image', mime: IMAGE_FORMATS[format]!.contentType, processing: 'image' };
    }
  } catch {
    // not an image sharp can read: perhaps video, audio or a HEIC photo
  }
  const mime = await sniff(data);
  if (mime && HEIC_TYPES.includes(mime)) return { type: 'image', mime, processing: 'heic' };
  const av = mime ? AV_TYPES[mime] : undefined;
  return av && mime ? { type: av.type, mime, processing: 'av' } : null;
}


// Kept here for their callers: the image rendering is its own module, loaded alone by a child process.
export { ORIGINAL_PIXELS, renderImage, Undecodable };

/** What uploads may be, by content (the instance entity's supported_mime_types). */
export const SUPPORTED_MIME_TYPES: readonly string[] = [...Object.values(IMAGE_FORMATS).map((f) => f.contentType), ...HEIC_TYPES, ...Object.keys(AV_TYPES)];


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
  // A new picture for audio gives it new colours (applied only to processed audio).
  const colors = u.thumbnail ? (await colorsOf(u.thumbnail)) ?? undefined : undefined;
  try {
    const { media, replaced } = await transaction(deps.db, async (tx) => {
      const before = await lockMedia(tx, id);
      if (!before || before.account_id !== accountId || before.status_id !== null) return { media: null, replaced: null };
      const media = await updateMediaDetails(tx, id, accountId, { description: u.description, focusX: u.focusX, focusY: u.focusY, thumbnailKey, audioColors: colors });
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
  const kind = await kindOf(data, deps.config);
  if (!kind) throw unprocessable('Validation failed: File content type is invalid');
  const limit = kind.type === 'image' ? deps.config.maxImageBytes : deps.config.maxVideoBytes;
  if (data.length > limit) throw unprocessable(`Validation failed: File file size must be less than ${megabytes(limit)}`);
  const type = await checkBeforeStaging(deps.config, data, kind);
  const id = await newMediaId(deps.db);
  const thumbnailKey = details.thumbnail ? await storeThumbnail(deps, id, details.thumbnail) : null;
  // Unguessable, as some buckets serve everything: the staged file still has its metadata (a photo's location).
  const stagedKey = `staging/${id}-${randomBytes(16).toString('hex')}`;
  await deps.fileHost.put(stagedKey, data, 'application/octet-stream');
  try {
    const { media, outbox } = await transaction(deps.db, async (tx) => {
      const media = await insertMedia(tx, { id, accountId, type, stagedKey, description: details.description, focusX: details.focusX, focusY: details.focusY, thumbnailKey });
      // Transcodes wait their turn on the media queue (MEDIA_TRANSCODE_CONCURRENCY); images are quick, on fan-out's.
      return { media, outbox: await addToOutbox(tx, kind.processing === 'image' ? 'processMedia' : 'transcodeMedia', { mediaId: id }) };
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

/**
 * What can be told at once is: a program missing, a video's size or frame rate over Mastodon's limits, a file
 * ffprobe cannot read (an executable named .mp4). Returns the attachment's type (a silent video is `gifv`).
 */
async function checkBeforeStaging(config: ToolConfig, data: Buffer, kind: Kind): Promise<Kind['type']> {
  if (kind.processing === 'image') return kind.type;
  const tools = mediaTools(config);
  if (kind.processing === 'heic') {
    if (!tools.heifConvert) throw unprocessable('Validation failed: HEIC photos cannot be processed on this server (heif-convert is not installed)');
    return kind.type;
  }
  if (!tools.ffmpeg || !tools.ffprobe) throw unprocessable('Validation failed: video and audio cannot be processed on this server (ffmpeg is not installed)');
  if (kind.processing === 'animation') {
    if ((kind.width ?? 0) * (kind.height ?? 0) > MAX_VIDEO_PIXELS) throw unprocessable(`Validation failed: ${kind.width}x${kind.height} videos are not supported`);
    return kind.type;
  }
  try {
    return await probeUpload(config, data);
  } catch (err) {
    if (err instanceof Unprocessable) throw unprocessable(`Validation failed: ${err.message}`);
    throw err;
  }
}


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
  const kind = await kindOf(staged, deps.config);
  if (kind && kind.processing !== 'image') {
    await processWithTools(deps, media, staged, kind);
    return;
  }
  let result;
  try {
    result = await renderImage(staged);
  } catch (err) {
    if (!(err instanceof Undecodable)) throw err;
    await failProcessing(deps, media, err.message);
    return;
  }
  await storeImage(deps, media, result);
}

async function storeImage(deps: MediaDeps, media: MediaRow, result: Awaited<ReturnType<typeof renderImage>>): Promise<void> {
  const originalKey = `media/${media.id}/original.${result.original.extension}`;
  const smallKey = `media/${media.id}/small.webp`;
  await deps.fileHost.put(originalKey, result.original.data, result.original.contentType);
  await deps.fileHost.put(smallKey, result.small.data, 'image/webp');
  const meta = {
    original: dims(result.original.width, result.original.height),
    small: dims(result.small.width, result.small.height),
    focus: { x: media.focus_x, y: media.focus_y },
  };
  await markMediaReady(deps.db, media.id, { originalKey, originalType: result.original.contentType, smallKey, smallType: 'image/webp', meta, blurhash: result.blurhash, type: 'image' });
  await deps.fileHost.delete(media.staged_key!).catch(() => {});
}

/**
 * An upload that cannot be processed: its staged file removed first, then the failure recorded, so that whoever sees
 * the failure finds nothing left of it (a crash in between leaves it processing with its file gone, which the job's
 * retry records as failed).
 */
async function failProcessing(deps: MediaDeps, media: MediaRow, reason: string): Promise<void> {
  await deps.fileHost.delete(media.staged_key!).catch(() => {});
  await markMediaFailed(deps.db, media.id, reason);
}

/**
 * HEIC photos, animated images, video and audio: made in child processes (services/media-av.ts), everything in
 * memory or a temporary folder until it is done, so a file that fails leaves nothing on the file host.
 */
async function processWithTools(deps: MediaDeps, media: MediaRow, staged: Buffer, kind: Kind): Promise<void> {
  const fail = (reason: string) => failProcessing(deps, media, reason);
  try {
    if (kind.processing === 'heic') {
      await storeImage(deps, media, await renderImage(await heicToJpeg(deps.config, staged)));
      return;
    }
    let result: AvResult;
    if (kind.processing === 'animation') result = await processAnimation(deps.config, await animationInput(staged, kind).catch((e: Error) => { throw new Undecodable(`the image could not be read: ${e.message}`); }));
    else if (kind.type === 'audio') result = await processAudio(deps.config, staged);
    else result = await processVideo(deps.config, staged, kind.mime);
    await storeAv(deps, media, result);
  } catch (err) {
    if (err instanceof Unprocessable || err instanceof Undecodable) return fail(err.message);
    throw err;
  }
}

/** GIF and APNG as files for ffmpeg; animated WebP (which Debian's ffmpeg 5 cannot decode) as sharp's raw frames. */
async function animationInput(data: Buffer, kind: Kind): Promise<Parameters<typeof processAnimation>[1]> {
  if (kind.mime !== 'image/webp') return { file: data };
  const sharp = await loadSharp();
  const meta = await sharp(data, { animated: true, limitInputPixels: MAX_INPUT_PIXELS }).metadata();
  const frames = meta.pages ?? 1;
  const delays = (meta.delay ?? []).filter((d) => d > 0);
  const averageDelay = delays.length > 0 ? delays.reduce((a, b) => a + b, 0) / delays.length : 100;
  const fps = Math.min(60, Math.max(1, Math.round(1000 / averageDelay)));
  // Streamed a row of frames at a time into ffmpeg: never the whole animation in this process's memory.
  const raw = sharp(data, { animated: true, limitInputPixels: MAX_INPUT_PIXELS }).ensureAlpha().raw();
  return { raw, width: meta.width!, height: meta.pageHeight ?? meta.height!, fps, frames };
}

/** The blurhash of a preview picture (4x3 components, as Mastodon's). */
export async function blurhashOf(picture: Buffer): Promise<string> {
  const sharp = await loadSharp();
  const pixels = await sharp(picture).resize({ width: 32, height: 32, fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return encodeBlurhash(new Uint8ClampedArray(pixels.data), pixels.info.width, pixels.info.height, 4, 3);
}

/** A plain preview for audio without cover art (Mastodon's clients show the poster's avatar instead). */
export async function plainPreview(): Promise<Buffer> {
  const sharp = await loadSharp();
  return sharp({ create: { width: 400, height: 400, channels: 3, background: '#3a3f4b' } }).jpeg({ quality: 80 }).toBuffer();
}

async function storeAv(deps: MediaDeps, media: MediaRow, result: AvResult): Promise<void> {
  const sharp = await loadSharp();
  const preview = result.preview ?? await plainPreview();
  const previewMeta = await sharp(preview).metadata();
  // The uploaded thumbnail, when there is one, is what is shown: its blurhash too.
  const custom = media.thumbnail_key ? await deps.fileHost.get(media.thumbnail_key) : null;
  const blurhash = await blurhashOf(custom ?? preview);
  const originalKey = `media/${media.id}/original.${result.original.extension}`;
  const smallKey = `media/${media.id}/small.jpg`;
  await deps.fileHost.put(originalKey, result.original.data, result.original.contentType);
  await deps.fileHost.put(smallKey, preview, 'image/jpeg');
  // Audio's colours come from the picture shown with it (Mastodon's ColorExtractor on the thumbnail).
  const colors = result.type === 'audio' ? await colorsOf(custom ?? preview) : null;
  const meta = {
    original: result.original.meta,
    small: dims(previewMeta.width!, previewMeta.height!),
    ...(colors ? { colors } : {}),
    focus: { x: media.focus_x, y: media.focus_y },
  };
  await markMediaReady(deps.db, media.id, { originalKey, originalType: result.original.contentType, smallKey, smallType: 'image/jpeg', meta, blurhash, type: result.type });
  await deps.fileHost.delete(media.staged_key!).catch(() => {});
}

/** A video or audio container by its bytes (the kinds uploads may be), or null. */
export async function avFormatOf(data: Buffer): Promise<{ type: 'video' | 'audio'; mime: string; extension: string } | null> {
  const mime = await sniff(data);
  const av = mime ? AV_TYPES[mime] : undefined;
  return av && mime ? { type: av.type, mime, extension: av.extension } : null;
}

export function dims(width: number, height: number) {
  return { width, height, size: `${width}x${height}`, aspect: width / height };
}



/**
 * Uploads never attached to a status within a day are removed, a batch at a time (a repeating job): each row first,
 * then its files, so no backup's dump names a file it lacks (storage/file-deletions.ts).
 */
export async function removeAbandonedMedia(deps: MediaDeps, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - 24 * 3600 * 1000);
  let removed = 0;
  for (;;) {
    const batch = await abandonedMedia(deps.db, cutoff, 200);
    for (const m of batch) {
      await deleteMedia(deps.db, m.id);
      for (const key of [m.staged_key, m.original_key, m.small_key, m.thumbnail_key]) if (key) await deps.fileHost.delete(key);
    }
    removed += batch.length;
    if (batch.length < 200) return removed;
  }
}
