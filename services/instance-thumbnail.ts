// The instance's thumbnail, as Mastodon makes its own: the operator's image (INSTANCE_THUMBNAIL) cropped to
// 1200×630 (@1x) and 2400×1260 (@2x), with a blurhash. Without one, a plain generated banner takes its place
// (Mastodon shows its own preview.png then). Made once per process and served from memory: the setting only
// changes with a restart.
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { loadSharp } from './sharp.ts';
import { encode as encodeBlurhash } from 'blurhash';
import { ConfigError, type Config } from '../config.ts';

export interface ThumbnailImage {
  data: Buffer;
  contentType: string;
}

export interface InstanceThumbnail {
  '@1x': ThumbnailImage;
  '@2x': ThumbnailImage;
  blurhash: string;
  /** A short digest of the images: part of their URLs, so a new thumbnail is never served from a stale cache. */
  version: string;
}

const SIZES = { '@1x': { width: 1200, height: 630 }, '@2x': { width: 2400, height: 1260 } } as const;
/** Larger files are refused at start: a thumbnail is a banner, not an archive. */
const MAX_SOURCE_BYTES = 32 * 1024 * 1024;

/** A banner with no words (fonts may be missing on the host): a diagonal gradient and a speech bubble. */
const DEFAULT_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="630" viewBox="0 0 1200 630">
  <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#563acc"/><stop offset="1" stop-color="#2b90d9"/></linearGradient></defs>
  <rect width="1200" height="630" fill="url(#g)"/>
  <path d="M470 190h260a50 50 0 0 1 50 50v120a50 50 0 0 1-50 50H590l-70 55v-55h-50a50 50 0 0 1-50-50V240a50 50 0 0 1 50-50z" fill="#fff" fill-opacity="0.92"/>
  <circle cx="530" cy="300" r="18" fill="#563acc"/><circle cx="600" cy="300" r="18" fill="#4066d2"/><circle cx="670" cy="300" r="18" fill="#2b90d9"/>
</svg>`;

async function make(source: Buffer): Promise<InstanceThumbnail> {
  const sharp = await loadSharp();
  const meta = await sharp(source, { limitInputPixels: 16_384 * 16_384 }).metadata();
  // PNG keeps transparency; everything else becomes JPEG, as photos are.
  const png = meta.hasAlpha === true || meta.format === 'svg';
  const render = async (size: { width: number; height: number }): Promise<ThumbnailImage> => {
    const pipeline = sharp(source, { failOn: 'truncated', limitInputPixels: 16_384 * 16_384, density: meta.format === 'svg' ? 144 : undefined })
      .rotate().resize({ ...size, fit: 'cover' });
    return png
      ? { data: await pipeline.png().toBuffer(), contentType: 'image/png' }
      : { data: await pipeline.jpeg({ quality: 85 }).toBuffer(), contentType: 'image/jpeg' };
  };
  const one = await render(SIZES['@1x']);
  const two = await render(SIZES['@2x']);
  const pixels = await sharp(one.data).resize({ width: 32, height: 32, fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const blurhash = encodeBlurhash(new Uint8ClampedArray(pixels.data), pixels.info.width, pixels.info.height, 4, 3);
  const version = createHash('sha256').update(one.data).update(two.data).digest('hex').slice(0, 12);
  return { '@1x': one, '@2x': two, blurhash, version };
}

const made = new WeakMap<Config, Promise<InstanceThumbnail>>();
let generated: Promise<InstanceThumbnail> | undefined;

/**
 * The thumbnail for these settings. A configured file that is not an image the server can read is a
 * ConfigError naming INSTANCE_THUMBNAIL (start-up awaits this when the setting is given).
 */
export function instanceThumbnail(config: Config): Promise<InstanceThumbnail> {
  let thumbnail = made.get(config);
  if (!thumbnail) {
    thumbnail = (async () => {
      if (!config.instanceThumbnail) return (generated ??= make(Buffer.from(DEFAULT_SVG)));
      const source = await readFile(config.instanceThumbnail).catch((err: Error) => {
        throw new ConfigError('INSTANCE_THUMBNAIL', `cannot read "${config.instanceThumbnail}": ${err.message}`);
      });
      if (source.length > MAX_SOURCE_BYTES) throw new ConfigError('INSTANCE_THUMBNAIL', `larger than ${MAX_SOURCE_BYTES / 1024 / 1024} MB`);
      try {
        return await make(source);
      } catch (err) {
        throw new ConfigError('INSTANCE_THUMBNAIL', `not an image this server can read: ${(err as Error).message}`);
      }
    })();
    made.set(config, thumbnail);
  }
  return thumbnail;
}

/** Where the thumbnail is served (`@1x`, `@2x`), versioned by its content. */
export function thumbnailUrl(config: Config, t: InstanceThumbnail, size: '@1x' | '@2x'): string {
  const ext = t[size].contentType === 'image/png' ? 'png' : 'jpg';
  return `${config.publicUrl}/instance/thumbnail${size}.${ext}?v=${t.version}`;
}
