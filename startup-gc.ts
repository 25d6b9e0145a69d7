// Start-up (migrations, every route's schemas compiled, modules loaded) leaves its garbage spread over many V8
// old-space pages; V8's idle collection frees the objects but keeps the pages, ~20 MB resident for good. One
// compacting collection once start-up is over gives them back. `npm start` passes --expose-gc for it; started
// without that flag (tests, other launchers) this does nothing.

/** Start-up work continues after listening (the outbox sweep, repeating jobs): the collection waits for it. */
const SETTLE_MS = 10_000;

export function compactAfterStart(): void {
  const gc = (globalThis as { gc?: (options: { type: string; execution: string; flavor: string }) => void }).gc;
  if (!gc) return;
  // 'last-resort' is V8's memory-reducing full collection: it compacts pages and releases the emptied ones.
  setTimeout(() => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }), SETTLE_MS).unref();
}
