// sharp (libvips, ~7 MB resident once its native library is mapped, plus its thread pool) is loaded at the first
// image rather than at start: most processes go long stretches without one, and a web process may never see one.
import type SharpModule from 'sharp';

export type Sharp = typeof SharpModule;

let loading: Promise<Sharp> | undefined;

export function loadSharp(): Promise<Sharp> {
  return (loading ??= import('sharp').then(({ default: sharp }) => {
    // libvips' operation cache (up to 50 MB) only helps when the same image is processed twice, which uploads never
    // are; without it a burst of uploads leaves no cached pixels behind.
    sharp.cache(false);
    return sharp;
  }));
}
