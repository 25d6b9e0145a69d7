import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../../config.ts';
import { LocalFileHost } from './local.ts';

/**
 * Where uploaded files live. Keys are relative paths we choose (never user input);
 * drivers store bytes under a key and say at which public URL the key is served.
 */
export interface FileHost {
  put(key: string, data: Buffer, contentType: string): Promise<void>;
  /** The bytes under a key, or null when there are none. */
  get(key: string): Promise<Buffer | null>;
  delete(key: string): Promise<void>;
  url(key: string): string;
  /** Releases its connections (S3's sockets); absent where there are none. */
  close?(): void;
}

/** The file host the settings name: the local disk (the default) or an S3-compatible bucket. */
export async function createFileHost(config: Config): Promise<FileHost> {
  // The AWS SDK (~5 MB resident) is only loaded where it is used.
  if (config.fileHost === 's3') return new (await import('./s3.ts')).S3FileHost(config.s3);
  const filesRoot = join(config.dataDir, 'files');
  await mkdir(filesRoot, { recursive: true });
  return new LocalFileHost(filesRoot, config.publicUrl);
}
