import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FileHost } from './index.ts';

/** URL path under which the web process serves the local file host's files. */
export const LOCAL_FILES_PREFIX = '/system/';

/** Files on the local disk under `root`, served by the web process (http/files.ts) at /system/<key>. */
export class LocalFileHost implements FileHost {
  readonly root: string;
  private readonly publicUrl: string;

  constructor(root: string, publicUrl: string) {
    this.root = resolve(root);
    this.publicUrl = publicUrl;
  }

  private pathOf(key: string): string {
    const full = resolve(this.root, key);
    if (!full.startsWith(this.root + sep)) throw new Error(`file key escapes the file host root: ${key}`);
    return full;
  }

  async put(key: string, data: Buffer): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    // Write then rename, so a reader never sees half a file.
    const temp = join(dirname(path), `.tmp-${randomBytes(6).toString('hex')}`);
    await writeFile(temp, data);
    await rename(temp, path);
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.pathOf(key));
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  url(key: string): string {
    return `${this.publicUrl}${LOCAL_FILES_PREFIX}${key.split('/').map(encodeURIComponent).join('/')}`;
  }
}
