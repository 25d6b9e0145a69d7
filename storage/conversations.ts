import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** One local account's view of a direct conversation (Mastodon's AccountConversation). */
export interface ConversationRow {
  id: string;
  account_id: string;
  /** The other participants (empty for notes to oneself). */
  participant_account_ids: string[];
  last_status_id: string;
  unread: boolean;
}

const COLUMNS = `id::text, account_id::text, participant_account_ids::text[], last_status_id::text, unread`;
/** How many status ids a conversation keeps (to find the one before when the last is deleted). */
const KEPT_STATUS_IDS = 200;

/**
 * Adds a direct status to the account's conversation with these participants (made if new): it becomes the last
 * status, unread unless the account wrote it. A status already in the conversation changes nothing (a retried
 * fan-out), and then null is returned.
 */
export async function addStatusToConversation(db: Queryable, accountId: string, participantIds: string[], statusId: string, unread: boolean): Promise<ConversationRow | null> {
  const { rows } = await db.query<ConversationRow>(
    `INSERT INTO account_conversations AS c (account_id, participant_account_ids, status_ids, last_status_id, unread)
     VALUES ($1, ARRAY(SELECT DISTINCT unnest($2::bigint[]) ORDER BY 1), ARRAY[$3::bigint], $3, $4)
     ON CONFLICT (account_id, participant_account_ids) DO UPDATE
        SET status_ids = (c.status_ids || $3::bigint)[greatest(1, cardinality(c.status_ids) + 2 - ${KEPT_STATUS_IDS}):],
            last_status_id = greatest(c.last_status_id, $3::bigint),
            unread = $4,
            updated_at = now()
      WHERE NOT ($3::bigint = ANY (c.status_ids))
     RETURNING ${COLUMNS}`,
    [accountId, participantIds, statusId, unread],
  );
  return rows[0] ?? null;
}

/** Takes a deleted status out of these accounts' conversations; one left with no status goes. Returns the rows changed. */
export async function removeStatusFromConversations(db: Queryable, accountIds: string[], statusId: string): Promise<void> {
  if (accountIds.length === 0) return;
  const { rows } = await db.query<{ id: string }>(
    `UPDATE account_conversations SET status_ids = array_remove(status_ids, $2::bigint)
      WHERE account_id = ANY($1::bigint[]) AND $2::bigint = ANY (status_ids) RETURNING id::text`,
    [accountIds, statusId],
  );
  if (rows.length === 0) return;
  const ids = rows.map((r) => r.id);
  await db.query(`DELETE FROM account_conversations WHERE id = ANY($1::bigint[]) AND cardinality(status_ids) = 0`, [ids]);
  await db.query(
    `UPDATE account_conversations SET last_status_id = (SELECT max(x) FROM unnest(status_ids) AS x) WHERE id = ANY($1::bigint[])`, [ids],
  );
}

/** An account's conversations, latest activity first, paged by their last status's id (as Mastodon pages them). */
export async function conversationsOf(db: Queryable, accountId: string, p: PageParams): Promise<ConversationRow[]> {
  const values: unknown[] = [accountId];
  const c = pageClause('last_status_id', p, values);
  const { rows } = await db.query<ConversationRow>(
    `SELECT ${COLUMNS} FROM account_conversations WHERE account_id = $1 AND ${c.where} ORDER BY ${c.order} ${c.limit}`, values,
  );
  return pageRows(rows, p);
}

export async function findConversation(db: Queryable, accountId: string, id: string): Promise<ConversationRow | null> {
  const { rows } = await db.query<ConversationRow>(`SELECT ${COLUMNS} FROM account_conversations WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rows[0] ?? null;
}

export async function markConversationRead(db: Queryable, accountId: string, id: string, unread = false): Promise<ConversationRow | null> {
  const { rows } = await db.query<ConversationRow>(
    `UPDATE account_conversations SET unread = $3 WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`, [id, accountId, unread],
  );
  return rows[0] ?? null;
}

export async function deleteConversation(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM account_conversations WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rowCount === 1;
}
