import { pino, type Logger } from 'pino';

/** Folds kept at once; the oldest goes first (a flood of distinct servers costs memory only up to this). */
const KEPT = 1_000;

interface Fold { until: number; suppressed: number }
const folds = new Map<string, Fold>();
const loggers = new Map<string, Logger>();

/** One pino logger per level and part (`inbox`, `outbox`), made once. */
export function partLogger(level: string, part: string): Logger {
  const name = `${level} ${part}`;
  let log = loggers.get(name);
  if (!log) loggers.set(name, (log = pino({ level }).child({ part })));
  return log;
}

/**
 * A warning that one cause (one server failing in one way) logs once per window: repeats inside it go to debug and
 * are counted, and the next warning says how many there were (`alsoSinceLastWarning`).
 */
export function foldedWarn(level: string, part: string, key: string, windowMs: number, fields: Record<string, unknown>, message: string): void {
  const log = partLogger(level, part);
  const fold = folds.get(key);
  if (fold && fold.until > Date.now()) {
    fold.suppressed++;
    return log.debug(fields, message);
  }
  if (folds.size >= KEPT) folds.delete(folds.keys().next().value!);
  folds.set(key, { until: Date.now() + windowMs, suppressed: 0 });
  log.warn({ ...fields, ...(fold?.suppressed ? { alsoSinceLastWarning: fold.suppressed } : {}) }, message);
}
