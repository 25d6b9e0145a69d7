import type { ServerHealthRow } from '../../storage/federation-health.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** One remote server's federation health, as the operators' queue page shows it. */
export function serializeFederationServer(s: ServerHealthRow) {
  return {
    host: s.host,
    last_delivery_at: iso(s.last_delivery_at),
    last_fetch_at: iso(s.last_fetch_at),
    deliveries: s.deliveries,
    delivery_failures: s.delivery_failures,
    fetches: s.fetches,
    fetch_failures: s.fetch_failures,
    dropped_inbound: s.dropped_inbound,
    last_failure: s.last_failure_at
      ? { at: iso(s.last_failure_at), kind: s.last_failure_kind, status: s.last_failure_status, detail: s.last_failure_detail, url: s.last_failure_url }
      : null,
    last_drop: s.last_drop_at ? { at: iso(s.last_drop_at), reason: s.last_drop_reason } : null,
    signature_spec: s.signature_spec,
  };
}
