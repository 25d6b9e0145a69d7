import { configureSync, getConfig, type LogRecord } from '@logtape/logtape';
import { pino } from 'pino';

const LEVELS = { trace: 'trace', debug: 'debug', info: 'info', warning: 'warn', error: 'error', fatal: 'fatal' } as const;

/**
 * Fedify logs through LogTape; its warnings and errors (a delivery refused, a signature that did not verify) go to
 * our pino logs, once per process.
 */
export function routeFedifyLogs(level: string): void {
  if (getConfig() !== null || level === 'silent') return;
  const log = pino({ level }).child({ part: 'fedify' });
  const sink = (record: LogRecord) => {
    const message = record.message.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join('');
    log[LEVELS[record.level]]({ category: record.category.join('.'), ...record.properties }, message);
  };
  configureSync({
    sinks: { pino: sink },
    loggers: [
      { category: 'fedify', lowestLevel: level === 'debug' || level === 'trace' ? 'debug' : 'warning', sinks: ['pino'] },
      // A WebFinger lookup of an account that does not exist is an ordinary 404, not an error worth a log line.
      { category: ['fedify', 'webfinger', 'server'], lowestLevel: 'fatal', sinks: ['pino'], parentSinks: 'override' },
      { category: ['logtape', 'meta'], lowestLevel: 'error', sinks: ['pino'] },
    ],
  });
}
