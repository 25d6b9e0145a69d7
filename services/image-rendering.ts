// Decoding and encoding a picture as this server stores it: the original capped in size, a small preview, a blurhash.
// A module of its own, with nothing but sharp and blurhash, so that a child process (services/picture-process.ts)
// loads it alone.
import { encode as encodeBlurhash } from 'blurhash';
import { loadSharp } from './sharp.ts';

/** Image formats taken, by what sharp reads in the bytes (AVIF is read as `heif`), and how each is stored. */
export const IMAGE_FORMATS: Record<string, { contentType: string; extension: string }> = {
  jpeg: { contentType: 'image/jpeg', extension: 'jpg' },
  png: { contentType: 'image/png', extension: 'png' },
  gif: { contentType: 'image/gif', extension: 'gif' },
  webp: { contentType: 'image/webp', extension: 'webp' },
  heif: { contentType: 'image/avif', extension: 'avif' },
};

/** Decompression bombs are refused before decoding. */
export const MAX_INPUT_PIXELS = 16_384 * 16_384;
/** Mastodon's caps: originals to 3840×2160 worth of pixels, previews to 480×480 worth. */
export const ORIGINAL_PIXELS = 3840 * 2160;
export const SMALL_PIXELS = 480 * 480;
/**
 * Up to this many pixels a still picture is decoded once for all it is made into (10–30% less CPU than decoding the
 * encoded original again, for at most 8 MB of pixels held); beyond about 3 MP the second decode, which libjpeg and
 * libwebp shrink as they load, costs less than resizing the held pixels, and holding them costs tens of MB.
 */
const DECODE_ONCE_PIXELS = 2_000_000;

/** A file that sharp cannot read as an image, or whose processing failed. */
export class Undecodable extends Error {}

export function fit(width: number, height: number, maxPixels: number): { width: number; height: number } {
  if (width * height <= maxPixels) return { width, height };
  const scale = Math.sqrt(maxPixels / (width * height));
  return { width: Math.max(1, Math.floor(width * scale)), height: Math.max(1, Math.floor(height * scale)) };
}

export type RenderedImage = Awaited<ReturnType<typeof renderImage>>;

/** The original (orientation applied, metadata dropped, capped in pixels), a small WebP preview and a blurhash. */
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
    const resized = sharp(input, { animated, failOn: 'truncated', limitInputPixels: MAX_INPUT_PIXELS }).rotate()
      .resize({ width: size.width, height: size.height, fit: 'inside', withoutEnlargement: true });
    // A still picture of up to DECODE_ONCE_PIXELS is decoded once: the original, the preview and the blurhash are
    // encoded from the same pixels. Larger ones decode the encoded original again, shrinking as they load.
    const still = animated || size.width * size.height > DECODE_ONCE_PIXELS ? null : await resized.raw().toBuffer({ resolveWithObject: true });
    const fromPixels = () => sharp(still!.data, { raw: { width: still!.info.width, height: still!.info.height, channels: still!.info.channels } });
    const source = still ? fromPixels() : resized;
    const pipeline = meta.format === 'jpeg' ? source.jpeg({ quality: 90 })
      : meta.format === 'png' ? source.png()
      : meta.format === 'gif' ? source.gif()
      : meta.format === 'webp' ? source.webp({ quality: 90 })
      : source.avif({ quality: 70 });
    const original = await pipeline.toBuffer({ resolveWithObject: true });
    const smallSize = fit(original.info.width, animated ? (original.info.pageHeight ?? original.info.height) : original.info.height, SMALL_PIXELS);
    // Effort 2 of 6 for the preview: a third less CPU than sharp's default 4, for a file a few per cent larger.
    const small = await (still ? fromPixels() : sharp(original.data, { failOn: 'truncated' }))
      .resize({ width: smallSize.width, height: smallSize.height, fit: 'inside' }).webp({ quality: 80, effort: 2 }).toBuffer({ resolveWithObject: true });
    const pixels = await (still ? fromPixels() : sharp(small.data)).resize({ width: 32, height: 32, fit: 'inside' }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
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
