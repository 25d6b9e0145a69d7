import type { Queryable } from './db.ts';
import type { NotificationRow } from './notifications.ts';
import { isId } from './ids.ts';

// Grouped notifications (Mastodon 4.3's v2 API). The group key is given when a notification is made (the SQL function
// notification_group_key, migration 1766000000000); a notification without one is the group `ungrouped-<id>`.

/** The types grouped (Mastodon's GROUPABLE_NOTIFICATION_TYPES). */
export const GROUPABLE_TYPES = ['favourite', 'reblog', 'follow'] as const;
/** How many of a group's most recent senders are named (Mastodon's SAMPLE_ACCOUNTS_SIZE). */
export const SAMPLE_ACCOUNTS = 8;

export interface ScanFilters {
  types?: string[] | undefined;
  excludeTypes?: string[] | undefined;
  accountId?: string | undefined;
  includeFiltered?: boolean | undefined;
}

const COLUMNS = 'n.id, n.account_id, n.from_account_id, n.type, n.status_id, n.report_id, n.collection_id, n.created_at, n.group_key, n.filtered';

function filterSql(f: ScanFilters, values: unknown[]): string {
  let sql = f.includeFiltered ? '' : ' AND NOT n.filtered';
  if (f.types && f.types.length > 0) {
    values.push(f.types);
    sql += ` AND n.type = ANY($${values.length}::text[])`;
  }
  if (f.excludeTypes && f.excludeTypes.length > 0) {
    values.push(f.excludeTypes);
    sql += ` AND NOT (n.type = ANY($${values.length}::text[]))`;
  }
  if (f.accountId) {
    values.push(f.accountId);
    sql += ` AND n.from_account_id = $${values.length}`;
  }
  return sql;
}

/**
 * One batch of an account's notifications in id order (`desc` from newest, `asc` from oldest), strictly between
 * `above` and `below` when given, without those about deleted statuses.
 */
export async function scanNotifications(db: Queryable, accountId: string, f: ScanFilters, bounds: { below?: string | undefined; above?: string | undefined }, order: 'asc' | 'desc', limit: number): Promise<NotificationRow[]> {
  const values: unknown[] = [accountId];
  let where = filterSql(f, values);
  if (bounds.below !== undefined) {
    values.push(bounds.below);
    where += ` AND n.id < $${values.length}`;
  }
  if (bounds.above !== undefined) {
    values.push(bounds.above);
    where += ` AND n.id > $${values.length}`;
  }
  values.push(limit);
  const { rows } = await db.query<NotificationRow>(
    `SELECT ${COLUMNS} FROM notifications n LEFT JOIN statuses s ON s.id = n.status_id
      WHERE n.account_id = $1 AND (n.status_id IS NULL OR s.deleted_at IS NULL)${where}
      ORDER BY n.id ${order === 'asc' ? 'ASC' : 'DESC'} LIMIT $${values.length}`,
    values,
  );
  return rows;
}

export interface GroupData {
  /** The group's notifications up to the bound. */
  count: number;
  /** Senders of its most recent notifications, newest first. */
  sampleAccountIds: string[];
  mostRecentId: string;
  mostRecentAt: Date;
}

/**
 * For each group key, its notifications with an id at most `upTo` (all when null), through the group index: their
 * count, the senders of the most recent ones and the most recent one.
 */
export async function groupsData(db: Queryable, accountId: string, keys: string[], upTo: string | null, fromAccountId?: string): Promise<Map<string, GroupData>> {
  const out = new Map<string, GroupData>();
  if (keys.length === 0) return out;
  const cond = `n.account_id = $1 AND n.group_key = g.key AND ($2::bigint IS NULL OR n.id <= $2) AND ($4::bigint IS NULL OR n.from_account_id = $4)`;
  const { rows } = await db.query<{ key: string; count: string; sample: string[]; recent_id: string | null; recent_at: Date | null }>(
    `SELECT g.key,
            (SELECT count(*) FROM notifications n WHERE ${cond}) AS count,
            ARRAY(SELECT n.from_account_id::text FROM notifications n WHERE ${cond} ORDER BY n.id DESC LIMIT ${SAMPLE_ACCOUNTS}) AS sample,
            r.id AS recent_id, r.created_at AS recent_at
       FROM unnest($3::text[]) AS g(key)
       LEFT JOIN LATERAL (SELECT n.id, n.created_at FROM notifications n WHERE ${cond} ORDER BY n.id DESC LIMIT 1) r ON true`,
    [accountId, upTo, keys, fromAccountId ?? null],
  );
  for (const r of rows) {
    if (r.recent_id === null) continue;
    out.set(r.key, { count: Number(r.count), sampleAccountIds: r.sample, mostRecentId: r.recent_id, mostRecentAt: r.recent_at! });
  }
  return out;
}

/** The notification id of an `ungrouped-<id>` key (one that is no id finds nothing: 0). */
const ungroupedId = (key: string) => {
  if (!key.startsWith('ungrouped-')) return null;
  const id = key.slice('ungrouped-'.length);
  return isId(id) ? id : '0';
};

/** The most recent notification of a group (not about a deleted status), or null when there is none. */
export async function latestOfGroup(db: Queryable, accountId: string, key: string): Promise<NotificationRow | null> {
  const id = ungroupedId(key);
  const { rows } = await db.query<NotificationRow>(
    `SELECT ${COLUMNS} FROM notifications n LEFT JOIN statuses s ON s.id = n.status_id
      WHERE n.account_id = $1 AND ${id ? 'n.id = $2::bigint' : 'n.group_key = $2'} AND (n.status_id IS NULL OR s.deleted_at IS NULL)
      ORDER BY n.id DESC LIMIT 1`,
    [accountId, id ?? key],
  );
  return rows[0] ?? null;
}

/** Deletes a group's notifications; how many there were. */
export async function dismissGroup(db: Queryable, accountId: string, key: string): Promise<number> {
  const id = ungroupedId(key);
  const { rowCount } = await db.query(
    `DELETE FROM notifications WHERE account_id = $1 AND ${id ? 'id = $2::bigint' : 'group_key = $2'}`,
    [accountId, id ?? key],
  );
  return rowCount ?? 0;
}

/** A page of a group's notifications (newest first; `min_id` pages forward): their ids and senders. */
export async function groupMembersPage(db: Queryable, accountId: string, key: string, p: { maxId?: string | undefined; sinceId?: string | undefined; minId?: string | undefined; limit: number }): Promise<{ id: string; from_account_id: string }[]> {
  const id = ungroupedId(key);
  const values: unknown[] = [accountId, id ?? key];
  const conds: string[] = [];
  for (const [v, op] of [[p.maxId, '<'], [p.sinceId, '>'], [p.minId, '>']] as const) {
    if (v === undefined) continue;
    values.push(v);
    conds.push(`n.id ${op} $${values.length}`);
  }
  values.push(p.limit);
  const { rows } = await db.query<{ id: string; from_account_id: string }>(
    `SELECT n.id, n.from_account_id FROM notifications n
      WHERE n.account_id = $1 AND ${id ? 'n.id = $2::bigint' : 'n.group_key = $2'}${conds.map((c) => ` AND ${c}`).join('')}
      ORDER BY n.id ${p.minId !== undefined ? 'ASC' : 'DESC'} LIMIT $${values.length}`,
    values,
  );
  return p.minId !== undefined ? rows.reverse() : rows;
}

/**
 * How many groups the notifications after `afterId` make, reading at most `scan` of them (oldest first) as the
 * ungrouped rows Mastodon's count pages through.
 */
export async function groupsAfter(db: Queryable, accountId: string, afterId: string | null, f: ScanFilters, groupedTypes: readonly string[], scan: number): Promise<number> {
  const values: unknown[] = [accountId, afterId, groupedTypes, scan];
  const where = filterSql(f, values);
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(DISTINCT k)::int AS n FROM (
       SELECT CASE WHEN n.group_key IS NOT NULL AND n.type = ANY($3::text[]) THEN n.group_key ELSE 'ungrouped-' || n.id END AS k
         FROM notifications n LEFT JOIN statuses s ON s.id = n.status_id
        WHERE n.account_id = $1 AND n.id > coalesce($2::bigint, 0) AND (n.status_id IS NULL OR s.deleted_at IS NULL)${where}
        ORDER BY n.id ASC LIMIT $4) x`,
    values,
  );
  return rows[0]!.n;
}
