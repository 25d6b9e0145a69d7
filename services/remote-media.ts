import { createHash } from 'node:crypto';
import type { AppContext } from '../context.ts';
import { domainPolicy } from './domain-policy.ts';
import { guardedGet, LinkFetchError, PrivateAddressError } from './guarded-fetch.ts';
import { avFormatOf, blurhashOf, dims, plainPreview, renderImage, Undecodable } from './media.ts';
import { backgroundPictures } from './picture-process.ts';
import { makePlayable, probeRemote, ToolDidNotFinish, Unprocessable, type Conversion } from './media-av.ts';
import { mediaTools } from './media-tools.ts';
import { colorsOf } from './media-colors.ts';
import { loadSharp } from './sharp.ts';
import {
  cachedAttachmentsBefore, cachedKeysOf, cachedUsage, clearAttachmentCopies, forgetCachedFiles, recordCachedFiles, remoteAccountImage,
  remoteAttachmentIdsOfStatus, remoteAttachments, setAccountImageCopy, setAttachmentCopy, setAttachmentUnknown, setConvertedAttachment, type CachedKind,
} from '../storage/cached-files.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import { processProfileImage } from './images.ts';
import { ApiError } from '../errors.ts';
import { EMOJI_SIZE_LIMIT, EmojiRefused, processEmojiImage } from './custom-emojis.ts';
import { findRemoteEmoji, setRemoteEmojiCopy } from '../storage/custom-emojis.ts';

/**
 * Copies of other servers' media on our file host, so that no reader's app or browser loads anything from another
 * server (their addresses stay here, and a small server is not loaded by every reader of every server that knows
 * it). Attachments are copied when their post arrives (the cacheRemoteMedia job) and on first view through the
 * media proxy (http/media-proxy.ts) when the copy is missing or was pruned; avatars and headers when their actor is
 * stored. Fetches are guarded (public addresses only, capped, time-limited); a domain whose media is rejected is
 * never fetched. Video and audio that would not play everywhere (HEVC, VP9, Opus in Ogg…) are converted after they
 * are copied, on the media queue (convertAttachment), the copy served meanwhile. Copies older than
 * MEDIA_CACHE_RETENTION_DAYS are removed in batches (pruneCachedMedia).
 */
type Ctx = Pick<AppContext, 'db' | 'redis' | 'config' | 'fileHost' | 'versions'> & { tracking?: AppContext['tracking']; jobBacklog?: AppContext['jobBacklog']; jobs?: AppContext['jobs'] };

/**
 * Who waits for a copy: a reader's app through the media proxy ('now'), or nobody yet (the jobs queued when a post or
 * an actor arrives: a background copy, with when it was queued).
 */
export type CopyUrgency = 'now' | { queuedAt: number };
/** The longest after being queued that a background copy waits for fan-out to be quiet before it does its work anyway. */
const BACKGROUND_DEFER_MS = 10_000;
/** The picture work of background copies, one at a time in this process (each takes a core while it runs). */
let backgroundTurn: Promise<unknown> = Promise.resolve();

/** A background copy's wait for quiet fan-out (services/job-backlog.ts `quiet`), bounded from when it was queued. */
function fanOutQuiet(ctx: Ctx, urgency: CopyUrgency): Promise<void> {
  if (urgency === 'now' || !ctx.jobBacklog) return Promise.resolve();
  return ctx.jobBacklog.quiet(urgency.queuedAt + BACKGROUND_DEFER_MS);
}

/**
 * Decoding and encoding a picture: at once for a reader waiting on the proxy; for a background copy, one at a time,
 * each once this process's fan-out is quiet, so that a burst of posts with pictures reaches followers' homes at the
 * pace of one without, and the copies follow it (within about BACKGROUND_DEFER_MS of their post at the latest).
 */
function pictureWork<T>(ctx: Ctx, urgency: CopyUrgency, work: () => Promise<T>): Promise<T> {
  if (urgency === 'now') return work();
  const turn = backgroundTurn.then(async () => {
    await fanOutQuiet(ctx, urgency);
    return work();
  });
  backgroundTurn = turn.catch(() => {});
  return turn;
}

/**
 * An attachment's picture rendered: at once and here for a reader waiting on the proxy; for a background copy, in its
 * turn (pictureWork) and in the picture process at the lowest CPU priority (services/picture-process.ts), so that it
 * takes only the CPU requests leave idle.
 */
function renderPicture(ctx: Ctx, urgency: CopyUrgency, body: Buffer) {
  return pictureWork(ctx, urgency, () => (urgency === 'now' ? renderImage(body) : backgroundPictures.render(body)));
}

/** Limits of one fetch; a test may shorten them (read at each fetch). */
export const REMOTE_MEDIA_LIMITS = { timeoutMs: 30_000, redirects: 3 };
/** After a copy could not be made, the proxy answers 404 for this long rather than asking the other server again. */
const FAILURE_MEMORY_SECONDS = 600;

export type CopyOutcome = 'copied' | 'present' | 'refused' | 'gone';

interface Log {
  warn(obj: object, msg: string): void;
}

const userAgent = (ctx: Ctx) => `fedi-server/${ctx.config.softwareVersion} (+${ctx.config.publicUrl}/)`;
const urlHash = (url: string) => createHash('sha256').update(url).digest('hex').slice(0, 16);
const failureKey = (ctx: Ctx, what: string) => `${ctx.config.redisPrefix}media-cache-failed:${what}`;

/** One copy at a time of the same thing in this process: the proxy's first viewers and the job share it. */
const inFlight = new Map<string, Promise<CopyOutcome>>();
function once(what: string, copy: () => Promise<CopyOutcome>): Promise<CopyOutcome> {
  let running = inFlight.get(what);
  if (!running) {
    running = copy().finally(() => inFlight.delete(what));
    inFlight.set(what, running);
  }
  return running;
}

/** Whether a copy was tried and failed lately (the proxy then answers 404 at once). */
export async function recentlyFailed(ctx: Ctx, what: string): Promise<boolean> {
  return (await ctx.redis.exists(failureKey(ctx, what))) === 1;
}

async function refused(ctx: Ctx, what: string, url: string, err: unknown, log?: Log): Promise<CopyOutcome> {
  if (!(err instanceof LinkFetchError || err instanceof PrivateAddressError || err instanceof Undecodable || err instanceof ToolDidNotFinish || isNetworkError(err))) throw err;
  log?.warn({ url, reason: (err as Error).message }, 'remote media not copied');
  await ctx.redis.set(failureKey(ctx, what), '1', 'EX', FAILURE_MEMORY_SECONDS);
  return 'refused';
}

function isNetworkError(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return (err as Error).name === 'AbortError' || (err as Error).name === 'TimeoutError' || (typeof code === 'string' && /^(E[A-Z]+|UND_ERR_.*|ERR_TLS.*|ERR_SSL.*|CERT_.*|DEPTH_ZERO.*|SELF_SIGNED.*|UNABLE_TO_.*)$/.test(code));
}

/**
 * An attachment whose file was fetched but cannot be shown here (not a format taken, nothing ffprobe or sharp can read,
 * not what its sender says, beyond the upload limits) is refused and becomes `unknown`, a link to its origin, as
 * Mastodon keeps one it could not download: readers' apps show it as such, not as a video that never loads, and it is
 * not fetched again. What failed on the way (the network, the other server) or on this machine (a probe that did not
 * finish in its time) is tried again later.
 */
async function notShowable(ctx: Ctx, m: { id: string; status_id: string | null; remote_url: string }, err: unknown, log?: Log): Promise<CopyOutcome> {
  const outcome = await refused(ctx, `attachment:${m.id}`, m.remote_url, err, log);
  if (err instanceof Undecodable && (await setAttachmentUnknown(ctx.db, m.id)) && m.status_id) await ctx.versions.bump({ statuses: [m.status_id] });
  return outcome;
}

/** Copies a remote attachment (an image is re-encoded without metadata and given a preview; video and audio as sent). */
export function copyAttachment(ctx: Ctx, mediaId: string, log?: Log, urgency: CopyUrgency = 'now'): Promise<CopyOutcome> {
  return once(`attachment:${mediaId}`, async () => {
    const [m] = await remoteAttachments(ctx.db, [mediaId]);
    if (!m || m.type === 'unknown') return 'gone';
    if (m.original_key) return 'present';
    if (await domainPolicy(ctx).rejectsMedia(m.domain)) return 'refused';
    const image = m.type === 'image';
    let fetched;
    try {
      fetched = await guardedGet(new URL(m.remote_url), {
        accept: image ? (t) => t.startsWith('image/') && t !== 'image/svg+xml' : (t) => t.startsWith('video/') || t.startsWith('audio/') || t === 'application/octet-stream' || t === 'application/ogg' || t.startsWith('image/gif'),
        acceptHeader: image ? 'image/*' : m.type === 'audio' ? 'audio/*' : 'video/*, image/gif',
        maxBytes: image ? ctx.config.maxImageBytes : ctx.config.maxVideoBytes,
        allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx), ...REMOTE_MEDIA_LIMITS,
      });
    } catch (err) {
      return refused(ctx, `attachment:${mediaId}`, m.remote_url, err, log);
    }
    const base = `cache/media/${mediaId}/${urlHash(m.remote_url)}`;
    let copy;
    if (image) {
      let r;
      try {
        r = await renderPicture(ctx, urgency, fetched.body);
      } catch (err) {
        return notShowable(ctx, m, err, log);
      }
      copy = {
        files: [{ key: `${base}/original.${r.original.extension}`, data: r.original.data, type: r.original.contentType }, { key: `${base}/small.webp`, data: r.small.data, type: 'image/webp' }],
        originalType: r.original.contentType, smallType: 'image/webp' as string | null,
        meta: { original: dims(r.original.width, r.original.height), small: dims(r.small.width, r.small.height) }, blurhash: r.blurhash,
      };
    } else {
      const av = await avFormatOf(fetched.body);
      if (!av) return notShowable(ctx, m, new Undecodable(`not a video or audio file (${fetched.contentType})`), log);
      const original = { key: `${base}/original.${av.extension}`, data: fetched.body, type: av.mime };
      const tools = mediaTools(ctx.config);
      // The preview image the other server gave (PeerTube's thumbnail) is the small image when it can be had; else,
      // with the media programs, a frame of the file.
      const given = m.thumbnail_remote_url ? await copyPreview(ctx, m.thumbnail_remote_url, urgency, log) : null;
      if (!tools.ffmpeg || !tools.ffprobe) {
        // Without the media programs (the start-up notice says so) the file is kept as sent, unprobed and unconverted.
        copy = given
          ? { files: [original, { key: `${base}/small.webp`, data: given.data, type: 'image/webp' }], originalType: av.mime, smallType: 'image/webp' as string | null, meta: { small: dims(given.width, given.height) }, blurhash: given.blurhash, type: undefined }
          : { files: [original], originalType: av.mime, smallType: null, meta: {}, blurhash: null, type: undefined };
      } else {
        let probed;
        try {
          probed = await probeRemote(ctx.config, fetched.body, m.type === 'audio' ? 'audio' : 'video', av.mime);
        } catch (err) {
          return notShowable(ctx, m, err instanceof Unprocessable && !(err instanceof ToolDidNotFinish) ? new Undecodable(err.message) : err, log);
        }
        const preview = given?.data ?? probed.preview ?? await plainPreview();
        const size = given ?? await imageSize(preview);
        const colors = probed.type === 'audio' ? await colorsOf(preview) : null;
        const small = given ? { key: `${base}/small.webp`, type: 'image/webp' } : { key: `${base}/small.jpg`, type: 'image/jpeg' };
        copy = {
          files: [original, { ...small, data: preview }], originalType: av.mime, smallType: small.type as string | null,
          // The file's own figures replace what the sender said of it; `small` is our preview's.
          meta: { original: probed.meta, small: dims(size.width, size.height), ...(colors ? { colors } : {}) }, blurhash: given?.blurhash ?? await blurhashOf(preview),
          // A video without sound is a gifv, as Mastodon's transcoder makes it.
          type: probed.type,
          conversion: probed.conversion,
        };
      }
    }
    const set = await storeCopy(ctx, mediaId, m.remote_url, copy.files, {
      originalKey: copy.files[0]!.key, originalType: copy.originalType, smallKey: copy.files[1]?.key ?? null, smallType: copy.smallType,
      // An image's sizes and blurhash stay where its sender gave them (the copy is the same picture).
      meta: image && m.meta.original ? {} : copy.meta, blurhash: copy.blurhash, type: 'type' in copy ? copy.type : undefined,
    }, 'conversion' in copy ? copy.conversion : 'none');
    if (!set) return 'gone';
    if (m.status_id) await ctx.versions.bump({ statuses: [m.status_id] });
    return 'copied';
  });
}

/** A video's or audio's preview image, fetched and re-encoded as an image attachment's small one is; null when it cannot be had. */
async function copyPreview(ctx: Ctx, url: string, urgency: CopyUrgency, log?: Log): Promise<{ data: Buffer; width: number; height: number; blurhash: string | null } | null> {
  try {
    const fetched = await guardedGet(new URL(url), {
      accept: (t) => t.startsWith('image/') && t !== 'image/svg+xml', acceptHeader: 'image/*', maxBytes: ctx.config.maxImageBytes,
      allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx), ...REMOTE_MEDIA_LIMITS,
    });
    const r = await renderPicture(ctx, urgency, fetched.body);
    return { data: r.small.data, width: r.small.width, height: r.small.height, blurhash: r.blurhash };
  } catch (err) {
    if (!(err instanceof LinkFetchError || err instanceof PrivateAddressError || err instanceof Undecodable || err instanceof ToolDidNotFinish || isNetworkError(err))) throw err;
    log?.warn({ url, reason: (err as Error).message }, 'remote preview image not copied');
    return null;
  }
}

/**
 * Every remote attachment of a status (the cacheRemoteMedia job, queued when the status arrives at `queuedAt`): each
 * fetched once fan-out is quiet, as its picture work is.
 */
export async function copyStatusMedia(ctx: Ctx, statusId: string, log?: Log, queuedAt = Date.now()): Promise<CopyOutcome[]> {
  const outcomes: CopyOutcome[] = [];
  const urgency = { queuedAt };
  for (const id of await remoteAttachmentIdsOfStatus(ctx.db, statusId)) {
    await fanOutQuiet(ctx, urgency);
    outcomes.push(await copyAttachment(ctx, id, log, urgency));
  }
  return outcomes;
}

/** Copies a remote account's avatar or header as its actor names it now; older copies of it are removed. */
export function copyAccountImage(ctx: Ctx, accountId: string, kind: 'avatar' | 'header', log?: Log, urgency: CopyUrgency = 'now'): Promise<CopyOutcome> {
  return once(`${kind}:${accountId}`, async () => {
    const a = await remoteAccountImage(ctx.db, accountId, kind);
    if (!a || !a.remote_url) return 'gone';
    if (a.file) return 'present';
    if (await domainPolicy(ctx).rejectsMedia(a.domain)) return 'refused';
    let processed;
    try {
      const fetched = await guardedGet(new URL(a.remote_url), {
        accept: (t) => t.startsWith('image/') && t !== 'image/svg+xml', acceptHeader: 'image/*', maxBytes: ctx.config.maxImageBytes,
        allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx), ...REMOTE_MEDIA_LIMITS,
      });
      processed = await pictureWork(ctx, urgency, () => processProfileImage(kind, fetched.body));
    } catch (err) {
      // processProfileImage refuses what is not an image it can read with a 422 meant for uploads.
      return refused(ctx, `${kind}:${accountId}`, a.remote_url, err instanceof ApiError ? new Undecodable(err.message) : err, log);
    }
    const key = `cache/accounts/${accountId}/${kind}-${urlHash(a.remote_url)}.${processed.extension}`;
    const older = (await cachedKeysOf(ctx.db, kind, accountId)).filter((k) => k !== key);
    await ctx.fileHost.put(key, processed.data, processed.contentType);
    await recordCachedFiles(ctx.db, [{ key, kind, ownerId: accountId, sourceUrl: a.remote_url, bytes: processed.data.length }]);
    if (!(await setAccountImageCopy(ctx.db, accountId, kind, key, processed.contentType, a.remote_url))) {
      await removeFiles(ctx, [key]);
      return 'gone';
    }
    await removeFiles(ctx, older);
    await ctx.versions.bump({ accounts: [accountId] });
    return 'copied';
  });
}

/** Both of a remote account's images (the cacheAccountImages job, queued at `queuedAt`). */
export async function copyAccountImages(ctx: Ctx, accountId: string, log?: Log, queuedAt = Date.now()): Promise<CopyOutcome[]> {
  const urgency = { queuedAt };
  return [await copyAccountImage(ctx, accountId, 'avatar', log, urgency), await copyAccountImage(ctx, accountId, 'header', log, urgency)];
}

/**
 * Copies another server's emoji image (checked as an operator's upload is: PNG, GIF or WebP under 256 KB, with a still
 * PNG of its first frame); older copies of it are removed. Its URLs are the media proxy's whether or not a copy
 * exists (services/custom-emojis.ts), so nothing rendered changes.
 */
export function copyEmoji(ctx: Ctx, emojiId: string, log?: Log): Promise<CopyOutcome> {
  return once(`emoji:${emojiId}`, async () => {
    const e = await findRemoteEmoji(ctx.db, emojiId);
    if (!e || !e.image_remote_url || !e.domain || e.disabled) return 'gone';
    if (e.image_key && e.static_key) return 'present';
    if (await domainPolicy(ctx).rejectsMedia(e.domain)) return 'refused';
    let processed;
    try {
      const fetched = await guardedGet(new URL(e.image_remote_url), {
        accept: (t) => t === 'image/png' || t === 'image/gif' || t === 'image/webp' || t === 'application/octet-stream', acceptHeader: 'image/png, image/gif, image/webp',
        maxBytes: EMOJI_SIZE_LIMIT, allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx), ...REMOTE_MEDIA_LIMITS,
      });
      processed = await processEmojiImage(fetched.body);
    } catch (err) {
      return refused(ctx, `emoji:${emojiId}`, e.image_remote_url, err instanceof EmojiRefused ? new Undecodable(err.message) : err, log);
    }
    const base = `cache/emojis/${emojiId}/${urlHash(e.image_remote_url)}`;
    const files = [{ key: `${base}.${processed.extension}`, data: processed.data, type: processed.contentType }, { key: `${base}-static.png`, data: processed.staticPng, type: 'image/png' }];
    const older = (await cachedKeysOf(ctx.db, 'emoji', emojiId)).filter((k) => !files.some((f) => f.key === k));
    for (const f of files) await ctx.fileHost.put(f.key, f.data, f.type);
    await recordCachedFiles(ctx.db, files.map((f) => ({ key: f.key, kind: 'emoji' as const, ownerId: emojiId, sourceUrl: e.image_remote_url!, bytes: f.data.length })));
    if (!(await setRemoteEmojiCopy(ctx.db, emojiId, { imageKey: files[0]!.key, staticKey: files[1]!.key, contentType: processed.contentType, size: processed.data.length, sourceUrl: e.image_remote_url }))) {
      await removeFiles(ctx, files.map((f) => f.key));
      return 'gone';
    }
    await removeFiles(ctx, older);
    return 'copied';
  });
}

/**
 * Puts a copy's files on the file host, records them, and points the attachment at them, with its conversion job
 * (transcodeRemoteMedia) when the file would not play everywhere, in one transaction; a failure on the way removes
 * what was put, so nothing half stored is left. False (and nothing kept) when the attachment is gone meanwhile.
 */
async function storeCopy(ctx: Ctx, mediaId: string, sourceUrl: string, files: { key: string; data: Buffer; type: string }[], c: Parameters<typeof setAttachmentCopy>[2], conversion: Conversion): Promise<boolean> {
  try {
    for (const f of files) await ctx.fileHost.put(f.key, f.data, f.type);
    await recordCachedFiles(ctx.db, files.map((f) => ({ key: f.key, kind: 'attachment' as const, ownerId: mediaId, sourceUrl, bytes: f.data.length })));
    // One statement needs no transaction of its own (two round trips less a copy, most copies having no conversion).
    const set = conversion === 'none'
      ? ((await setAttachmentCopy(ctx.db, mediaId, c)) ? { job: null } : null)
      : await transaction(ctx.db, async (tx): Promise<{ job: OutboxRow | null } | null> => {
        if (!(await setAttachmentCopy(tx, mediaId, c))) return null;
        return { job: await addToOutbox(tx, 'transcodeRemoteMedia', { mediaId }) };
      });
    if (set) {
      if (set.job) await ctx.jobs?.enqueue(set.job).catch(() => {}); // the outbox sweeper queues it otherwise
      return true;
    }
  } catch (err) {
    await removeFiles(ctx, files.map((f) => f.key));
    throw err;
  }
  await removeFiles(ctx, files.map((f) => f.key));
  return false;
}

export type ConversionOutcome = 'converted' | 'playable' | 'kept' | 'gone';

/**
 * The transcodeRemoteMedia job: another server's video or audio, as copied here, made to play everywhere by the
 * uploads' code and limits (services/media-av.ts makePlayable, on the media queue at MEDIA_TRANSCODE_CONCURRENCY).
 * The copy is served until the converted file is stored; then the attachment names it (its `meta.original` the new
 * file's), the copy is removed and the status's renderings are refreshed. A file that cannot be converted keeps its
 * copy, with a warning ('kept'); a copy pruned or replaced meanwhile is left alone ('gone').
 */
export async function convertAttachment(ctx: Ctx, mediaId: string, log?: Log): Promise<ConversionOutcome> {
  const [m] = await remoteAttachments(ctx.db, [mediaId]);
  if (!m?.original_key || (m.type !== 'video' && m.type !== 'gifv' && m.type !== 'audio')) return 'gone';
  const data = await ctx.fileHost.get(m.original_key);
  if (!data) return 'gone';
  const av = await avFormatOf(data);
  let made;
  try {
    if (!av) throw new Unprocessable('not a video or audio file');
    made = await makePlayable(ctx.config, data, av.mime);
  } catch (err) {
    if (!(err instanceof Unprocessable)) throw err;
    log?.warn({ mediaId, url: m.remote_url, reason: err.message }, 'remote media not converted: its copy is served as sent');
    return 'kept';
  }
  if (!made) return 'playable';
  const key = `${m.original_key.slice(0, m.original_key.lastIndexOf('/'))}/converted.${made.original.extension}`;
  await ctx.fileHost.put(key, made.original.data, made.original.contentType);
  try {
    await recordCachedFiles(ctx.db, [{ key, kind: 'attachment', ownerId: mediaId, sourceUrl: m.remote_url, bytes: made.original.data.length }]);
    // Only while the attachment still names the copy converted (not pruned, not copied anew meanwhile).
    if (!(await setConvertedAttachment(ctx.db, mediaId, { from: m.original_key, key, type: made.original.contentType, meta: made.original.meta }))) {
      await removeFiles(ctx, [key]);
      return 'gone';
    }
  } catch (err) {
    await removeFiles(ctx, [key]);
    throw err;
  }
  if (m.status_id) await ctx.versions.bump({ statuses: [m.status_id] });
  await removeFiles(ctx, [m.original_key]);
  return 'converted';
}

async function imageSize(picture: Buffer): Promise<{ width: number; height: number }> {
  const meta = await (await loadSharp())(picture).metadata();
  return { width: meta.width ?? 0, height: meta.height ?? 0 };
}

async function removeFiles(ctx: Ctx, keys: string[]): Promise<void> {
  for (const key of keys) await ctx.fileHost.delete(key).catch(() => {});
  await forgetCachedFiles(ctx.db, keys);
}

/**
 * Removes copies of attachments made before `before`, `batch` at a time (each batch: files, then the rows, then the
 * statuses' renderings), at most `maxBatches` batches a call. The attachments render from the media proxy again and
 * are copied anew when someone looks. Returns how many files were removed.
 */
export async function pruneCachedMedia(ctx: Ctx, before: Date, o: { batch?: number; maxBatches?: number } = {}): Promise<number> {
  const batch = o.batch ?? 500;
  let removed = 0;
  for (let i = 0; i < (o.maxBatches ?? Infinity); i++) {
    const files = await cachedAttachmentsBefore(ctx.db, before, batch);
    if (files.length === 0) break;
    const owners = [...new Set(files.map((f) => f.ownerId))];
    // Rendering stops naming the files before they go; a copy made meanwhile has another key and is left alone.
    const statuses = await clearAttachmentCopies(ctx.db, owners);
    await ctx.versions.bump({ statuses });
    await removeFiles(ctx, files.map((f) => f.key));
    removed += files.length;
  }
  return removed;
}

/** The repeating job: copies older than the retention period go (none when MEDIA_CACHE_RETENTION_DAYS is 0). */
export async function pruneExpiredMedia(ctx: Ctx, now = new Date()): Promise<number> {
  const days = ctx.config.mediaCacheRetentionDays;
  if (days <= 0) return 0;
  // A bounded run an hour: the next run goes on where this one stopped.
  return pruneCachedMedia(ctx, new Date(now.getTime() - days * 86_400_000), { batch: 500, maxBatches: 40 });
}

export async function mediaCacheUsage(ctx: Pick<Ctx, 'db'>): Promise<{ kind: CachedKind; files: number; bytes: number }[]> {
  return cachedUsage(ctx.db);
}
