/**
 * How far behind this process's job worker is, and new posts held back while it is too far behind.
 *
 * With the worker in the web process (ROLE=all), requests and jobs share one event loop and the machine's cores.
 * Posts come in as fast as the HTTP side takes them, and each queues a fan-out job: with nothing to push back, a
 * burst of posts is accepted faster than it can be fanned out, and the backlog (and the time before a post reaches
 * its followers' homes, and memory) grows for as long as the burst lasts. Here a new post waits, for a bounded time,
 * while the worker is behind: the posting rate settles at what fan-out sustains, and a post reaches its followers'
 * homes within about `BEHIND_MS` of being accepted.
 *
 * Held posts go in first come, first served, one for each job the worker finishes (its work making room for theirs;
 * fewer when it is far behind), and all at once when it has caught up. Letting them all in only once it had caught
 * up made every held post wait about as long as the longest hold under a sustained burst, while those that came
 * between two holds waited for nothing: a p99 of 2 s beside a p50 of 80 ms. Paced this way, each waits
 * for its turn, about as long as the others.
 *
 * "Behind" is measured on the worker's own jobs, without asking Redis: how long the latest job it took had waited in
 * the queue. That figure holds only while the worker is making progress (it took or finished a job lately): one that
 * has done nothing for a while has either an empty queue or jobs stuck on PostgreSQL or Redis, and holding posts back
 * would help neither. A process without a worker (ROLE=web), or whose worker is paused while a dependency is away,
 * never holds a post back: its posts do not compete with the worker for a CPU.
 */

/** The queue wait over which the worker counts as behind. */
export const BEHIND_MS = 250;

/** How long the latest job's wait stands for the queue after the worker's last progress. */
const FRESH_MS = 500;
/** How often held posts look again. */
const RECHECK_MS = 50;
/** How long fan-out must have had nothing running before background picture work counts it as quiet (`quiet`). */
export const QUIET_MS = 250;

export class JobBacklog {
  /** The longest a post is held back (POST_HOLD_MS): after this it is accepted anyway (the backlog drains on its own). */
  private readonly maxHoldMs: number;
  private working = false;
  private lastWaitMs = 0;
  private lastProgressAt = 0;
  /** Held posts' releases, in the order the posts came (a Set keeps insertion order). */
  private readonly held = new Set<() => void>();
  /** Fan-out jobs running now in this process's worker. */
  private active = 0;
  /** When the worker last finished a fan-out job. */
  private lastFinishedAt = 0;
  /** CPU-heavy background work waiting for fan-out to be quiet (`quiet`). */
  private readonly awaitingQuiet = new Set<() => void>();
  private quietCheck: NodeJS.Timeout | null = null;
  /** Held posts owed by the jobs finished meanwhile (see `finished`), less than one. */
  private credit = 0;
  /** Background jobs waiting for the worker to catch up (`caughtUp`). */
  private readonly deferred = new Set<() => void>();
  private recheck: NodeJS.Timeout | null = null;

  constructor(maxHoldMs: number) {
    this.maxHoldMs = maxHoldMs;
  }

  /** Whether this process runs a job worker taking jobs (started or resumed; stopped or paused). */
  setWorking(working: boolean): void {
    this.working = working;
    if (!working) for (const done of [...this.awaitingQuiet]) done();
    this.release();
  }

  /**
   * The worker took a job queued at `queuedAt` (ms since the epoch). Only jobs meant to run at once count: a retry
   * after its backoff or a delayed job has waited on purpose.
   */
  started(queuedAt: number, immediate: boolean): void {
    this.active++;
    this.lastProgressAt = Date.now();
    if (immediate) this.lastWaitMs = Math.max(0, this.lastProgressAt - queuedAt);
    this.release();
  }

  /**
   * The worker finished a job. While it is still behind, held posts go in, the one held longest first: one for each
   * job finished while the latest wait is at most twice BEHIND_MS, fewer the further behind it is (one for every
   * four jobs at 2 s), so that a backlog left by a burst drains rather than staying at its height.
   */
  finished(): void {
    this.active = Math.max(0, this.active - 1);
    this.lastProgressAt = this.lastFinishedAt = Date.now();
    if (this.active === 0) this.scheduleQuietCheck();
    if (!this.behind) return this.release();
    this.credit = Math.min(1, this.credit + Math.min(1, (2 * BEHIND_MS) / this.lastWaitMs));
    if (this.credit < 1 || this.held.size === 0) return;
    this.credit -= 1;
    this.held.values().next().value!();
  }

  get behind(): boolean {
    return this.working && this.lastWaitMs > BEHIND_MS && Date.now() - this.lastProgressAt < FRESH_MS;
  }

  /**
   * Resolves at once unless the worker is behind; then when its turn comes or the worker has caught up, or after the
   * longest hold.
   */
  admit(): Promise<void> {
    if (this.maxHoldMs === 0 || !this.behind) return Promise.resolve();
    return this.wait(this.held, this.maxHoldMs);
  }

  /**
   * For background work (the pull queue's fetches, jobs/worker.ts): resolves at once unless the worker is behind;
   * then once it has caught up, or after `maxWaitMs`. Such work runs in slots of its own, but on the same cores: a
   * burst's fan-out goes first, as when it was taken only after every fan-out job.
   */
  caughtUp(maxWaitMs: number): Promise<void> {
    if (!this.behind) return Promise.resolve();
    return this.wait(this.deferred, maxWaitMs);
  }

  /**
   * For background work that takes a core while it runs (decoding and encoding other servers' pictures): resolves once
   * fan-out is quiet (no job running, and none finished for QUIET_MS), or at `until` (ms since the epoch) at the latest.
   * Under a burst of posts the worker is never far behind, yet such work beside it would slow every post's way to its
   * followers' homes: here it waits for the burst to end, and the bound (set from when the work was queued, not from
   * when it began to wait) keeps a steady stream from putting it off for good.
   */
  quiet(until: number): Promise<void> {
    if (this.isQuiet() || Date.now() >= until) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.awaitingQuiet.delete(done);
        if (this.awaitingQuiet.size === 0 && this.quietCheck) {
          clearTimeout(this.quietCheck);
          this.quietCheck = null;
        }
        resolve();
      };
      const timer = setTimeout(done, until - Date.now());
      this.awaitingQuiet.add(done);
      this.scheduleQuietCheck();
    });
  }

  private isQuiet(): boolean {
    return !this.working || (this.active === 0 && Date.now() - this.lastFinishedAt >= QUIET_MS);
  }

  /** While work waits for quiet and no job runs: look again when the last job will have finished QUIET_MS ago. */
  private scheduleQuietCheck(): void {
    if (this.quietCheck || this.awaitingQuiet.size === 0 || this.active > 0) return;
    this.quietCheck = setTimeout(() => {
      this.quietCheck = null;
      if (this.isQuiet()) for (const done of [...this.awaitingQuiet]) done();
      else this.scheduleQuietCheck();
    }, Math.max(0, QUIET_MS - (Date.now() - this.lastFinishedAt)) + 1);
  }

  private wait(waiting: Set<() => void>, maxWaitMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiting.delete(done);
        if (this.held.size === 0 && this.deferred.size === 0 && this.recheck) {
          clearInterval(this.recheck);
          this.recheck = null;
        }
        resolve();
      };
      const timer = setTimeout(done, maxWaitMs);
      waiting.add(done);
      // The figure also goes stale with time alone (nothing taken lately).
      this.recheck ??= setInterval(() => this.release(), RECHECK_MS);
    });
  }

  private release(): void {
    if ((this.held.size === 0 && this.deferred.size === 0) || this.behind) return;
    for (const done of [...this.held, ...this.deferred]) done();
  }
}
