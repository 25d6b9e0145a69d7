// The instance's thumbnail, as Mastodon makes its own: the operator's image (INSTANCE_THUMBNAIL) cropped to
// 1200×630 (@1x) and 2400×1260 (@2x), with a blurhash. Without one, a plain generated banner takes its place
// (Mastodon shows its own preview.png then). Made once per process and served from memory: the setting only
// changes with a restart. The default banner's entity (its blurhash and version) is known without making it, so
// that answering the instance entity does not load sharp (libvips stays mapped, ~15 MB resident, once loaded): its
// images are made when first asked for.
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { loadSharp } from './sharp.ts';
import { encode as encodeBlurhash } from 'blurhash';
import { ConfigError, type Config } from '../config.ts';

export interface ThumbnailImage {
  /** The image's bytes (made at the first call for the default banner). */
  data: () => Promise<Buffer>;
  contentType: string;
}

interface MadeImage {
  data: Buffer;
  contentType: string;
}

interface Made {
  '@1x': MadeImage;
  '@2x': MadeImage;
  blurhash: string;
  version: string;
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

/**
 * The default banner's blurhash, as makeThumbnail() computes it from DEFAULT_SVG (test/http/instance-extras.test.ts
 * checks that they agree: change both together).
 */
const DEFAULT_BLURHASH = 'LFBg~Ez}02Rr+-oLM|a#02WC~nt6';

/** The images and blurhash of an image file, or of the default banner's SVG. */
export async function makeThumbnail(source: Buffer): Promise<Made> {
  const sharp = await loadSharp();
  const meta = await sharp(source, { limitInputPixels: 16_384 * 16_384 }).metadata();
  // PNG keeps transparency; everything else becomes JPEG, as photos are.
  const png = meta.hasAlpha === true || meta.format === 'svg';
  const render = async (size: { width: number; height: number }): Promise<MadeImage> => {
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
let defaultImages: Promise<Made> | undefined;

/** The default banner, whatever the settings: its PNGs made at the first call for either. */
const defaultThumbnail: InstanceThumbnail = (() => {
  const image = (size: '@1x' | '@2x'): ThumbnailImage => ({
    contentType: 'image/png',
    data: async () => (await (defaultImages ??= makeThumbnail(Buffer.from(DEFAULT_SVG))))[size].data,
  });
  // Its URLs change with the banner's source and sizes (made from them alone, the images change only with them).
  const version = createHash('sha256').update(DEFAULT_SVG).update(JSON.stringify(SIZES)).digest('hex').slice(0, 12);
  return { '@1x': image('@1x'), '@2x': image('@2x'), blurhash: DEFAULT_BLURHASH, version };
})();

const served = (m: Made): InstanceThumbnail => ({
  '@1x': { contentType: m['@1x'].contentType, data: async () => m['@1x'].data },
  '@2x': { contentType: m['@2x'].contentType, data: async () => m['@2x'].data },
  blurhash: m.blurhash,
  version: m.version,
});

/** The default banner's SVG, for the test that checks DEFAULT_BLURHASH against it. */
export const defaultThumbnailSource = (): Buffer => Buffer.from(DEFAULT_SVG);

/**
 * The thumbnail for these settings. A configured file that is not an image the server can read is a
 * ConfigError naming INSTANCE_THUMBNAIL (start-up awaits this when the setting is given).
 */
export function instanceThumbnail(config: Config): Promise<InstanceThumbnail> {
  if (!config.instanceThumbnail) return Promise.resolve(defaultThumbnail);
  let thumbnail = made.get(config);
  if (!thumbnail) {
    thumbnail = (async () => {
      const source = await readFile(config.instanceThumbnail).catch((err: Error) => {
        throw new ConfigError('INSTANCE_THUMBNAIL', `cannot read "${config.instanceThumbnail}": ${err.message}`);
      });
      if (source.length > MAX_SOURCE_BYTES) throw new ConfigError('INSTANCE_THUMBNAIL', `larger than ${MAX_SOURCE_BYTES / 1024 / 1024} MB`);
      try {
        return served(await makeThumbnail(source));
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
