import { SendActivityError, type FederationOptions } from '@fedify/fedify';
import { FetchError } from '@fedify/vocab-runtime';
import { fetchProblem } from './fetch-errors.ts';
import { foldedWarn } from './folded-log.ts';
import { excerpt, healthOf } from './health.ts';
import type { AppContext } from '../context.ts';
import { metricsOf } from '../services/metrics.ts';

type MeterProvider = NonNullable<FederationOptions<AppContext>['meterProvider']>;
type Attributes = Record<string, string | number | boolean | undefined>;

/** Any instrument Fedify makes that we do not read: every method does nothing. */
const ignored: unknown = new Proxy(() => {}, { get: () => () => {}, apply: () => undefined });

/**
 * Fedify reports what happens on the wire through OpenTelemetry instruments (its `meterProvider` option). We read
 * three of them, without an OpenTelemetry SDK: delivery attempts (per remote host, with success), deliveries given
 * up for a permanent failure (404, 410), and document fetches (per host, with the status code), and turn them into
 * per-server health and our Prometheus counters. Everything else Fedify measures is ignored.
 */
export function healthMeterProvider(app: AppContext): MeterProvider {
  const ownHost = new URL(app.config.publicUrl).host;
  const counter = (name: string) => {
    if (name === 'activitypub.delivery.sent') {
      return {
        add(_: number, a: Attributes = {}) {
          const host = String(a['activitypub.remote.host'] ?? '');
          if (a['activitypub.delivery.success'] === true) {
            if (host) healthOf(app).delivered(host);
            metricsOf(app).count('deliveries', 'delivered');
          } else {
            // The failure itself (status, answer) is recorded by recordDeliveryError, from onOutboxError.
            metricsOf(app).count('deliveries', 'failed');
          }
        },
      };
    }
    if (name === 'activitypub.delivery.permanent_failure') {
      return { add() { metricsOf(app).count('deliveries', 'abandoned'); } };
    }
    // Key fetches while checking signatures go through a document loader too, so they are counted here once.
    if (name === 'activitypub.document.fetch') {
      return {
        add(_: number, a: Attributes = {}) {
          const host = a['activitypub.remote.host'];
          const result = String(a['activitypub.lookup.result'] ?? '');
          // Our own documents say nothing about another server.
          if (typeof host !== 'string' || host === ownHost) return;
          if (result === 'fetched') {
            // The unsigned loader answers from Fedify's document cache too, and reports a hit as fetched.
            if (a['activitypub.cache.enabled'] === true) return;
            healthOf(app).fetched(host);
            metricsOf(app).count('fetches', 'ok');
          } else {
            const status = typeof a['http.response.status_code'] === 'number' ? a['http.response.status_code'] : null;
            healthOf(app).fetchFailed(host, status);
            metricsOf(app).count('fetches', 'failed');
          }
        },
      };
    }
    return ignored;
  };
  const meter = new Proxy({}, { get: (_t, method) => (method === 'createCounter' ? counter : () => ignored) });
  return { getMeter: () => meter } as unknown as MeterProvider;
}

/** One warning per failing server this often, however many deliveries to it fail meanwhile. */
const DELIVERY_WARN_EVERY_MS = 10 * 60_000;

/**
 * A delivery attempt that failed (Fedify's onOutboxError): recorded for the server with its answer or why none came,
 * and logged at warn once per server per ten minutes (Fedify's own line per attempt is not logged: logging.ts).
 */
export function recordDeliveryError(app: AppContext, error: Error): void {
  let inbox: URL, status: number | null, detail: string;
  if (error instanceof SendActivityError) {
    [inbox, status, detail] = [error.inbox, error.statusCode, `HTTP ${error.statusCode}: ${error.responseBody}`];
  } else if (error instanceof FetchError && URL.canParse(String(error.url))) {
    [inbox, status, detail] = [new URL(String(error.url)), null, fetchProblem(error.cause ?? error).detail];
  } else {
    return;
  }
  healthOf(app).deliveryFailed(inbox.host, status, detail, inbox.href);
  foldedWarn(app.config.logLevel, 'outbox', `delivery ${inbox.host}`, DELIVERY_WARN_EVERY_MS, { server: inbox.host, inbox: inbox.href, ...(status !== null ? { status } : {}) },
    `deliveries to ${inbox.host} are failing (retried with backoff): ${excerpt(detail)}`);
}
