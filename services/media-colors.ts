import { loadSharp } from './sharp.ts';

/**
 * The three colours Mastodon gives audio (`meta.colors`, which its player paints with): the background is the most
 * common colour near the picture's edges (its outer quarter), the foreground and accent the colours of the whole
 * picture furthest from it (CIEDE2000) with enough contrast against it (3:1 for the foreground, 2:1 for the accent),
 * or, when the picture has none, the background made lighter or darker. Colours are counted in a 10×10×10 histogram
 * of a 100-pixel-wide copy, each bin standing for its centre.
 */

export interface MediaColors {
  background: string;
  foreground: string;
  accent: string;
}

type Rgb = [number, number, number];

const BINS = 10;
const PALETTE_SIZE = 10;
const MIN_CONTRAST = 3;
const ACCENT_MIN_CONTRAST = 2;

/** The colours of a picture (cover art, an uploaded thumbnail, or the plain preview); null if it cannot be read. */
export async function colorsOf(picture: Buffer): Promise<MediaColors | null> {
  const sharp = await loadSharp();
  let raw: { data: Buffer; info: { width: number; height: number; channels: number } };
  try {
    raw = await sharp(picture, { limitInputPixels: 50_000_000 }).resize({ width: 100 }).flatten({ background: '#000' }).toColourspace('srgb').removeAlpha().raw().toBuffer({ resolveWithObject: true });
  } catch {
    return null;
  }
  const { data, info } = raw;
  const { width, height, channels } = info;
  const whole = new Map<number, number>();
  const edges = new Map<number, number>();
  const edgeRows = Math.floor(height * 0.25);
  const edgeColumns = Math.floor(width * 0.25);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * channels;
      const bin = binOf(data[i]!) * BINS * BINS + binOf(data[i + 1]!) * BINS + binOf(data[i + 2]!);
      whole.set(bin, (whole.get(bin) ?? 0) + 1);
      if (y < edgeRows || y >= height - edgeRows || x < edgeColumns || x >= width - edgeColumns) edges.set(bin, (edges.get(bin) ?? 0) + 1);
    }
  }
  return pickColors(palette(edges), palette(whole));
}

const binOf = (v: number) => Math.min(BINS - 1, Math.floor((v * BINS) / 256));

/** The most common bins first, as the colours at their centres. */
function palette(histogram: Map<number, number>): Rgb[] {
  return [...histogram.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, PALETTE_SIZE).map(([bin]) => {
    const centre = (i: number) => ((i + 0.5) * 256) / BINS;
    return [centre(Math.floor(bin / (BINS * BINS))), centre(Math.floor(bin / BINS) % BINS), centre(bin % BINS)];
  });
}

/** Background, foreground and accent from the edge palette and the whole picture's palette. */
export function pickColors(edgePalette: Rgb[], wholePalette: Rgb[]): MediaColors | null {
  const background = edgePalette[0] ?? wholePalette[0];
  if (!background) return null;
  const chosen: Rgb[] = [];
  const furthest = (minContrast: number) => {
    let best: Rgb | null = null;
    let bestDistance = 0;
    for (const color of wholePalette) {
      if (chosen.includes(color)) continue;
      const distance = ciede2000(background, color);
      if (distance > bestDistance && contrast(background, color) >= minContrast) {
        bestDistance = distance;
        best = color;
      }
    }
    if (best) chosen.push(best);
  };
  furthest(ACCENT_MIN_CONTRAST);
  furthest(MIN_CONTRAST);
  const missing = 2 - chosen.length;
  for (let i = 0; i < missing; i++) chosen.push(lightenOrDarken(background, 35 + i * 15));
  const foreground = chosen.reduce((a, b) => (contrast(background, b) > contrast(background, a) ? b : a));
  const accent = chosen.reduce((a, b) => (hsl(b)[1] > hsl(a)[1] ? b : a));
  return { background: hex(background), foreground: hex(foreground), accent: hex(accent) };
}

const hex = (c: Rgb) => `#${c.map((v) => Math.round(Math.min(255, Math.max(0, v))).toString(16).padStart(2, '0')).join('')}`;

/** sRGB to linear light, then CIE XYZ (D65). */
function xyz(c: Rgb): [number, number, number] {
  const [r, g, b] = c.map((v) => {
    const s = v / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as Rgb;
  return [r * 0.4124 + g * 0.3576 + b * 0.1805, r * 0.2126 + g * 0.7152 + b * 0.0722, r * 0.0193 + g * 0.1192 + b * 0.9505];
}

/** WCAG's contrast ratio of two colours. */
export function contrast(a: Rgb, b: Rgb): number {
  const la = xyz(a)[1] + 0.05;
  const lb = xyz(b)[1] + 0.05;
  return la > lb ? la / lb : lb / la;
}

function lab(c: Rgb): [number, number, number] {
  const white = [0.95047, 1, 1.08883];
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : (t * 24389) / 27 / 116 + 16 / 116);
  const [x, y, z] = xyz(c).map((v, i) => f(v / white[i]!)) as [number, number, number];
  return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
}

/** The CIEDE2000 colour difference (Sharma, Wu and Dalal's formulation). */
export function ciede2000(c1: Rgb, c2: Rgb): number {
  const [L1, a1, b1] = lab(c1);
  const [L2, a2, b2] = lab(c2);
  const rad = Math.PI / 180;
  const cBar = (Math.hypot(a1, b1) + Math.hypot(a2, b2)) / 2;
  const g = 0.5 * (1 - Math.sqrt(cBar ** 7 / (cBar ** 7 + 25 ** 7)));
  const ap1 = (1 + g) * a1;
  const ap2 = (1 + g) * a2;
  const cp1 = Math.hypot(ap1, b1);
  const cp2 = Math.hypot(ap2, b2);
  const hue = (b: number, a: number) => (b === 0 && a === 0 ? 0 : ((Math.atan2(b, a) / rad) + 360) % 360);
  const hp1 = hue(b1, ap1);
  const hp2 = hue(b2, ap2);
  const dL = L2 - L1;
  const dC = cp2 - cp1;
  let dh = 0;
  if (cp1 * cp2 !== 0) {
    dh = hp2 - hp1;
    if (dh > 180) dh -= 360;
    else if (dh < -180) dh += 360;
  }
  const dH = 2 * Math.sqrt(cp1 * cp2) * Math.sin((dh / 2) * rad);
  const lBar = (L1 + L2) / 2;
  const cpBar = (cp1 + cp2) / 2;
  let hBar = hp1 + hp2;
  if (cp1 * cp2 !== 0) {
    if (Math.abs(hp1 - hp2) <= 180) hBar = (hp1 + hp2) / 2;
    else hBar = hp1 + hp2 < 360 ? (hp1 + hp2 + 360) / 2 : (hp1 + hp2 - 360) / 2;
  }
  const t = 1 - 0.17 * Math.cos((hBar - 30) * rad) + 0.24 * Math.cos(2 * hBar * rad) + 0.32 * Math.cos((3 * hBar + 6) * rad) - 0.2 * Math.cos((4 * hBar - 63) * rad);
  const dTheta = 30 * Math.exp(-(((hBar - 275) / 25) ** 2));
  const rc = 2 * Math.sqrt(cpBar ** 7 / (cpBar ** 7 + 25 ** 7));
  const sl = 1 + (0.015 * (lBar - 50) ** 2) / Math.sqrt(20 + (lBar - 50) ** 2);
  const sc = 1 + 0.045 * cpBar;
  const sh = 1 + 0.015 * cpBar * t;
  const rt = -Math.sin(2 * dTheta * rad) * rc;
  return Math.sqrt((dL / sl) ** 2 + (dC / sc) ** 2 + (dH / sh) ** 2 + rt * (dC / sc) * (dH / sh));
}

/** Hue (degrees), saturation and lightness (percent), rounded. */
function hsl([r, g, b]: Rgb): [number, number, number] {
  const [rs, gs, bs] = [r / 255, g / 255, b / 255];
  const max = Math.max(rs, gs, bs);
  const min = Math.min(rs, gs, bs);
  const l = (max + min) / 2;
  if (max === min) return [0, 0, Math.round(l * 100)];
  const d = max - min;
  const s = l >= 0.5 ? d / (2 - max - min) : d / (max + min);
  let h = max === rs ? (gs - bs) / d + (gs < bs ? 6 : 0) : max === gs ? (bs - rs) / d + 2 : (rs - gs) / d + 4;
  h /= 6;
  return [Math.round(h * 360), Math.round(s * 100), Math.round(l * 100)];
}

function fromHsl(h: number, s: number, l: number): Rgb {
  const [hh, ss, ll] = [h / 360, s / 100, l / 100];
  if (ss === 0) return [Math.round(ll * 255), Math.round(ll * 255), Math.round(ll * 255)];
  const q = ll < 0.5 ? ll * (1 + ss) : ll + ss - ll * ss;
  const p = 2 * ll - q;
  const channel = (t: number) => {
    if (t < 0) t += 1;
    if (t > 1) t -= 1;
    if (t < 1 / 6) return p + (q - p) * 6 * t;
    if (t < 1 / 2) return q;
    if (t < 2 / 3) return p + (q - p) * (2 / 3 - t) * 6;
    return p;
  };
  return [Math.round(channel(hh + 1 / 3) * 255), Math.round(channel(hh) * 255), Math.round(channel(hh - 1 / 3) * 255)];
}

/** A dark colour made lighter, a light one darker, by `by` points of lightness. */
function lightenOrDarken(c: Rgb, by: number): Rgb {
  const [h, s, l] = hsl(c);
  return fromHsl(h, s, l < 50 ? Math.min(100, l + by) : Math.max(0, l - by));
}
