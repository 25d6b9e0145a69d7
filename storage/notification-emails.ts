import type { Queryable } from './db.ts';

/** A person's mail choices: the kinds they set (the rest take the defaults) and whether they take the daily digest. */
export interface NotificationEmailChoices {
  choices: Record<string, boolean>;
  digest: boolean;
}

export async function notificationEmailChoices(db: Queryable, userId: string): Promise<NotificationEmailChoices | null> {
  const { rows } = await db.query<{ notification_emails: Record<string, boolean>; notification_digest: boolean }>(
    `SELECT notification_emails, notification_digest FROM users WHERE id = $1`, [userId],
  );
  return rows[0] ? { choices: rows[0].notification_emails, digest: rows[0].notification_digest } : null;
}

/** Sets some kinds (others keep what they were) and, when given, the digest. */
export async function setNotificationEmailChoices(db: Queryable, userId: string, choices: Record<string, boolean>, digest?: boolean): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE users SET notification_emails = notification_emails || $2::jsonb, notification_digest = coalesce($3, notification_digest),
        updated_at = now() WHERE id = $1`,
    [userId, JSON.stringify(choices), digest ?? null],
  );
  return rowCount === 1;
}

/**
 * The user of a local account who may be mailed now: confirmed, approved, not disabled, the account not suspended.
 * Null otherwise (a remote account, or nobody to mail).
 */
export async function mailableUser(db: Queryable, accountId: string): Promise<{ id: string; choices: Record<string, boolean> } | null> {
  const { rows } = await db.query<{ id: string; notification_emails: Record<string, boolean> }>(
    `SELECT u.id, u.notification_emails FROM users u JOIN accounts a ON a.id = u.account_id
      WHERE u.account_id = $1 AND u.confirmed_at IS NOT NULL AND u.approved AND NOT u.disabled
        AND a.suspended_at IS NULL AND a.deleted_at IS NULL`,
    [accountId],
  );
  return rows[0] ? { id: rows[0].id, choices: rows[0].notification_emails } : null;
}

/**
 * Takes the person's turn for a mail of this kind: true (and no other before `quietSeconds` from now) when none was
 * taken in the last `quietSeconds`, false when one was. In the caller's transaction: a rollback gives the turn back.
 */
export async function takeMailTurn(db: Queryable, userId: string, kind: string, quietSeconds: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO notification_mail_throttle (user_id, kind, quiet_until) VALUES ($1, $2, now() + make_interval(secs => $3))
     ON CONFLICT (user_id, kind) DO UPDATE SET quiet_until = excluded.quiet_until
       WHERE notification_mail_throttle.quiet_until <= now()`,
    [userId, kind, quietSeconds],
  );
  return rowCount === 1;
}

/** The visibility of a status (null when it is gone). */
export async function statusVisibility(db: Queryable, statusId: string): Promise<string | null> {
  const { rows } = await db.query<{ visibility: string }>(`SELECT visibility FROM statuses WHERE id = $1`, [statusId]);
  return rows[0]?.visibility ?? null;
}

export interface DigestCandidate {
  userId: string;
  accountId: string;
  /** The digest counts the notifications after `afterId` up to `upToId` (the newest). */
  afterId: string;
  upToId: string;
}

/**
 * People due a digest: those who take it, may be mailed, had none in the last `everyHours`, were not active in the last
 * `activeHours` (no web page opened in a session, no notifications marker moved), and have unread notifications
 * (not filtered, newer than their notifications marker and than their last digest). Oldest-served first, at most `limit`.
 */
export async function digestCandidates(db: Queryable, everyHours: number, activeHours: number, limit: number): Promise<DigestCandidate[]> {
  const { rows } = await db.query<{ user_id: string; account_id: string; after_id: string; up_to_id: string }>(
    `SELECT u.id AS user_id, u.account_id, newest.id AS up_to_id,
            greatest(coalesce(m.last_read_id, 0), coalesce(u.last_digest_notification_id, 0)) AS after_id
       FROM users u
       JOIN accounts a ON a.id = u.account_id
       LEFT JOIN markers m ON m.account_id = u.account_id AND m.timeline = 'notifications'
       CROSS JOIN LATERAL (
         SELECT n.id FROM notifications n WHERE n.account_id = u.account_id AND NOT n.filtered
            AND n.id > greatest(coalesce(m.last_read_id, 0), coalesce(u.last_digest_notification_id, 0))
          ORDER BY n.id DESC LIMIT 1) newest
      WHERE u.notification_digest AND u.confirmed_at IS NOT NULL AND u.approved AND NOT u.disabled
        AND a.suspended_at IS NULL AND a.deleted_at IS NULL
        AND (u.last_digest_at IS NULL OR u.last_digest_at < now() - make_interval(hours => $1))
        AND (m.updated_at IS NULL OR m.updated_at < now() - make_interval(hours => $2))
        AND NOT EXISTS (SELECT 1 FROM web_sessions w WHERE w.user_id = u.id AND w.last_active_at > now() - make_interval(hours => $2))
      ORDER BY u.last_digest_at NULLS FIRST, u.id
      LIMIT $3`,
    [everyHours, activeHours, limit],
  );
  return rows.map((r) => ({ userId: r.user_id, accountId: r.account_id, afterId: r.after_id, upToId: r.up_to_id }));
}

/** Records a digest as queued: the next counts only notifications newer than `upToId`. */
export async function markDigestQueued(db: Queryable, userId: string, upToId: string): Promise<void> {
  await db.query(`UPDATE users SET last_digest_at = now(), last_digest_notification_id = $2 WHERE id = $1`, [userId, upToId]);
}

export interface DigestSummary {
  /** Notifications by type, of the newest `cap` (a bound on the count, not on what the mail says there was). */
  counts: Record<string, number>;
  latest: { id: string; type: string; from_account_id: string; status_id: string | null }[];
}

/** What a digest tells: unfiltered notifications after `afterId` up to `upToId`, counted by type, and the latest few. */
export async function digestSummary(db: Queryable, accountId: string, afterId: string, upToId: string, latest: number, cap: number): Promise<DigestSummary> {
  const [counted, newest] = await Promise.all([
    db.query<{ type: string; count: string }>(
      `SELECT type, count(*) AS count FROM (
         SELECT type FROM notifications WHERE account_id = $1 AND NOT filtered AND id > $2 AND id <= $3 ORDER BY id DESC LIMIT $4) n
        GROUP BY type`,
      [accountId, afterId, upToId, cap],
    ),
    db.query<{ id: string; type: string; from_account_id: string; status_id: string | null }>(
      `SELECT id, type, from_account_id, status_id FROM notifications
        WHERE account_id = $1 AND NOT filtered AND id > $2 AND id <= $3 ORDER BY id DESC LIMIT $4`,
      [accountId, afterId, upToId, latest],
    ),
  ]);
  return { counts: Object.fromEntries(counted.rows.map((r) => [r.type, Number(r.count)])), latest: newest.rows };
}
