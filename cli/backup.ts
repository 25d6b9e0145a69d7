// `npm run cli -- backup <dir>` and `restore <dir>`: PostgreSQL (pg_dump's custom format), the local file host's files,
// and a manifest; a restore goes into an empty database and rebuilds what Redis held from PostgreSQL.
import { spawn, execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { access, copyFile, cp, mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.ts';
import { createPool, ensureDatabase, migrate } from '../storage/db.ts';
import { emptyDatabase, hasTables, listsAfter, localAccountIdsAfter } from '../storage/feed-sources.ts';
import { FEED_SIZE, HomeFeeds } from '../storage/feeds.ts';
import { listFeedSourceIds } from '../storage/lists.ts';
import { homeFeedSourceIds } from '../storage/statuses.ts';
import { deleteKeysWithPrefix, type RedisClient } from '../storage/redis.ts';
import { BackupRunning, holdFileDeletions } from '../storage/file-deletions.ts';
import { createFileHost } from '../storage/filehost/index.ts';

export const BACKUP_USAGE = `  backup <dir>
      Writes a backup into <dir> (a new or empty directory): PostgreSQL as pg_dump's custom format (one consistent
      snapshot, taken while the server runs), the files of FILE_HOST=local (with FILE_HOST=s3 they stay in the
      bucket and are not copied; file deletions are held from before the dump until the copy ends, so every file
      the dump names is copied), DATA_DIR/otp-secret.key when there is one, and manifest.json (time, version,
      commit, database, file count). Written beside <dir> and moved into place at the end: a failed backup leaves
      nothing. pg_dump is PG_DUMP_PATH.
  restore <dir> [--force]
      Restores a backup into the database of DATABASE_URL (DATABASE_DIRECT_URL when set), which must be empty
      (--force empties it first), runs any newer migrations, copies the files back, and empties this server's Redis
      keys (caches, queues) and rebuilds every home and list feed from PostgreSQL. Stop the server first.
      pg_restore is PG_RESTORE_PATH.`;

/** What a refused or failed backup or restore says; the command exits non-zero with it. */
export class BackupFailed extends Error {}

export const MANIFEST_FORMAT = 'fedi-server-backup/1';
const DUMP = 'database.dump';
const FILES = 'files';
const OTP_KEY = 'otp-secret.key';

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  created_at: string;
  version: string;
  commit: string | null;
  database: string;
  file_host: 'local' | 's3';
  /** Files copied (0 with FILE_HOST=s3: they are in the bucket). */
  files: number;
  bytes: number;
  otp_secret_key: boolean;
}

type Settings = Pick<Config, 'databaseUrl' | 'databaseDirectUrl' | 'dataDir' | 'fileHost' | 's3' | 'softwareVersion' | 'pgDumpPath' | 'pgRestorePath' | 'otpSecret' | 'redisPrefix' | 'publicUrl'>;

const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));
const filesRoot = (config: Pick<Config, 'dataDir'>) => join(config.dataDir, 'files');

/** The commit this code is at, when it runs from a git checkout. */
function currentCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).toString().trim() || null;
  } catch {
    return null;
  }
}

/**
 * Runs pg_dump or pg_restore against `url`: the password goes in the environment (PGPASSWORD), not on a command
 * line others can read. Rejects with the program's last line of stderr, or with a clear word when it is missing.
 */
function runPg(program: string, setting: string, args: string[], url: string): Promise<void> {
  const target = new URL(url);
  const password = decodeURIComponent(target.password);
  target.password = '';
  return new Promise((resolvePromise, reject) => {
    const child = spawn(program, [...args, `--dbname=${target.toString()}`], {
      env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(new BackupFailed(err.code === 'ENOENT' ? `${program} not found: install PostgreSQL's client programs or set ${setting} to its path` : `${program} could not run: ${err.message}`));
    });
    child.on('exit', (code, signal) => {
      if (code === 0) return resolvePromise();
      const reason = stderr.trim().split('\n').filter((l) => l.trim() !== '').at(-1) ?? `exit ${code ?? signal}`;
      reject(new BackupFailed(`${basename(program)} failed: ${reason}`));
    });
  });
}

/** Files under `dir` (recursively) and their bytes; files being written by the file host (`.tmp-…`) left out. */
async function countFiles(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    files += 1;
    bytes += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}

function fsFailure(err: unknown, what: string): BackupFailed {
  const e = err as NodeJS.ErrnoException;
  const why = e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied' : e.code === 'ENOENT' ? 'no such directory' : e.code === 'EROFS' ? 'read-only file system' : e.code === 'ENOSPC' ? 'no space left' : e.message;
  return new BackupFailed(`${what}: ${why}`);
}

export async function backup(config: Settings, dirArg: string, out: (line: string) => void): Promise<Manifest> {
  const dir = resolve(dirArg);
  const found = await stat(dir).catch(() => null);
  if (found && !found.isDirectory()) throw new BackupFailed(`${dir} exists and is not a directory`);
  if (found && (await readdir(dir)).length > 0) throw new BackupFailed(`${dir} is not empty: a backup goes into a new or empty directory`);
  const parent = dirname(dir);
  try {
    await mkdir(parent, { recursive: true });
  } catch (err) {
    throw fsFailure(err, `cannot make ${parent}`);
  }
  // Written beside the target and moved into place when whole: a backup that fails leaves nothing behind.
  let work: string;
  try {
    work = await mkdtemp(join(parent, `.${basename(dir)}.partial-`));
  } catch (err) {
    throw fsFailure(err, `cannot write in ${parent}`);
  }
  // File deletions wait from before the dump until the files are copied (storage/file-deletions.ts): a file whose
  // row went after the dump's snapshot (media pruned, an old remote post removed, an avatar replaced) is still there
  // to be copied.
  let release: (() => Promise<void>) | null;
  try {
    release = await holdFileDeletions(config.databaseDirectUrl);
  } catch (err) {
    await rm(work, { recursive: true, force: true });
    if (err instanceof BackupRunning) throw new BackupFailed(err.message);
    throw new BackupFailed(`cannot hold file deletions during the backup: ${(err as Error).message}`);
  }
  try {
    const database = databaseName(config.databaseDirectUrl);
    // pg_dump reads everything in one repeatable-read transaction: one consistent snapshot while the server writes.
    await runPg(config.pgDumpPath, 'PG_DUMP_PATH', ['--format=custom', `--file=${join(work, DUMP)}`], config.databaseDirectUrl);
    out(`database ${database}: ${(await stat(join(work, DUMP))).size} bytes`);
    // Files after the database: every file the dump names was written before it began (a file is stored before its
    // row) and none is deleted before the copy ends (above), so the copy holds them all; files uploaded meanwhile
    // come along unreferenced, which is harmless.
    let counted = { files: 0, bytes: 0 };
    if (config.fileHost === 'local') {
      const root = filesRoot(config);
      await mkdir(join(work, FILES));
      if (await exists(root)) await cp(root, join(work, FILES), { recursive: true, filter: (src) => !basename(src).startsWith('.tmp-') });
      counted = await countFiles(join(work, FILES));
      out(`files: ${counted.files} (${counted.bytes} bytes)`);
    } else {
      out(`files: in the S3 bucket ${config.s3.bucket}, not copied (keep the bucket's own versioning or replication)`);
    }
    await release();
    release = null;
    const otpKey = !config.otpSecret && (await exists(join(config.dataDir, OTP_KEY)));
    if (otpKey) await copyFile(join(config.dataDir, OTP_KEY), join(work, OTP_KEY));
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      created_at: new Date().toISOString(),
      version: config.softwareVersion,
      commit: currentCommit(),
      database,
      file_host: config.fileHost,
      files: counted.files,
      bytes: counted.bytes,
      otp_secret_key: otpKey,
    };
    await writeFile(join(work, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    if (found) await rmdir(dir);
    await rename(work, dir);
    out(`backup written to ${dir}`);
    await carryOutHeldDeletions(config, out);
    return manifest;
  } catch (err) {
    await release?.();
    await rm(work, { recursive: true, force: true });
    throw err instanceof BackupFailed ? err : fsFailure(err, 'backup failed');
  }
}

/** The deletions held while the backup ran, carried out now (what is left, the repeating job does). */
async function carryOutHeldDeletions(config: Settings, out: (line: string) => void): Promise<void> {
  const db = createPool(config.databaseDirectUrl, 1, 120_000);
  const host = await createFileHost(config, db);
  try {
    const n = await host.drainDeferred();
    if (n > 0) out(`files deleted while the backup ran, kept for it: ${n}, deleted now`);
  } catch (err) {
    out(`note: the file deletions held for the backup are left to the server's repeating job (${(err as Error).message})`);
  } finally {
    host.close();
    await db.end();
  }
}

/** The manifest of a backup directory, or a refusal saying why `dir` is not one. */
export async function readManifest(dirArg: string): Promise<{ dir: string; manifest: Manifest }> {
  const dir = resolve(dirArg);
  const found = await stat(dir).catch(() => null);
  if (!found) throw new BackupFailed(`${dir} does not exist`);
  if (!found.isDirectory()) throw new BackupFailed(`${dir} is not a directory`);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    throw new BackupFailed(`${dir} is not a backup: it has no readable manifest.json`);
  }
  if (manifest?.format !== MANIFEST_FORMAT) throw new BackupFailed(`${dir} is not a backup of this server (manifest format ${JSON.stringify(manifest?.format)})`);
  if (!(await exists(join(dir, DUMP)))) throw new BackupFailed(`${dir} is not a whole backup: ${DUMP} is missing`);
  return { dir, manifest };
}

/** How many feeds a restore rebuilds at once. */
const REBUILD_BATCH = 100;

/** Every home feed and list feed rebuilt from PostgreSQL, a page of accounts (or lists) at a time. */
export async function rebuildFeeds(db: ReturnType<typeof createPool>, redis: RedisClient, prefix: string): Promise<{ home: number; lists: number }> {
  const home = new HomeFeeds(redis, prefix);
  const lists = new HomeFeeds(redis, prefix, redis, 'list');
  const counts = { home: 0, lists: 0 };
  for (let after = '0'; ;) {
    const ids = await localAccountIdsAfter(db, after, REBUILD_BATCH);
    if (ids.length === 0) break;
    await Promise.all(ids.map((id) => home.rebuild(id, () => homeFeedSourceIds(db, id, FEED_SIZE))));
    counts.home += ids.length;
    after = ids.at(-1)!;
  }
  for (let after = '0'; ;) {
    const rows = await listsAfter(db, after, REBUILD_BATCH);
    if (rows.length === 0) break;
    await Promise.all(rows.map((list) => lists.rebuild(list.id, () => listFeedSourceIds(db, list, FEED_SIZE))));
    counts.lists += rows.length;
    after = rows.at(-1)!.id;
  }
  return counts;
}

export async function restore(config: Settings, dirArg: string, options: { force: boolean }, redis: RedisClient, out: (line: string) => void): Promise<Manifest> {
  const { dir, manifest } = await readManifest(dirArg);
  const database = databaseName(config.databaseDirectUrl);
  await ensureDatabase(config.databaseDirectUrl, config.databaseDirectUrl === config.databaseUrl ? 'DATABASE_URL' : 'DATABASE_DIRECT_URL');
  const db = createPool(config.databaseDirectUrl, 4, 120_000);
  try {
    if (await hasTables(db)) {
      if (!options.force) throw new BackupFailed(`database ${database} is not empty: a restore goes into an empty database (--force empties it first)`);
      await emptyDatabase(db);
      out(`database ${database} emptied`);
    }
    await runPg(config.pgRestorePath, 'PG_RESTORE_PATH', ['--no-owner', '--exit-on-error', '--single-transaction', join(dir, DUMP)], config.databaseDirectUrl);
    out(`database ${database} restored from ${manifest.database} (${manifest.created_at})`);
    await migrate(config.databaseDirectUrl);

    if (manifest.file_host === 's3') out('files: the backup was of a site keeping its files in S3; they are in the bucket, none are copied');
    else if (config.fileHost === 's3') out(`files: this site keeps its files in the S3 bucket ${config.s3.bucket}; copy ${join(dir, FILES)} into it (the keys are the paths under it)`);
    else {
      const root = filesRoot(config);
      await mkdir(root, { recursive: true });
      if (await exists(join(dir, FILES))) await cp(join(dir, FILES), root, { recursive: true, force: true });
      out(`files: ${manifest.files} copied to ${root}`);
    }
    if (manifest.otp_secret_key && !config.otpSecret) {
      const target = join(config.dataDir, OTP_KEY);
      if (!(await exists(target)) || options.force) {
        await mkdir(config.dataDir, { recursive: true });
        await copyFile(join(dir, OTP_KEY), target);
        await access(target, constants.R_OK);
      } else if (!(await readFile(target)).equals(await readFile(join(dir, OTP_KEY)))) {
        out(`note: ${target} differs from the backup's and was kept (--force replaces it): two-factor codes set up before the backup need the backup's`);
      }
    }

    // Redis held caches, feeds and queues of the database that is gone: all of it goes, and the feeds are built again.
    await deleteKeysWithPrefix(redis, config.redisPrefix);
    const rebuilt = await rebuildFeeds(db, redis, config.redisPrefix);
    out(`redis: keys under ${config.redisPrefix} removed; ${rebuilt.home} home feed(s) and ${rebuilt.lists} list feed(s) rebuilt`);
    return manifest;
  } finally {
    await db.end();
  }
}
