import type { Activity } from '@fedify/vocab';
import type { InboxListenerSetters, RequestContext, UnverifiedActivityReason } from '@fedify/fedify';
import { foldedWarn, partLogger } from './folded-log.ts';
import type { AppContext } from '../context.ts';
import { healthOf } from './health.ts';
import { activityLabel, metricsOf } from '../services/metrics.ts';

/** Why an inbound activity was dropped; also the label of `fedi_inbound_dropped_total`. */
export type DropReason = 'actor_unavailable' | 'object_unavailable' | 'signature' | 'refused' | 'not_addressed' | 'unsupported';

/** Repeats of one server's drops for one reason within this window are logged at debug, and counted in the next warning. */
const FOLD_MS = 60_000;
/** A suspended server keeps sending for days: the operator chose that, so once an hour is reminder enough. */
const REFUSED_FOLD_MS = 3_600_000;

const dropped = new WeakSet<object>();

/** The activity's type as ActivityStreams names it (`Follow`), for logs and labels. */
export function typeName(activity: Activity): string {
  // The class's type IRI (what getTypeId reads), without importing the vocabulary: the inbound path loads this
  // module, and Fedify is loaded at first use (federation/lazy.ts).
  return (activity.constructor as { typeId?: URL }).typeId?.href.split(/[#/]/).pop() ?? 'Activity';
}

/** The server an activity came from: its actor's host, else its own id's. */
function hostOf(activity: Pick<Activity, 'actorId' | 'id'>): string {
  return (activity.actorId ?? activity.id)?.host ?? 'unknown';
}

/**
 * Logs one dropped inbound activity (once, at warn, naming the server and why) and counts it for that server and in
 * the metrics. A server that keeps sending what we drop for the same reason gets one warning a minute (an hour for a
 * suspended one), the next one saying how many were folded into it. `quiet` drops (expected ones, such as a Delete
 * from an account whose key is already gone) are logged at info.
 */
export function dropInbound(app: AppContext, activity: Activity, reason: DropReason, detail: string, options: { status?: number | null; quiet?: boolean; server?: string } = {}): void {
  dropped.add(activity);
  const server = options.server ?? hostOf(activity);
  const type = typeName(activity);
  healthOf(app).droppedInbound(server, `${type}: ${detail}`);
  metricsOf(app).count('drops', reason);
  const fields = { server, activity: type, id: activity.id?.href ?? null, reason, ...(options.status != null ? { status: options.status } : {}) };
  const message = `dropped ${type} from ${server}: ${detail}`;
  if (options.quiet) return partLogger(app.config.logLevel, 'inbox').info(fields, message);
  foldedWarn(app.config.logLevel, 'inbox', `drop ${server} ${reason}`, reason === 'refused' ? REFUSED_FOLD_MS : FOLD_MS, fields, message);
}

/**
 * An inbox POST refused before it was read, its signer's server being suspended here (federation/mount.ts): logged
 * and counted as a drop, at most one warning an hour per server.
 */
export function dropRefusedPost(app: AppContext, server: string): void {
  healthOf(app).droppedInbound(server, 'inbox POST refused: the server is suspended here');
  metricsOf(app).count('drops', 'refused');
  foldedWarn(app.config.logLevel, 'inbox', `drop ${server} refused-post`, REFUSED_FOLD_MS, { server, reason: 'refused' }, `refused an inbox POST from ${server}: the server is suspended here`);
}

/** Whether this activity was dropped by a listener (it is then counted as such). */
export function wasDropped(activity: Activity): boolean {
  return dropped.has(activity);
}

/** Why Fedify could not verify an activity's signature, in an operator's words. */
function signatureProblem(reason: UnverifiedActivityReason): { detail: string; status: number | null } {
  if (reason.type === 'noSignature') return { detail: 'it carries no HTTP signature', status: null };
  if (reason.type === 'invalidSignature') return { detail: `its signature does not verify${reason.keyId ? ` with key ${reason.keyId.href}` : ''}`, status: null };
  const status = 'status' in reason.result ? reason.result.status : null;
  const why = status !== null ? `HTTP ${status}` : 'error' in reason.result ? reason.result.error.message : 'unknown error';
  return { detail: `its signing key ${reason.keyId.href} could not be fetched: ${why}`, status };
}

/**
 * Inbox listeners that count every activity by type and outcome (processed, dropped, failed), and report the
 * activities Fedify could not verify. Wraps the setters so that `.on()` needs no change where listeners are added.
 */
export function trackedInboxListeners<T extends AppContext>(setters: InboxListenerSetters<T>): InboxListenerSetters<T> {
  setters.onUnverifiedActivity((fed: RequestContext<T>, activity: Activity, reason: UnverifiedActivityReason) => {
    metricsOf(fed.data).count('inbound', activityLabel(typeName(activity)), 'unverified');
    const { detail, status } = signatureProblem(reason);
    // A Delete whose key is gone is an account deleting itself: its key goes with it, and nothing is lost.
    const gone = typeName(activity) === 'Delete' && (status === 404 || status === 410);
    // Unverified, the activity's actor is only a claim: the server is the one its signature names, when it names one.
    const server = 'keyId' in reason && reason.keyId ? reason.keyId.host : undefined;
    dropInbound(fed.data, activity, 'signature', detail, { status, quiet: gone, ...(server ? { server } : {}) });
  });
  const proxy: InboxListenerSetters<T> = new Proxy(setters, {
    get(target, prop, receiver) {
      if (prop === 'on') {
        return (type: Parameters<typeof target.on>[0], listener: Parameters<typeof target.on>[1]) => {
          target.on(type, async (fed, activity) => {
            const label = activityLabel(typeName(activity));
            try {
              await listener(fed, activity);
            } catch (err) {
              metricsOf(fed.data).count('inbound', label, 'failed');
              throw err;
            }
            metricsOf(fed.data).count('inbound', label, wasDropped(activity) ? 'dropped' : 'processed');
          });
          return proxy;
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result === target ? proxy : result;
      };
    },
  });
  return proxy;
}

/** Drops an activity whose actor or object could not be had, saying what its server answered when we know. */
export function dropUnavailable(app: AppContext, activity: Activity, what: 'actor' | 'object', url: URL | null): void {
  const failure = url ? healthOf(app).recentFetchFailure(url.href) : null;
  const why = failure?.detail ?? 'no usable document (gone, not an ActivityPub object, or not confirmed by its own server)';
  dropInbound(app, activity, what === 'actor' ? 'actor_unavailable' : 'object_unavailable', `${what} ${url?.href ?? '(none)'} could not be fetched: ${why}`, { status: failure?.status ?? null });
}
