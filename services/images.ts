import { loadSharp } from './sharp.ts';
import { unprocessable } from '../errors.ts';

export type ProfileImageKind = 'avatar' | 'header';

// Mastodon's sizes: avatars 400×400, headers 1500×500, cropped to fill.
const SIZES: Record<ProfileImageKind, { width: number; height: number }> = {
  avatar: { width: 400, height: 400 },
  header: { width: 1500, height: 500 },
};

const FORMATS = {
  png: { contentType: 'image/png', extension: 'png' },
  jpeg: { contentType: 'image/jpeg', extension: 'jpg' },
  gif: { contentType: 'image/gif', extension: 'gif' },
  webp: { contentType: 'image/webp', extension: 'webp' },
} as const;
type Format = keyof typeof FORMATS;

export interface ProcessedImage {
  data: Buffer;
  contentType: string;
  extension: string;
}

/** Refuses decompression bombs before decoding them. */
const MAX_INPUT_PIXELS = 7680 * 4320;

/**
 * Turns an uploaded avatar or header into the stored image: the format is read from the bytes (never the
 * file name or the client's content type), orientation applied, metadata (EXIF location…) dropped, resized.
 */
export async function processProfileImage(kind: ProfileImageKind, input: Buffer): Promise<ProcessedImage> {
  const invalid = () => unprocessable(`Validation failed: ${kind} must be a PNG, JPEG, GIF or WebP image`);
  if (input.length === 0) throw invalid();
  const sharp = await loadSharp();
  let format: Format;
  let pages = 1;
  try {
    const meta = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    if (!meta.format || !(meta.format in FORMATS)) throw invalid();
    format = meta.format as Format;
    pages = meta.pages ?? 1;
  } catch {
    throw invalid();
  }
  const { width, height } = SIZES[kind];
  try {
    // failOn 'truncated' rejects cut-off files instead of storing half an image.
    const animated = format === 'gif' || format === 'webp' ? pages > 1 : false;
    const data = await sharp(input, { animated, failOn: 'truncated', limitInputPixels: MAX_INPUT_PIXELS })
      .rotate()
      .resize(width, height, { fit: 'cover', withoutEnlargement: false })
      .toFormat(format)
      .toBuffer();
    return { data, ...FORMATS[format] };
  } catch {
    throw invalid();
  }
}
