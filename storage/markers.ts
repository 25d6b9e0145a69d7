import type { Queryable } from './db.ts';

export type MarkerTimeline = 'home' | 'notifications';

export interface MarkerRow {
  timeline: MarkerTimeline;
  last_read_id: string;
  version: number;
  updated_at: Date;
}

export async function findMarkers(db: Queryable, accountId: string, timelines: MarkerTimeline[]): Promise<MarkerRow[]> {
  const { rows } = await db.query<MarkerRow>(
    `SELECT timeline, last_read_id, version, updated_at FROM markers WHERE account_id = $1 AND timeline = ANY($2::text[])`,
    [accountId, timelines],
  );
  return rows;
}

/** Sets a marker; the version rises by one on every update, also when two updates race (the row lock orders them). */
export async function saveMarker(db: Queryable, accountId: string, timeline: MarkerTimeline, lastReadId: string): Promise<MarkerRow> {
  const { rows } = await db.query<MarkerRow>(
    `INSERT INTO markers (account_id, timeline, last_read_id) VALUES ($1, $2, $3)
     ON CONFLICT (account_id, timeline) DO UPDATE
       SET last_read_id = EXCLUDED.last_read_id, version = markers.version + 1, updated_at = now()
     RETURNING timeline, last_read_id, version, updated_at`,
    [accountId, timeline, lastReadId],
  );
  return rows[0]!;
}
