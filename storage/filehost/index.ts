import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../../config.ts';
import type { Db } from '../db.ts';
import { deferDeletions, deletionsAllowed, drainDeferredDeletions, undeferDeletion } from '../file-deletions.ts';
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

/**
 * A file host whose deletions wait while a backup runs (storage/file-deletions.ts): the key is listed and deleted
 * once the backup has ended (`drainDeferred`, run by the backup when it ends and by a repeating job).
 */
export class BackupAwareFileHost implements FileHost {
  readonly inner: FileHost;
  private readonly db: Db;

  constructor(inner: FileHost, db: Db) {
    this.inner = inner;
    this.db = db;
  }

  async put(key: string, data: Buffer, contentType: string): Promise<void> {
    // First: a deferred deletion of the same key, run after this write, would remove the new file.
    await undeferDeletion(this.db, key);
    await this.inner.put(key, data, contentType);
  }

  get(key: string): Promise<Buffer | null> {
    return this.inner.get(key);
  }

  async delete(key: string): Promise<void> {
    if (await deletionsAllowed(this.db)) await this.inner.delete(key);
    else await deferDeletions(this.db, [key]);
  }

  url(key: string): string {
    return this.inner.url(key);
  }

  close(): void {
    this.inner.close?.();
  }

  /** Deletes what waited for a backup, when none runs. Returns how many files went. */
  drainDeferred(): Promise<number> {
    return drainDeferredDeletions(this.db, (key) => this.inner.delete(key));
  }
}

/**
 * The file host the settings name: the local disk (the default) or an S3-compatible bucket, its deletions held while a
 * backup of `db` runs.
 */
export async function createFileHost(config: Pick<Config, 'fileHost' | 's3' | 'dataDir' | 'publicUrl'>, db: Db): Promise<BackupAwareFileHost> {
  return new BackupAwareFileHost(await createStore(config), db);
}

async function createStore(config: Pick<Config, 'fileHost' | 's3' | 'dataDir' | 'publicUrl'>): Promise<FileHost> {
  // The AWS SDK (~5 MB resident) is only loaded where it is used.
  if (config.fileHost === 's3') return new (await import('./s3.ts')).S3FileHost(config.s3);
  const filesRoot = join(config.dataDir, 'files');
  await mkdir(filesRoot, { recursive: true });
  return new LocalFileHost(filesRoot, config.publicUrl);
}
