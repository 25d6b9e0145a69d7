// Operators' announcements: `npm run cli -- announcements …` (dispatched from cli/admin.ts), over the same service as
// the operators' page (services/announcements.ts). Run with --as <username>, the operator's role must be able to
// manage announcements (services/roles.ts).
import { parseArgs } from 'node:util';
import type { Db } from '../storage/db.ts';
import type { RedisClient } from '../storage/redis.ts';
import { listAnnouncements } from '../storage/announcements.ts';
import { StreamEvents } from '../services/stream-events.ts';
import type { Actor } from '../services/action-log.ts';
import { createAnnouncement, publishAnnouncement, removeAnnouncement, unpublishAnnouncement, type AnnouncementDeps } from '../services/announcements.ts';

export const ANNOUNCEMENTS_USAGE = `  announcements add <text> [--starts-at <time>] [--ends-at <time>] [--all-day] [--scheduled-at <time>]
      Adds an announcement shown to everyone signed in (GET /api/v1/announcements) and prints its id. Times are ISO
      8601 (2026-12-24T18:00:00Z). It is published at once, or at --scheduled-at by a running server's worker.
  announcements list
      Prints every announcement, newest first: id, state, times and text.
  announcements publish|unpublish|remove <id>
      Publishes an announcement now, takes it down (kept, to publish again), or removes it for good.`;

export class AnnouncementsUsageError extends Error {}

function time(value: string | undefined, option: string): Date | null {
  if (value === undefined) return null;
  const date = /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw new AnnouncementsUsageError(`${option} takes an ISO 8601 time (2026-12-24T18:00:00Z)`);
  return date;
}

export async function announcementsCommand(argv: string[], deps: { db: Db; redis: RedisClient; redisPrefix: string; actor?: Actor }, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'starts-at': { type: 'string' },
      'ends-at': { type: 'string' },
      'all-day': { type: 'boolean', default: false },
      'scheduled-at': { type: 'string' },
    },
  });
  const [command, arg, ...rest] = positionals;
  if (rest.length > 0) throw new AnnouncementsUsageError(`unexpected argument: ${rest[0]} (quote the text)`);
  // No job queue here: a scheduled publication waits in the outbox for a running server's sweeper.
  const service: AnnouncementDeps = { db: deps.db, events: new StreamEvents(deps.redis, deps.redisPrefix), jobs: null };
  switch (command) {
    case 'add': {
      if (!arg) throw new AnnouncementsUsageError('announcements add takes the text as one argument (quote it)');
      const row = await createAnnouncement(service, {
        text: arg, startsAt: time(values['starts-at'], '--starts-at'), endsAt: time(values['ends-at'], '--ends-at'),
        allDay: values['all-day'], scheduledAt: time(values['scheduled-at'], '--scheduled-at'),
      }, deps.actor ?? null);
      out(row.id);
      return;
    }
    case 'list': {
      const rows = await listAnnouncements(deps.db);
      for (const a of rows) {
        const state = a.published ? 'published' : a.scheduled_at ? `scheduled for ${a.scheduled_at.toISOString()}` : 'unpublished';
        const span = a.starts_at || a.ends_at ? `  ${a.starts_at?.toISOString() ?? '…'} to ${a.ends_at?.toISOString() ?? '…'}${a.all_day ? ' (all day)' : ''}` : '';
        out(`${a.id}  ${state}${span}  ${JSON.stringify(a.text)}`);
      }
      if (rows.length === 0) out('no announcements');
      return;
    }
    case 'publish':
    case 'unpublish':
    case 'remove': {
      if (!arg || !/^\d{1,20}$/.test(arg)) throw new AnnouncementsUsageError(`announcements ${command} takes the id of an announcement (see announcements list)`);
      const by = deps.actor ?? null;
      const changed = command === 'publish' ? await publishAnnouncement(service, arg, undefined, by)
        : command === 'unpublish' ? await unpublishAnnouncement(service, arg, by) : await removeAnnouncement(service, arg, by);
      if (!changed && command === 'remove') throw new Error(`no announcement with id ${arg}`);
      out(changed ? `announcement ${arg} ${command === 'remove' ? 'removed' : `${command}ed`}` : `announcement ${arg} was not changed (unknown, or already ${command}ed)`);
      return;
    }
    default:
      throw new AnnouncementsUsageError(`unknown command: announcements ${command ?? ''}`.trim());
  }
}
