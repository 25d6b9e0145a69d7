// Start-up (migrations, every route's schemas compiled, modules loaded) leaves its garbage spread over many V8
// old-space pages; V8's idle collection frees the objects but keeps the pages, ~20 MB resident for good. One
// compacting collection once start-up is over gives them back. `npm start` passes --expose-gc for it; started
// without that flag (tests, other launchers) this does nothing.
import { flushCompileCache } from 'node:module';
import { performance } from 'node:perf_hooks';

/**
 * Node keeps each module's compile-cache entry in malloc until exit (~11 MB at rest); writing them out frees them.
 * Called once the modules are imported, so that the rest of start-up reuses that memory (malloc cannot give holes in
 * its heap back to the system); again before the collection, for the modules loaded since.
 */
export function releaseCompileCache(): void {
  flushCompileCache();
}

/** Start-up work continues after listening (the outbox sweep, repeating jobs): the collection waits for it. */
const SETTLE_MS = 10_000;
/**
 * The collection stops the process for 50–150 ms (two full passes over the heap). A process already serving (a
 * streaming process whose sockets opened at once, posts arriving) would hold every event for that long, so it waits
 * for a quiet second: the event loop busy less than this share of it.
 */
const QUIET_SHARE = 0.05;
const CHECK_EVERY_MS = 1_000;
/** A process that is never quiet does without it (it is a saving of memory, not a need). */
const GIVE_UP_AFTER_MS = 10 * 60_000;

export function compactAfterStart(): void {
  const gc = (globalThis as { gc?: (options: { type: string; execution: string; flavor: string }) => void }).gc;
  if (!gc) return;
  const started = Date.now();
  let last = performance.eventLoopUtilization();
  const check = () => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    // 'last-resort' is V8's memory-reducing full collection: it compacts pages and releases the emptied ones.
    if (busy < QUIET_SHARE) {
      releaseCompileCache();
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    } else if (Date.now() - started < GIVE_UP_AFTER_MS) setTimeout(check, CHECK_EVERY_MS).unref();
  };
  setTimeout(() => {
    last = performance.eventLoopUtilization();
    setTimeout(check, CHECK_EVERY_MS).unref();
  }, SETTLE_MS - CHECK_EVERY_MS).unref();
}
