import type { AppContext } from '../../context.ts';
import { pendingOutbox } from '../../storage/outbox.ts';

/**
 * Whether the work that could still change something has run, for a test that must check that something did NOT
 * happen (no mail, no notification, no warning) without sleeping a fixed time: with `federation`, Fedify's queue
 * (received activities, deliveries and their retries) empty; no job of the fan-out, pull or media queue due within a minute
 * (repeating ones and far-off scheduled ones aside); and, unless `outbox` is 'none', no outbox row waiting for its
 * job ('due': only rows whose time has come, so a poll's end weeks away does not count). Read in that order, work
 * passed from one to the next is not missed.
 */
export async function workSettled(ctx: AppContext, options: { federation?: boolean; outbox?: 'all' | 'due' | 'none' } = {}): Promise<boolean> {
  const { federation = false, outbox = 'all' } = options;
  if (federation && (await ctx.federationQueue.getDepth()).queued > 0) return false;
  const states = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;
  const jobs = (await Promise.all([ctx.jobs.fanout.getJobs([...states]), ctx.jobs.pull.getJobs([...states]), ctx.jobs.media.getJobs([...states])])).flat()
    .filter((j) => j && !j.repeatJobKey && j.timestamp + (j.delay ?? 0) < Date.now() + 60_000);
  if (jobs.length > 0) return false;
  if (outbox === 'all') return (await ctx.db.query('SELECT 1 FROM outbox LIMIT 1')).rowCount === 0;
  if (outbox === 'due') return (await pendingOutbox(ctx.db, 0, 1)).length === 0;
  return true;
}
