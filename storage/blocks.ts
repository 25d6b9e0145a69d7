import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';
import { notSilencedSql } from './instance-domain-blocks.ts';

// Blocks, mutes and a person's domain blocks (Mastodon's Block, Mute and AccountDomainBlock).

/** A mute still in force: timed ones past their end count as absent everywhere. */
const MUTE_ACTIVE = `(m.expires_at IS NULL OR m.expires_at > now())`;

/** Blocks target; false when it was blocked already (the first block's id and uri stand). */
export async function insertBlock(db: Queryable, accountId: string, targetId: string, uri: string | null): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO blocks (account_id, target_account_id, uri) VALUES ($1, $2, $3) ON CONFLICT (account_id, target_account_id) DO NOTHING`,
    [accountId, targetId, uri],
  );
  return rowCount === 1;
}

/** Removes a block, returning its ActivityPub id (for the Undo), or undefined when there was none. */
export async function deleteBlock(db: Queryable, accountId: string, targetId: string): Promise<{ uri: string | null } | undefined> {
  const { rows } = await db.query<{ uri: string | null }>(
    `DELETE FROM blocks WHERE account_id = $1 AND target_account_id = $2 RETURNING uri`,
    [accountId, targetId],
  );
  return rows[0];
}

/** The block stored under an ActivityPub id by its blocker, for an Undo that names it alone. */
export async function blockByUri(db: Queryable, uri: string, accountId: string): Promise<{ targetId: string } | null> {
  const { rows } = await db.query<{ target_account_id: string }>(
    `SELECT target_account_id FROM blocks WHERE uri = $1 AND account_id = $2`,
    [uri, accountId],
  );
  return rows[0] ? { targetId: rows[0].target_account_id } : null;
}

export async function blockUri(db: Queryable, accountId: string, targetId: string): Promise<string | null> {
  const { rows } = await db.query<{ uri: string | null }>(
    `SELECT uri FROM blocks WHERE account_id = $1 AND target_account_id = $2`,
    [accountId, targetId],
  );
  return rows[0]?.uri ?? null;
}

export interface MuteOptions {
  notifications: boolean;
  expiresAt: Date | null;
}

/** Mutes target, or changes the options of a mute (Mastodon's MuteService updates them in place). */
export async function upsertMute(db: Queryable, accountId: string, targetId: string, o: MuteOptions): Promise<void> {
  await db.query(
    `INSERT INTO mutes (account_id, target_account_id, hide_notifications, expires_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (account_id, target_account_id) DO UPDATE SET hide_notifications = $3, expires_at = $4`,
    [accountId, targetId, o.notifications, o.expiresAt],
  );
}

export async function deleteMute(db: Queryable, accountId: string, targetId: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM mutes WHERE account_id = $1 AND target_account_id = $2`, [accountId, targetId]);
  return rowCount === 1;
}

export async function insertDomainBlock(db: Queryable, accountId: string, domain: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO account_domain_blocks (account_id, domain) VALUES ($1, $2) ON CONFLICT (account_id, domain) DO NOTHING`,
    [accountId, domain],
  );
  return rowCount === 1;
}

export async function deleteDomainBlock(db: Queryable, accountId: string, domain: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM account_domain_blocks WHERE account_id = $1 AND domain = $2`, [accountId, domain]);
  return rowCount === 1;
}

/** The accounts of this viewer's relation pages, with the row ids Mastodon pages by. */
export interface RelationPage<T> {
  entries: T[];
  firstId: string | null;
  lastId: string | null;
}

async function accountsPage(db: Queryable, sql: (where: string, order: string, limit: string) => string, accountId: string, p: PageParams) {
  const values: unknown[] = [accountId];
  const clause = pageClause('r.id', p, values);
  const { rows } = await db.query<{ page_id: string; account_id: string; expires_at: Date | null; hide_notifications: boolean }>(sql(clause.where, clause.order, clause.limit), values);
  const ordered = pageRows(rows, p);
  const byId = new Map((await findAccountsByIds(db, ordered.map((r) => r.account_id))).map((a) => [a.id, a]));
  return {
    entries: ordered.flatMap((r) => {
      const account = byId.get(r.account_id);
      return account ? [{ account, expiresAt: r.expires_at, hidesNotifications: r.hide_notifications }] : [];
    }),
    firstId: ordered[0]?.page_id ?? null,
    lastId: ordered.at(-1)?.page_id ?? null,
  };
}

export function blocksPage(db: Queryable, accountId: string, p: PageParams): Promise<RelationPage<{ account: AccountRow }>> {
  return accountsPage(db, (where, order, limit) =>
    `SELECT r.id AS page_id, r.target_account_id AS account_id, NULL::timestamptz AS expires_at, false AS hide_notifications FROM blocks r
      WHERE r.account_id = $1 AND ${where} ORDER BY ${order} ${limit}`, accountId, p);
}

export function mutesPage(db: Queryable, accountId: string, p: PageParams): Promise<RelationPage<{ account: AccountRow; expiresAt: Date | null; hidesNotifications: boolean }>> {
  return accountsPage(db, (where, order, limit) =>
    `SELECT r.id AS page_id, r.target_account_id AS account_id, r.expires_at, r.hide_notifications FROM mutes r
      WHERE r.account_id = $1 AND (r.expires_at IS NULL OR r.expires_at > now()) AND ${where} ORDER BY ${order} ${limit}`, accountId, p);
}

export async function domainBlocksPage(db: Queryable, accountId: string, p: PageParams): Promise<RelationPage<string>> {
  const values: unknown[] = [accountId];
  const clause = pageClause('r.id', p, values);
  const { rows } = await db.query<{ id: string; domain: string }>(
    `SELECT r.id, r.domain FROM account_domain_blocks r WHERE r.account_id = $1 AND ${clause.where} ORDER BY ${clause.order} ${clause.limit}`,
    values,
  );
  const ordered = pageRows(rows, p);
  return { entries: ordered.map((r) => r.domain), firstId: ordered[0]?.id ?? null, lastId: ordered.at(-1)?.id ?? null };
}

/** How many relations a viewer may hold before their read paths stop taking them all into account at once. */
export const RELATIONS_LIMIT = 10_000;

/** Everything that shapes what one viewer sees: whom they block, who blocks them, whom they mute, which domains. */
export interface ViewerRelationRows {
  blocking: string[];
  blockedBy: string[];
  muting: { id: string; notifications: boolean; expiresAt: Date | null }[];
  domains: string[];
  /** Members of the viewer's exclusive lists (kept out of their home timeline). */
  exclusive: string[];
}

/** A viewer's relations, each kind bounded (the newest first, should someone exceed the bound). */
export async function viewerRelations(db: Queryable, viewerId: string): Promise<ViewerRelationRows> {
  const { rows } = await db.query<{ kind: string; id: string; notifications: boolean | null; expires_at: Date | null }>(
    `(SELECT 'b' AS kind, target_account_id::text AS id, NULL::boolean AS notifications, NULL::timestamptz AS expires_at
        FROM blocks WHERE account_id = $1 ORDER BY id DESC LIMIT $2)
     UNION ALL
     (SELECT 'B', account_id::text, NULL, NULL FROM blocks WHERE target_account_id = $1 ORDER BY id DESC LIMIT $2)
     UNION ALL
     (SELECT 'm', m.target_account_id::text, m.hide_notifications, m.expires_at FROM mutes m
       WHERE m.account_id = $1 AND ${MUTE_ACTIVE} ORDER BY m.id DESC LIMIT $2)
     UNION ALL
     (SELECT 'd', domain, NULL, NULL FROM account_domain_blocks WHERE account_id = $1 ORDER BY id DESC LIMIT $2)
     UNION ALL
     (SELECT DISTINCT 'x', m.account_id::text, NULL::boolean, NULL::timestamptz FROM lists l JOIN list_accounts m ON m.list_id = l.id
       WHERE l.account_id = $1 AND l.exclusive LIMIT $2)`,
    [viewerId, RELATIONS_LIMIT],
  );
  const out: ViewerRelationRows = { blocking: [], blockedBy: [], muting: [], domains: [], exclusive: [] };
  for (const r of rows) {
    if (r.kind === 'b') out.blocking.push(r.id);
    else if (r.kind === 'B') out.blockedBy.push(r.id);
    else if (r.kind === 'm') out.muting.push({ id: r.id, notifications: r.notifications ?? true, expiresAt: r.expires_at });
    else if (r.kind === 'x') out.exclusive.push(r.id);
    else out.domains.push(r.id);
  }
  return out;
}

/**
 * Whether `recipient` takes notifications from `sender`: not when either blocks the other, when the recipient mutes
 * the sender's notifications, or blocks the sender's domain (Mastodon's NotifyService blocked? checks); nor from a
 * limited (silenced) account, or one of a silenced server, that the recipient does not follow, unless
 * `limitedAccounts` is false: for the types a notification policy decides on, its `for_limited_accounts` does
 * (services/notification-policy.ts).
 */
export async function notificationsBlocked(db: Queryable, recipientId: string, senderId: string, opts: { limitedAccounts?: boolean } = {}): Promise<boolean> {
  const limited = opts.limitedAccounts === false ? '' : `
         OR EXISTS (SELECT 1 FROM accounts a WHERE a.id = $2 AND (a.silenced_at IS NOT NULL OR NOT ${notSilencedSql('a', '$1')})
                     AND NOT EXISTS (SELECT 1 FROM follows f WHERE f.account_id = $1 AND f.target_account_id = $2))`;
  const { rows } = await db.query<{ blocked: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM blocks WHERE (account_id = $1 AND target_account_id = $2) OR (account_id = $2 AND target_account_id = $1))
         OR EXISTS (SELECT 1 FROM mutes m WHERE m.account_id = $1 AND m.target_account_id = $2 AND m.hide_notifications AND ${MUTE_ACTIVE})
         OR EXISTS (SELECT 1 FROM account_domain_blocks d JOIN accounts a ON a.id = $2 WHERE d.account_id = $1 AND d.domain = lower(a.domain))${limited}
         AS blocked`,
    [recipientId, senderId],
  );
  return rows[0]!.blocked;
}

/** Whether either account blocks the other. */
export async function blockedEitherWay(db: Queryable, a: string, b: string): Promise<boolean> {
  const { rows } = await db.query<{ blocked: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM blocks WHERE (account_id = $1 AND target_account_id = $2) OR (account_id = $2 AND target_account_id = $1)) AS blocked`,
    [a, b],
  );
  return rows[0]!.blocked;
}

/**
 * Whether `accountId` may not follow `targetId` (Mastodon's following_not_allowed?): either blocks the other, or the
 * follower blocks the target's server. One query.
 */
export async function followForbidden(db: Queryable, accountId: string, targetId: string): Promise<boolean> {
  const { rows } = await db.query<{ forbidden: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM blocks WHERE (account_id = $1 AND target_account_id = $2) OR (account_id = $2 AND target_account_id = $1))
         OR EXISTS (SELECT 1 FROM account_domain_blocks d JOIN accounts a ON a.id = $2 WHERE d.account_id = $1 AND d.domain = lower(a.domain))
         AS forbidden`,
    [accountId, targetId],
  );
  return rows[0]!.forbidden;
}

/** Whether `accountId` blocks `targetId`, or blocks its domain. */
export async function blocksAccountOrDomain(db: Queryable, accountId: string, targetId: string): Promise<boolean> {
  const { rows } = await db.query<{ blocked: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM blocks WHERE account_id = $1 AND target_account_id = $2)
         OR EXISTS (SELECT 1 FROM account_domain_blocks d JOIN accounts a ON a.id = $2 WHERE d.account_id = $1 AND d.domain = lower(a.domain))
         AS blocked`,
    [accountId, targetId],
  );
  return rows[0]!.blocked;
}

/** Accounts of a domain that follow `accountId` (or that it follows, or have asked to), a batch at a time. */
export async function domainRelationsBatch(db: Queryable, accountId: string, domain: string, limit: number): Promise<{ followers: string[]; following: string[]; requesters: string[]; requested: string[] }> {
  const { rows } = await db.query<{ kind: string; id: string }>(
    `(SELECT 'followers' AS kind, f.account_id::text AS id FROM follows f JOIN accounts a ON a.id = f.account_id
       WHERE f.target_account_id = $1 AND lower(a.domain) = $2 LIMIT $3)
     UNION ALL
     (SELECT 'following', f.target_account_id::text FROM follows f JOIN accounts a ON a.id = f.target_account_id
       WHERE f.account_id = $1 AND lower(a.domain) = $2 LIMIT $3)
     UNION ALL
     (SELECT 'requesters', f.account_id::text FROM follow_requests f JOIN accounts a ON a.id = f.account_id
       WHERE f.target_account_id = $1 AND lower(a.domain) = $2 LIMIT $3)
     UNION ALL
     (SELECT 'requested', f.target_account_id::text FROM follow_requests f JOIN accounts a ON a.id = f.target_account_id
       WHERE f.account_id = $1 AND lower(a.domain) = $2 LIMIT $3)`,
    [accountId, domain, limit],
  );
  const out = { followers: [] as string[], following: [] as string[], requesters: [] as string[], requested: [] as string[] };
  for (const r of rows) out[r.kind as keyof typeof out].push(r.id);
  return out;
}

/** Of these accounts, the ones that block `viewerId`. */
export async function blockersAmong(db: Queryable, viewerId: string, accountIds: string[]): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set();
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT account_id::text FROM blocks WHERE target_account_id = $1 AND account_id = ANY($2::bigint[])`,
    [viewerId, accountIds],
  );
  return new Set(rows.map((r) => r.account_id));
}

/** Whether an account is limited: silenced itself, or of a silenced server (it stays off public timelines and streams). */
export async function accountLimited(db: Queryable, accountId: string): Promise<boolean> {
  const { rows } = await db.query<{ limited: boolean }>(
    `SELECT (a.silenced_at IS NOT NULL OR NOT ${notSilencedSql('a', 'NULL::bigint')}) AS limited FROM accounts a WHERE a.id = $1`,
    [accountId],
  );
  return rows[0]?.limited ?? false;
}
