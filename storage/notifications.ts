import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** `admin.sign_up` and `admin.report` go to operators (services/operator-alerts.ts). */
export type NotificationType = 'mention' | 'status' | 'reblog' | 'follow' | 'follow_request' | 'favourite' | 'poll' | 'update' | 'admin.sign_up' | 'admin.report' | 'quote' | 'quoted_update' | 'added_to_collection' | 'collection_update';
export const NOTIFICATION_TYPES: NotificationType[] = ['mention', 'status', 'reblog', 'follow', 'follow_request', 'favourite', 'poll', 'update', 'admin.sign_up', 'admin.report', 'quote', 'quoted_update', 'added_to_collection', 'collection_update'];

export interface NotificationRow {
  id: string;
  account_id: string;
  from_account_id: string;
  type: NotificationType;
  status_id: string | null;
  /** The report an `admin.report` is about. Absent where a query does not read it. */
  report_id?: string | null;
  /** The collection of an `added_to_collection` or `collection_update`. Absent where a query does not read it. */
  collection_id?: string | null;
  created_at: Date;
  /** Its group (storage/notification-groups.ts); null when ungrouped. Absent where a query does not read it. */
  group_key?: string | null;
  /** Kept aside by the recipient's notification policy (shown through a notification request). */
  filtered?: boolean;
}

/**
 * Records an event for accountId; nobody is notified of their own actions (but of their poll's end), and one event notifies once. Returns the
 * new notification, or null when there is none (a repeat, one's own action, a remote account).
 */
export async function notify(db: Queryable, accountId: string, fromAccountId: string, type: NotificationType, statusId: string | null = null, filtered = false, reportId: string | null = null, collectionId: string | null = null): Promise<NotificationRow | null> {
  // A poll's end is the one event its author hears of from themselves, as in Mastodon.
  if (accountId === fromAccountId && type !== 'poll') return null;
  const { rows } = await db.query<NotificationRow>(
    `INSERT INTO notifications (account_id, from_account_id, type, status_id, filtered, group_key, report_id, collection_id)
     SELECT $1, $2, $3, $4, $5, CASE WHEN $5 THEN NULL ELSE notification_group_key($1, $3, $4) END, $6, $7 FROM accounts WHERE id = $1 AND domain IS NULL
     ON CONFLICT DO NOTHING
     RETURNING id, account_id, from_account_id, type, status_id, report_id, collection_id, created_at, group_key, filtered`,
    [accountId, fromAccountId, type, statusId, filtered, reportId, collectionId],
  );
  return rows[0] ?? null;
}

export async function removeNotification(db: Queryable, accountId: string, fromAccountId: string, type: NotificationType, statusId: string | null = null, collectionId: string | null = null): Promise<void> {
  await db.query(
    `DELETE FROM notifications WHERE account_id = $1 AND from_account_id = $2 AND type = $3 AND coalesce(status_id, 0) = coalesce($4::bigint, 0)
        AND coalesce(collection_id, 0) = coalesce($5::bigint, 0)`,
    [accountId, fromAccountId, type, statusId, collectionId],
  );
}

export interface NotificationFilters {
  types?: string[] | undefined;
  excludeTypes?: string[] | undefined;
  accountId?: string | undefined;
  /** Also those the notification policy filtered (Mastodon's `include_filtered`). */
  includeFiltered?: boolean | undefined;
  /** Only those the notification policy filtered (what a notification request holds). */
  onlyFiltered?: boolean | undefined;
}

export async function notificationsPage(db: Queryable, accountId: string, f: NotificationFilters, p: PageParams): Promise<NotificationRow[]> {
  const values: unknown[] = [accountId];
  let extra = f.onlyFiltered ? ' AND n.filtered' : f.includeFiltered ? '' : ' AND NOT n.filtered';
  if (f.types && f.types.length > 0) {
    values.push(f.types);
    extra += ` AND n.type = ANY($${values.length}::text[])`;
  }
  if (f.excludeTypes && f.excludeTypes.length > 0) {
    values.push(f.excludeTypes);
    extra += ` AND NOT (n.type = ANY($${values.length}::text[]))`;
  }
  if (f.accountId) {
    values.push(f.accountId);
    extra += ` AND n.from_account_id = $${values.length}`;
  }
  const c = pageClause('n.id', p, values);
  // Notifications about deleted statuses disappear with them.
  const { rows } = await db.query<NotificationRow>(
    `SELECT n.id, n.account_id, n.from_account_id, n.type, n.status_id, n.report_id, n.collection_id, n.created_at, n.group_key, n.filtered FROM notifications n
       LEFT JOIN statuses s ON s.id = n.status_id
      WHERE n.account_id = $1 AND (n.status_id IS NULL OR s.deleted_at IS NULL)${extra} AND ${c.where}
      ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p);
}

export async function findNotification(db: Queryable, accountId: string, id: string): Promise<NotificationRow | null> {
  const { rows } = await db.query<NotificationRow>(
    `SELECT n.id, n.account_id, n.from_account_id, n.type, n.status_id, n.report_id, n.collection_id, n.created_at, n.group_key, n.filtered FROM notifications n
       LEFT JOIN statuses s ON s.id = n.status_id
      WHERE n.id = $1 AND n.account_id = $2 AND (n.status_id IS NULL OR s.deleted_at IS NULL)`,
    [id, accountId],
  );
  return rows[0] ?? null;
}

export async function dismissNotification(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM notifications WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rowCount === 1;
}

export async function clearNotifications(db: Queryable, accountId: string): Promise<void> {
  await db.query(`DELETE FROM notifications WHERE account_id = $1`, [accountId]);
}

/** Unread notifications after the marker, counted up to a cap (Mastodon caps the badge too). */
export async function unreadCount(db: Queryable, accountId: string, afterId: string | null, cap: number): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM notifications n LEFT JOIN statuses s ON s.id = n.status_id
      WHERE n.account_id = $1 AND NOT n.filtered AND n.id > coalesce($2::bigint, 0) AND (n.status_id IS NULL OR s.deleted_at IS NULL) LIMIT $3) x`,
    [accountId, afterId, cap],
  );
  return Number(rows[0]!.n);
}
