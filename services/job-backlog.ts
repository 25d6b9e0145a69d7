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
 * "Behind" is measured on the worker's own jobs, without asking Redis: how long the latest job it took had waited in
 * the queue. That figure holds only while the worker is making progress (it took or finished a job lately): one that
 * has done nothing for a while has either an empty queue or jobs stuck on PostgreSQL or Redis, and holding posts back
 * would help neither. A process without a worker (ROLE=web), or whose worker is paused while a dependency is away,
 * never holds a post back: its posts do not compete with the worker for a CPU.
 */

/** The queue wait over which the worker counts as behind. */
export const BEHIND_MS = 1_000;

/** How long the latest job's wait stands for the queue after the worker's last progress. */
const FRESH_MS = 500;
/** How often held posts look again. */
const RECHECK_MS = 50;

export class JobBacklog {
  /** The longest a post is held back (POST_HOLD_MS): after this it is accepted anyway (the backlog drains on its own). */
  private readonly maxHoldMs: number;
  private working = false;
  private lastWaitMs = 0;
  private lastProgressAt = 0;
  private readonly held = new Set<() => void>();
  private recheck: NodeJS.Timeout | null = null;

  constructor(maxHoldMs: number) {
    this.maxHoldMs = maxHoldMs;
  }

  /** Whether this process runs a job worker taking jobs (started or resumed; stopped or paused). */
  setWorking(working: boolean): void {
    this.working = working;
    this.release();
  }

  /**
   * The worker took a job queued at `queuedAt` (ms since the epoch). Only jobs meant to run at once count: a retry
   * after its backoff or a delayed job has waited on purpose.
   */
  started(queuedAt: number, immediate: boolean): void {
    this.lastProgressAt = Date.now();
    if (immediate) this.lastWaitMs = Math.max(0, this.lastProgressAt - queuedAt);
    this.release();
  }

  finished(): void {
    this.lastProgressAt = Date.now();
    this.release();
  }

  get behind(): boolean {
    return this.working && this.lastWaitMs > BEHIND_MS && Date.now() - this.lastProgressAt < FRESH_MS;
  }

  /** Resolves at once unless the worker is behind; then once it has caught up, or after the longest hold. */
  admit(): Promise<void> {
    if (this.maxHoldMs === 0 || !this.behind) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.held.delete(done);
        if (this.held.size === 0 && this.recheck) {
          clearInterval(this.recheck);
          this.recheck = null;
        }
        resolve();
      };
      const timer = setTimeout(done, this.maxHoldMs);
      this.held.add(done);
      // The figure also goes stale with time alone (nothing taken lately).
      this.recheck ??= setInterval(() => this.release(), RECHECK_MS);
    });
  }

  private release(): void {
    if (this.held.size === 0 || this.behind) return;
    for (const done of [...this.held]) done();
  }
}
