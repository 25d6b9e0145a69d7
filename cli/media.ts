// `media usage` and `media remove`: the copies of other servers' media on our file host (services/remote-media.ts),
// as Mastodon's `tootctl media usage` and `tootctl media remove`.
import { parseArgs } from 'node:util';
import type { Config } from '../config.ts';
import type { Db } from '../storage/db.ts';
import type { RedisClient } from '../storage/redis.ts';
import { CacheVersions } from '../storage/cache-versions.ts';
import { createFileHost } from '../storage/filehost/index.ts';
import { mediaCacheUsage, pruneCachedMedia } from '../services/remote-media.ts';

export const MEDIA_USAGE = `  media usage
      Prints how many copies of other servers' attachments, avatars, headers and emoji are kept, and their size.
  media remove [--days <n>]
      Removes copies of other servers' attachments made more than n days ago (MEDIA_CACHE_RETENTION_DAYS, else 7),
      a batch at a time; they are copied again when someone looks at them.`;

export class MediaUsageError extends Error {}

export interface MediaCliDeps {
  db: Db;
  redis: RedisClient;
  config: Config;
}

const size = (bytes: number) => (bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(2)} GB` : bytes >= 1024 ** 2 ? `${(bytes / 1024 ** 2).toFixed(1)} MB` : `${(bytes / 1024).toFixed(1)} KB`);

export async function mediaCommand(argv: string[], deps: MediaCliDeps, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { days: { type: 'string' } } });
  const [command] = positionals;
  if (command === 'usage') {
    const usage = await mediaCacheUsage(deps);
    for (const kind of ['attachment', 'avatar', 'header', 'emoji'] as const) {
      const u = usage.find((x) => x.kind === kind) ?? { files: 0, bytes: 0 };
      out(`${kind}s: ${u.files} files, ${size(u.bytes)}`);
    }
    return;
  }
  if (command === 'remove') {
    const days = values.days === undefined ? (deps.config.mediaCacheRetentionDays || 7) : Number(values.days);
    if (!Number.isInteger(days) || days < 0) throw new MediaUsageError('--days must be a whole number of days');
    const fileHost = await createFileHost(deps.config, deps.db);
    try {
      const versions = new CacheVersions(deps.redis, deps.config.redisPrefix);
      const removed = await pruneCachedMedia({ db: deps.db, redis: deps.redis, config: deps.config, fileHost, versions }, new Date(Date.now() - days * 86_400_000));
      out(`removed ${removed} files copied more than ${days} days ago`);
    } finally {
      fileHost.close?.();
    }
    return;
  }
  throw new MediaUsageError(command ? `unknown media command: ${command}` : 'a media command is required');
}
