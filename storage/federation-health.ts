import type { Queryable } from './db.ts';

/** What one process saw of one remote server since its last flush (federation/health.ts adds these up). */
export interface ServerHealthDelta {
  host: string;
  lastDeliveryAt: Date | null;
  lastFetchAt: Date | null;
  deliveries: number;
  deliveryFailures: number;
  fetches: number;
  fetchFailures: number;
  droppedInbound: number;
  lastFailureAt: Date | null;
  lastFailureKind: string | null;
  lastFailureStatus: number | null;
  lastFailureDetail: string | null;
  lastFailureUrl: string | null;
  lastDropAt: Date | null;
  lastDropReason: string | null;
  signatureSpec: string | null;
}

export interface ServerHealthRow {
  host: string;
  last_delivery_at: Date | null;
  last_fetch_at: Date | null;
  deliveries: number;
  delivery_failures: number;
  fetches: number;
  fetch_failures: number;
  dropped_inbound: number;
  last_failure_at: Date | null;
  last_failure_kind: string | null;
  last_failure_status: number | null;
  last_failure_detail: string | null;
  last_failure_url: string | null;
  last_drop_at: Date | null;
  last_drop_reason: string | null;
  signature_spec: string | null;
  updated_at: Date;
}

const latest = (column: string) => `CASE WHEN EXCLUDED.${column} IS NOT NULL AND (s.${column} IS NULL OR EXCLUDED.${column} >= s.${column})`;

/**
 * Adds a batch of deltas in one statement: counters are summed, times keep the latest, and the failure and drop
 * descriptions go with their latest time.
 */
export async function upsertServerHealth(db: Queryable, deltas: ServerHealthDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  const rows = deltas.map((d) => ({
    host: d.host, last_delivery_at: d.lastDeliveryAt, last_fetch_at: d.lastFetchAt, deliveries: d.deliveries,
    delivery_failures: d.deliveryFailures, fetches: d.fetches, fetch_failures: d.fetchFailures, dropped_inbound: d.droppedInbound,
    last_failure_at: d.lastFailureAt, last_failure_kind: d.lastFailureKind, last_failure_status: d.lastFailureStatus,
    last_failure_detail: d.lastFailureDetail, last_failure_url: d.lastFailureUrl, last_drop_at: d.lastDropAt,
    last_drop_reason: d.lastDropReason, signature_spec: d.signatureSpec,
  }));
  await db.query(
    `INSERT INTO federation_servers AS s (host, last_delivery_at, last_fetch_at, deliveries, delivery_failures, fetches,
       fetch_failures, dropped_inbound, last_failure_at, last_failure_kind, last_failure_status, last_failure_detail,
       last_failure_url, last_drop_at, last_drop_reason, signature_spec, updated_at)
     SELECT r.*, now() FROM jsonb_to_recordset($1::jsonb) AS r(host text, last_delivery_at timestamptz,
       last_fetch_at timestamptz, deliveries bigint, delivery_failures bigint, fetches bigint, fetch_failures bigint,
       dropped_inbound bigint, last_failure_at timestamptz, last_failure_kind text, last_failure_status integer,
       last_failure_detail text, last_failure_url text, last_drop_at timestamptz, last_drop_reason text, signature_spec text)
     ORDER BY r.host
     ON CONFLICT (host) DO UPDATE SET
       last_delivery_at = GREATEST(s.last_delivery_at, EXCLUDED.last_delivery_at),
       last_fetch_at = GREATEST(s.last_fetch_at, EXCLUDED.last_fetch_at),
       deliveries = s.deliveries + EXCLUDED.deliveries,
       delivery_failures = s.delivery_failures + EXCLUDED.delivery_failures,
       fetches = s.fetches + EXCLUDED.fetches,
       fetch_failures = s.fetch_failures + EXCLUDED.fetch_failures,
       dropped_inbound = s.dropped_inbound + EXCLUDED.dropped_inbound,
       last_failure_kind = ${latest('last_failure_at')} THEN EXCLUDED.last_failure_kind ELSE s.last_failure_kind END,
       last_failure_status = ${latest('last_failure_at')} THEN EXCLUDED.last_failure_status ELSE s.last_failure_status END,
       last_failure_detail = ${latest('last_failure_at')} THEN EXCLUDED.last_failure_detail ELSE s.last_failure_detail END,
       last_failure_url = ${latest('last_failure_at')} THEN EXCLUDED.last_failure_url ELSE s.last_failure_url END,
       last_failure_at = GREATEST(s.last_failure_at, EXCLUDED.last_failure_at),
       last_drop_reason = ${latest('last_drop_at')} THEN EXCLUDED.last_drop_reason ELSE s.last_drop_reason END,
       last_drop_at = GREATEST(s.last_drop_at, EXCLUDED.last_drop_at),
       signature_spec = COALESCE(EXCLUDED.signature_spec, s.signature_spec),
       updated_at = now()`,
    [JSON.stringify(rows)],
  );
}

/** Servers, those with the most recent failure first, then by host. */
export async function listServerHealth(db: Queryable, limit = 100): Promise<ServerHealthRow[]> {
  const { rows } = await db.query<ServerHealthRow>(
    `SELECT host, last_delivery_at, last_fetch_at, deliveries::int, delivery_failures::int, fetches::int, fetch_failures::int,
            dropped_inbound::int, last_failure_at, last_failure_kind, last_failure_status, last_failure_detail, last_failure_url,
            last_drop_at, last_drop_reason, signature_spec, updated_at
       FROM federation_servers ORDER BY GREATEST(last_failure_at, last_drop_at) DESC NULLS LAST, host LIMIT $1`,
    [limit],
  );
  return rows;
}

/** Forgets servers not heard of for a long time, so the table stays as small as the set of servers we talk to. */
export async function pruneServerHealth(db: Queryable, olderThanDays: number): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM federation_servers WHERE updated_at < now() - make_interval(days => $1)`, [olderThanDays]);
  return rowCount ?? 0;
}
