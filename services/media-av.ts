import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { mediaTools, runTool, ToolFailed, type Priority, type ToolConfig } from './media-tools.ts';

/**
 * Video, audio and animated images by Mastodon's rules (MediaAttachment's styles, Paperclip::Transcoder): refused
 * above 3840x2160 worth of pixels or 120 fps (never scaled down), at most 36,000 frames out; H.264 (with AAC or no
 * sound) in yuv420p in MP4 or QuickTime passed through (its streams copied into MP4), anything else made H.264 + AAC
 * in MP4 (`+faststart`); audio always made MP3; metadata removed in every case. Other servers' video and audio that
 * would not play everywhere are made so by the same code (makePlayable). Encoding runs on one thread at idle
 * priority (services/media-tools.ts). Everything is made in a temporary folder, removed afterwards.
 */

export const MAX_VIDEO_PIXELS = 8_294_400; // 3840 x 2160
export const MAX_VIDEO_FRAME_RATE = 120;
export const MAX_VIDEO_FRAMES = 36_000;
/** More streams than a phone's video has (video, audio, a few data tracks) is refused rather than probed at length. */
const MAX_STREAMS = 16;
/** Mastodon's target for H.264: 0.11 bits per pixel at 30 frames a second, less when the size limit asks. */
const BITS_PER_PIXEL = 0.11;
const AUDIO_BITRATE = 192_000;
/** Previews of video and cover art: within 640x640, as Mastodon's `small` style of video. */
const PREVIEW_SIZE = 640;
/** Probing reads headers only: a few seconds is plenty, and it may run in a request. */
/** A probe's time limit; a test may shorten it (read at each probe). */
export const PROBE_LIMITS = { timeoutMs: 15_000 };

/** A file that cannot be used, with the reason the uploader is told. */
export class Unprocessable extends Error {}
/**
 * A program that did not finish in its time (or could not be started): it says nothing of the file, only of the
 * machine at that moment (a busy one may starve a probe at low priority). Other servers' files are tried again later
 * rather than taken for unreadable.
 */
export class ToolDidNotFinish extends Unprocessable {}

export interface ProbeStream {
  index: number;
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  nb_frames?: string;
  side_data_list?: { rotation?: number }[];
  avg_frame_rate?: string;
  r_frame_rate?: string;
  disposition?: { attached_pic?: number };
}

export interface Probe {
  streams: ProbeStream[];
  format: { format_name?: string; duration?: string; bit_rate?: string; nb_streams?: number; tags?: Record<string, string> };
}

export type AvType = 'video' | 'gifv' | 'audio';

/** A temporary folder for one file's work, removed whatever happens. */
export async function inWorkDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'media-'));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function limits(config: ToolConfig, timeoutMs = config.mediaTranscodeTimeoutMs) {
  // Outputs are capped near the upload limit (the bitrate aims below it); twice leaves room for a passed-through file.
  return { timeoutMs, memoryBytes: config.mediaTranscodeMemoryBytes, fileBytes: 2 * config.maxVideoBytes + 16 * 1024 * 1024 };
}

function need(path: string | null, name: string): string {
  if (!path) throw new Unprocessable(`${name} is not installed on this server`);
  return path;
}

async function run(config: ToolConfig, program: 'ffmpeg' | 'ffprobe' | 'heifConvert', args: string[], options: { timeoutMs?: number; stdin?: Readable; maxStdout?: number; priority?: Priority } = {}): Promise<Buffer> {
  const name = program === 'heifConvert' ? 'heif-convert' : program;
  const path = need(mediaTools(config)[program], name);
  try {
    return await runTool(path, args, { ...limits(config, options.timeoutMs), stdin: options.stdin, maxStdout: options.maxStdout, priority: options.priority });
  } catch (err) {
    if (err instanceof ToolFailed) throw new (err.reason === 'timeout' || err.reason === 'spawn' ? ToolDidNotFinish : Unprocessable)(`${name} ${err.message}`);
    throw err;
  }
}

/** ffprobe's view of a file: its container and streams. Unreadable files (and executables named .mp4) are refused. */
export async function probe(config: ToolConfig, path: string): Promise<Probe> {
  let out: Buffer;
  try {
    out = await run(config, 'ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', '-i', path], { timeoutMs: PROBE_LIMITS.timeoutMs, maxStdout: 1024 * 1024 });
  } catch (err) {
    if (err instanceof Unprocessable && !(err instanceof ToolDidNotFinish) && !/not installed/.test(err.message)) throw new Unprocessable('the file is not a video or audio file that can be read');
    throw err;
  }
  let parsed: Probe;
  try {
    parsed = JSON.parse(out.toString('utf8')) as Probe;
  } catch {
    throw new Unprocessable('the file is not a video or audio file that can be read');
  }
  if (!Array.isArray(parsed.streams) || !parsed.format) throw new Unprocessable('the file is not a video or audio file that can be read');
  if (parsed.streams.length > MAX_STREAMS) throw new Unprocessable(`files with more than ${MAX_STREAMS} streams are not supported`);
  return parsed;
}

const pictureStreams = (p: Probe) => p.streams.filter((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1);
const audioStreams = (p: Probe) => p.streams.filter((s) => s.codec_type === 'audio');

export function frameRate(rate: string | undefined): number | null {
  const m = /^(\d+)(?:\/(\d+))?$/.exec(rate ?? '');
  if (!m) return null;
  const den = m[2] === undefined ? 1 : Number(m[2]);
  return den > 0 ? Number(m[1]) / den : null;
}

/**
 * What a probed file is, by Mastodon's rules: video with sound, `gifv` without (Transcoder#update_attachment_type),
 * audio when there is no picture but its cover. Refused: no usable stream, too many pixels, too many frames a second.
 */
export function classify(p: Probe): AvType {
  const video = pictureStreams(p)[0];
  if (video) {
    const { width = 0, height = 0 } = video;
    if (width <= 0 || height <= 0) throw new Unprocessable('the video has no picture size');
    if (width * height > MAX_VIDEO_PIXELS) throw new Unprocessable(`${width}x${height} videos are not supported`);
    const fps = frameRate(video.avg_frame_rate) || frameRate(video.r_frame_rate);
    if (fps !== null && fps > MAX_VIDEO_FRAME_RATE) throw new Unprocessable(`${Math.floor(fps)}fps videos are not supported`);
    return audioStreams(p).length > 0 ? 'video' : 'gifv';
  }
  if (audioStreams(p).length > 0) return 'audio';
  throw new Unprocessable('the file has neither video nor audio');
}

/** An upload's bytes probed (in a temporary file: MP4's index may sit at its end) and classified. */
export async function probeUpload(config: ToolConfig, data: Buffer): Promise<AvType> {
  return inWorkDir(async (dir) => {
    const input = join(dir, 'input');
    await writeFile(input, data);
    return classify(await probe(config, input));
  });
}

export interface AvResult {
  type: AvType;
  original: { data: Buffer; contentType: string; extension: string; meta: Record<string, unknown> };
  /** The preview: a frame, the cover art, or a plain image (made by the caller) when null. */
  preview: Buffer | null;
}

const FFMPEG_INPUT = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y'];
/**
 * An encoding run on one thread: the decoder (before `-i`), the filters, and each output's encoder (`-threads 1`
 * after it; x264 counts its threads itself, so told too), so that one transcode takes one core of a small machine
 * however many it has, and MEDIA_TRANSCODE_CONCURRENCY says how many cores transcodes may take. Run at idle priority.
 */
const ONE_THREAD_INPUT = ['-filter_threads', '1', '-threads', '1'];
const ONE_THREAD_OUTPUT = ['-threads', '1'];
/** Every output: no global, stream or chapter metadata (titles, dates, a phone's location). */
const NO_METADATA = ['-map_metadata', '-1', '-map_metadata:s', '-1', '-map_chapters', '-1', '-fflags', '+bitexact'];

/** The `original` meta of a video, as Mastodon's: width, height, frame_rate ("30/1"), duration (s), bitrate (b/s). */
function videoMeta(p: Probe): Record<string, unknown> {
  const v = pictureStreams(p)[0];
  const duration = Number(p.format.duration);
  const bitrate = Number(p.format.bit_rate);
  // A passed-through phone video keeps its display matrix: shown turned a quarter, its shape is the other way round.
  const turned = Math.abs(v?.side_data_list?.find((d) => typeof d.rotation === 'number')?.rotation ?? 0) % 180 === 90;
  return {
    width: turned ? v?.height : v?.width, height: turned ? v?.width : v?.height, frame_rate: v?.avg_frame_rate && v.avg_frame_rate !== '0/0' ? v.avg_frame_rate : v?.r_frame_rate,
    ...(Number.isFinite(duration) ? { duration } : {}),
    ...(Number.isFinite(bitrate) ? { bitrate } : {}),
  };
}

function audioMeta(p: Probe): Record<string, unknown> {
  const duration = Number(p.format.duration);
  const bitrate = Number(p.format.bit_rate);
  return { ...(Number.isFinite(duration) ? { duration } : {}), ...(Number.isFinite(bitrate) ? { bitrate } : {}) };
}

/** H.264 + AAC in MP4, Mastodon's VIDEO_FORMAT with its bitrate rule (the size limit over the duration caps it). */
function h264Args(p: Probe, config: ToolConfig, sound: boolean): string[] {
  const v = pictureStreams(p)[0]!;
  const duration = Math.max(Number(p.format.duration) || 0, 1);
  const desired = Math.floor((v.width ?? 0) * (v.height ?? 0) * 30 * BITS_PER_PIXEL);
  const maximum = Math.floor((config.maxVideoBytes * 8) / duration) - AUDIO_BITRATE;
  const bitrate = Math.max(100_000, Math.min(desired, maximum));
  return [
    '-c:v', 'libx264', '-preset', 'veryfast', '-x264-params', 'threads=1', ...ONE_THREAD_OUTPUT, '-pix_fmt', 'yuv420p', '-vf', "scale='trunc(iw/2)*2':'trunc(ih/2)*2'",
    '-b:v', String(bitrate), '-maxrate', String(bitrate + AUDIO_BITRATE), '-bufsize', String(bitrate * 5),
    ...(sound ? ['-c:a', 'aac', '-b:a', '192k'] : ['-an']),
  ];
}

/**
 * What a file needs to play in every browser and app: nothing (H.264 in yuv420p with AAC or no sound, in MP4; MP3;
 * AAC in MP4 or ADTS), its streams copied into MP4 (the same H.264 and AAC in QuickTime, as a phone makes them), or
 * to be made anew (any other codec or container: HEVC, VP9, ProRes, Opus, Vorbis, FLAC, WebM, Ogg…). An upload's
 * video that needs nothing is re-packed all the same, for its metadata; its audio is always made MP3.
 */
export type Conversion = 'none' | 'repack' | 'transcode';

export function conversionOf(p: Probe, container: string): Conversion {
  const v = pictureStreams(p)[0];
  const a = audioStreams(p)[0];
  if (!v) {
    if (a?.codec_name === 'mp3' && container === 'audio/mpeg') return 'none';
    if (a?.codec_name === 'aac' && ['audio/mp4', 'audio/x-m4a', 'audio/aac'].includes(container)) return 'none';
    return 'transcode';
  }
  if (v.codec_name !== 'h264' || v.pix_fmt !== 'yuv420p' || (a && a.codec_name !== 'aac')) return 'transcode';
  const quickTime = container === 'video/quicktime' || (p.format.tags?.major_brand ?? '').trim() === 'qt';
  if (quickTime) return 'repack';
  return container === 'video/mp4' || container === 'video/x-m4v' ? 'none' : 'transcode';
}

/** An output of one frame (the first: Mastodon's `time: 0`) as a JPEG within 640x640, metadata removed. */
const previewOutput = (output: string) => [
  '-map', '0:v:0', '-frames:v', '1', '-an', ...NO_METADATA, ...ONE_THREAD_OUTPUT,
  '-vf', `scale='min(${PREVIEW_SIZE},iw)':'min(${PREVIEW_SIZE},ih)':force_original_aspect_ratio=decrease`, '-q:v', '3', '-f', 'image2', '-c:v', 'mjpeg', output,
];

/** An audio file's cover art as a JPEG within 640x640; null if it cannot be read. */
async function previewFrame(config: ToolConfig, input: string, output: string): Promise<Buffer | null> {
  try {
    await run(config, 'ffmpeg', [...FFMPEG_INPUT, '-i', input, ...previewOutput(output)]);
    const data = await readFile(output);
    return data.length > 0 ? data : null;
  } catch (err) {
    if (err instanceof Unprocessable || (err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** A video (or a silent one, `gifv`): passed through or transcoded, metadata removed, a preview frame. */
export async function processVideo(config: ToolConfig, data: Buffer, container: string): Promise<AvResult> {
  return inWorkDir(async (dir) => {
    const input = join(dir, 'input');
    await writeFile(input, data);
    const p = await probe(config, input);
    const type = classify(p);
    if (type === 'audio') return processAudioIn(config, dir, input, p);
    return videoIn(config, dir, input, p, type, container);
  });
}

async function videoIn(config: ToolConfig, dir: string, input: string, p: Probe, type: AvType, container: string): Promise<AvResult> {
  const output = join(dir, 'original.mp4');
  const sound = type === 'video';
  // Streams copied only read the file (a preview frame is all that is encoded): at the priority of a probe.
  const copy = conversionOf(p, container) !== 'transcode';
  // The preview frame is a second output of the same run: the file is read once.
  await run(config, 'ffmpeg', [
    ...FFMPEG_INPUT, ...(copy ? [] : ONE_THREAD_INPUT), '-i', input, '-map', '0:v:0', ...(sound ? ['-map', '0:a:0'] : []), ...(copy ? ['-c', 'copy'] : h264Args(p, config, sound)),
    '-frames:v', String(MAX_VIDEO_FRAMES), ...NO_METADATA, '-movflags', '+faststart', '-f', 'mp4', output,
    ...previewOutput(join(dir, 'small.jpg')),
  ], { priority: copy ? 'low' : 'idle' });
  return finishVideo(config, dir, output, type);
}

async function finishVideo(config: ToolConfig, dir: string, output: string, type: AvType): Promise<AvResult> {
  const out = await probe(config, output);
  const made = pictureStreams(out)[0];
  if (!made || made.nb_frames === '0') throw new Unprocessable('the video could not be made: no frame could be read');
  const preview = await readFile(join(dir, 'small.jpg')).catch(() => null);
  return { type, original: { data: await readFile(output), contentType: 'video/mp4', extension: 'mp4', meta: videoMeta(out) }, preview };
}

/**
 * An animated image made a silent looping MP4 (`gifv`), as Mastodon's GifTranscoder does for GIF. ffmpeg reads GIF
 * and APNG; animated WebP (which this ffmpeg cannot decode) comes as raw frames on standard input.
 */
export async function processAnimation(config: ToolConfig, input: { file: Buffer } | { raw: Readable; width: number; height: number; fps: number; frames: number }): Promise<AvResult> {
  return inWorkDir(async (dir) => {
    const output = join(dir, 'original.mp4');
    let source: string[];
    let p: Probe;
    if ('file' in input) {
      const path = join(dir, 'input');
      await writeFile(path, input.file);
      p = await probe(config, path);
      source = ['-i', path];
    } else {
      p = { streams: [{ index: 0, codec_type: 'video', width: input.width, height: input.height, avg_frame_rate: `${input.fps}/1` }], format: { duration: String(input.frames / input.fps) } };
      source = ['-f', 'rawvideo', '-pix_fmt', 'rgba', '-s', `${input.width}x${input.height}`, '-framerate', String(input.fps), '-i', 'pipe:0'];
    }
    const v = pictureStreams(p)[0];
    if (!v) throw new Unprocessable('the image could not be read');
    if ((v.width ?? 0) * (v.height ?? 0) > MAX_VIDEO_PIXELS) throw new Unprocessable(`${v.width}x${v.height} videos are not supported`);
    await run(config, 'ffmpeg', [
      ...FFMPEG_INPUT, ...ONE_THREAD_INPUT, ...source, '-map', '0:v:0', ...h264Args(p, config, false),
      '-frames:v', String(MAX_VIDEO_FRAMES), ...NO_METADATA, '-movflags', '+faststart', '-f', 'mp4', output,
      ...previewOutput(join(dir, 'small.jpg')),
    ], { stdin: 'raw' in input ? input.raw : undefined, priority: 'idle' });
    return finishVideo(config, dir, output, 'gifv');
  });
}

/** Audio: always made MP3 (Mastodon's `q:a 2`), metadata removed; its cover art, if any, as the preview. */
export async function processAudio(config: ToolConfig, data: Buffer): Promise<AvResult> {
  return inWorkDir(async (dir) => {
    const input = join(dir, 'input');
    await writeFile(input, data);
    const p = await probe(config, input);
    if (classify(p) !== 'audio') return processVideo(config, data, '');
    return processAudioIn(config, dir, input, p);
  });
}

async function processAudioIn(config: ToolConfig, dir: string, input: string, p: Probe): Promise<AvResult> {
  const output = join(dir, 'original.mp3');
  await run(config, 'ffmpeg', [
    ...FFMPEG_INPUT, ...ONE_THREAD_INPUT, '-i', input, '-map', '0:a:0', '-vn', '-c:a', 'libmp3lame', '-q:a', '2', ...ONE_THREAD_OUTPUT,
    ...NO_METADATA, '-id3v2_version', '0', '-write_xing', '1', '-f', 'mp3', output,
  ], { priority: 'idle' });
  const out = await probe(config, output);
  if (audioStreams(out).length === 0) throw new Unprocessable('the audio could not be made');
  // The cover art, as Mastodon's ImageExtractor takes it: the file's picture stream.
  const cover = p.streams.some((s) => s.codec_type === 'video') ? await previewFrame(config, input, join(dir, 'cover.jpg')) : null;
  const meta = audioMeta(out);
  return { type: 'audio', original: { data: await readFile(output), contentType: 'audio/mpeg', extension: 'mp3', meta }, preview: cover };
}

export interface RemoteAv {
  /** What the file is: `video` (sound) or `gifv` (none) for a video, `audio`. */
  type: AvType;
  /** Mastodon's `original` meta of the file as sent. */
  meta: Record<string, unknown>;
  /** The first frame of a video, or an audio file's cover art; null where audio has none. */
  preview: Buffer | null;
  /** What it needs to play everywhere (makePlayable does it, on the media queue). */
  conversion: Conversion;
}

/**
 * Another server's video or audio, as copied here (stored as sent): probed under the same limits as an upload, its
 * `original` meta and a preview taken from it. A file that is not what its sender said (a video with no picture,
 * audio with moving pictures, anything ffprobe cannot read, or beyond the upload limits) is refused.
 */
export async function probeRemote(config: ToolConfig, data: Buffer, claimed: 'video' | 'audio', container: string): Promise<RemoteAv> {
  return inWorkDir(async (dir) => {
    const input = join(dir, 'input');
    await writeFile(input, data);
    const p = await probe(config, input);
    const type = classify(p);
    if (claimed === 'audio' && type !== 'audio') throw new Unprocessable('the file said to be audio has moving pictures');
    if (claimed === 'video' && type === 'audio') throw new Unprocessable('the file said to be a video has no picture');
    const conversion = conversionOf(p, container);
    if (type === 'audio') {
      const cover = p.streams.some((st) => st.codec_type === 'video') ? await previewFrame(config, input, join(dir, 'cover.jpg')) : null;
      return { type, meta: audioMeta(p), preview: cover, conversion };
    }
    const frame = await previewFrame(config, input, join(dir, 'small.jpg'));
    if (!frame) throw new Unprocessable('the video could not be read: no frame could be taken from it');
    return { type, meta: videoMeta(p), preview: frame, conversion };
  });
}

/**
 * Another server's video or audio (as copied here) made to play everywhere by the uploads' code and limits: video
 * H.264 + AAC in MP4 (`+faststart`; H.264 and AAC in QuickTime only re-packed), audio MP3, metadata removed. Null
 * when it plays everywhere as it is.
 */
export async function makePlayable(config: ToolConfig, data: Buffer, container: string): Promise<AvResult | null> {
  return inWorkDir(async (dir) => {
    const input = join(dir, 'input');
    await writeFile(input, data);
    const p = await probe(config, input);
    const type = classify(p);
    if (conversionOf(p, container) === 'none') return null;
    return type === 'audio' ? processAudioIn(config, dir, input, p) : videoIn(config, dir, input, p, type, container);
  });
}

/** A HEIC/HEIF photo made a JPEG by heif-convert (libheif), for the image path to orient, strip and size. */
export async function heicToJpeg(config: ToolConfig, data: Buffer): Promise<Buffer> {
  return inWorkDir(async (dir) => {
    const input = join(dir, 'input.heic');
    const output = join(dir, 'output.jpg');
    await writeFile(input, data);
    await run(config, 'heifConvert', ['-q', '92', input, output]);
    // A file of several images (a burst) is written output-1.jpg, output-2.jpg…: the first is the photo.
    const written = (await readdir(dir)).filter((f) => /^output(-\d+)?\.jpg$/.test(f)).sort((a, b) => a.length - b.length || a.localeCompare(b, 'en', { numeric: true }));
    if (!written[0]) throw new Unprocessable('the photo could not be read');
    return readFile(join(dir, written[0]));
  });
}
