import { configureSync, getConfig, type LogRecord } from '@logtape/logtape';
import { pino } from 'pino';
import { malformedActivityError } from './inbound-limits.ts';

/**
 * Fedify's lines that say again what our own logs and the per-server health already say: an answer under 500 to a
 * request (Fastify logs every request; a 404 or 406 there is a browser or an unknown path handed on to our routes),
 * a failed document fetch (health.ts records it per server, and a dropped activity says why), and a signature that
 * did not verify (drops.ts logs the activity once, with the server and the reason), a failed delivery attempt (one
 * warning per server, meter.ts); and one that is no fault.
 */
function reportedElsewhere(record: LogRecord): boolean {
  const category = record.category.join('.');
  if (category === 'fedify.federation.http') return typeof record.properties.status === 'number' && record.properties.status < 500;
  if (category === 'fedify.runtime.docloader') return String(record.rawMessage).startsWith('Failed to fetch document');
  if (category === 'fedify.federation.inbox') return record.rawMessage === "Failed to verify the request's HTTP Signatures.";
  // The instance actor has no followers, following or featured collections, by design; Fedify warns of it each time
  // the actor is served.
  if (category === 'fedify.federation.actor') return String(record.rawMessage).startsWith('You configured a');
  // Each failed delivery attempt (two lines each): recordDeliveryError (meter.ts) warns once per server instead.
  // Giving up on a delivery is still logged.
  if (category === 'fedify.federation.outbox') {
    const message = String(record.rawMessage);
    // Activities to one inbox are signed with the RSA key alone, on purpose (no Ed25519 proof, as Mastodon sends
    // none: federation/outbound.ts sendTo); Fedify warns that it made no proof each time.
    if (message.startsWith('No supported key found to create a proof')) return true;
    return message.startsWith('Failed to send activity') && !message.includes('giving up');
  }
  return false;
}

const LEVELS = { trace: 'trace', debug: 'debug', info: 'info', warning: 'warn', error: 'error', fatal: 'fatal' } as const;

/** Fedify's errors that are another server's malformed or mismatched activity, refused with a 4xx: warnings. */
const REFUSED_INPUT = /^(Failed to parse (JSON|JSON-LD|activity)|Missing actor|The signer|Actor \{recipient\} not found|Unsupported activity type)/;
function refusedInput(record: LogRecord): boolean {
  const category = record.category.join('.');
  if (category === 'fedify.federation.inbox') return REFUSED_INPUT.test(String(record.rawMessage));
  // Errors thrown while reading a POSTed activity, which federation/mount.ts answers 400.
  return category === 'fedify.federation.http' && record.properties.method === 'POST' && malformedActivityError(record.properties.error);
}

/**
 * Fedify logs through LogTape; its warnings and errors (a delivery refused, a signature that did not verify) go to
 * our pino logs, once per process.
 */
export function routeFedifyLogs(level: string): void {
  if (getConfig() !== null || level === 'silent') return;
  const log = pino({ level }).child({ part: 'fedify' });
  const sink = (record: LogRecord) => {
    if (reportedElsewhere(record)) return;
    const message = record.message.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join('');
    const level = record.level === 'error' && refusedInput(record) ? 'warn' : LEVELS[record.level];
    log[level]({ category: record.category.join('.'), ...record.properties }, message);
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
