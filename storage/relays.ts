import type { Queryable } from './db.ts';

/** A relay this server subscribes to (migration 1766740000000_relays.sql). */
export type RelayState = 'pending' | 'accepted' | 'rejected';
export type RelayKind = 'mastodon' | 'litepub';

export interface RelayRow {
  id: string;
  url: string;
  kind: RelayKind | null;
  actor_uri: string | null;
  inbox_url: string | null;
  state: RelayState;
  follow_uri: string;
  created_at: Date;
  updated_at: Date;
}

/** Operators keep a handful of relays; every listing stops here. */
export const MAX_RELAYS = 100;

/** A new relay, pending; null when one with this URL is already there. */
export async function insertRelay(db: Queryable, url: string, followUri: string): Promise<RelayRow | null> {
  const { rows } = await db.query<RelayRow>(
    'INSERT INTO relays (url, follow_uri) VALUES ($1, $2) ON CONFLICT (url) DO NOTHING RETURNING *', [url, followUri],
  );
  return rows[0] ?? null;
}

export async function findRelay(db: Queryable, id: string): Promise<RelayRow | null> {
  const { rows } = await db.query<RelayRow>('SELECT * FROM relays WHERE id = $1', [id]);
  return rows[0] ?? null;
}

export async function findRelayByUrl(db: Queryable, url: string): Promise<RelayRow | null> {
  const { rows } = await db.query<RelayRow>('SELECT * FROM relays WHERE url = $1', [url]);
  return rows[0] ?? null;
}

export async function findRelayByFollowUri(db: Queryable, followUri: string): Promise<RelayRow | null> {
  const { rows } = await db.query<RelayRow>('SELECT * FROM relays WHERE follow_uri = $1', [followUri]);
  return rows[0] ?? null;
}

/** The relay whose actor this is (a LitePub relay, or a Mastodon-style one whose Accept named its actor). */
export async function findRelayByActor(db: Queryable, actorUri: string): Promise<RelayRow | null> {
  const { rows } = await db.query<RelayRow>('SELECT * FROM relays WHERE actor_uri = $1 ORDER BY id LIMIT 1', [actorUri]);
  return rows[0] ?? null;
}

export async function listRelays(db: Queryable, state?: RelayState): Promise<RelayRow[]> {
  const { rows } = await db.query<RelayRow>(
    `SELECT * FROM relays WHERE $1::text IS NULL OR state = $1 ORDER BY id LIMIT ${MAX_RELAYS}`, [state ?? null],
  );
  return rows;
}

/** What the worker learnt by looking at the relay's URL. */
export async function setRelayEndpoint(db: Queryable, id: string, kind: RelayKind, inboxUrl: string, actorUri: string | null): Promise<void> {
  await db.query('UPDATE relays SET kind = $2, inbox_url = $3, actor_uri = $4, updated_at = now() WHERE id = $1', [id, kind, inboxUrl, actorUri]);
}

/** The relay's answer; `actorUri` is who answered (kept when not known yet, as for a Mastodon-style relay). */
export async function setRelayState(db: Queryable, id: string, state: RelayState, actorUri: string | null): Promise<void> {
  await db.query(
    'UPDATE relays SET state = $2, actor_uri = COALESCE(actor_uri, $3), updated_at = now() WHERE id = $1', [id, state, actorUri],
  );
}

export async function deleteRelay(db: Queryable, id: string): Promise<RelayRow | null> {
  const { rows } = await db.query<RelayRow>('DELETE FROM relays WHERE id = $1 RETURNING *', [id]);
  return rows[0] ?? null;
}
