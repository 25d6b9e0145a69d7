import type { Queryable } from './db.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

/** A quote as stored; `deleted`, `unauthorized` and the blocked/muted states are worked out per viewer when rendered. */
export type QuoteState = 'pending' | 'accepted' | 'rejected' | 'revoked';

export interface QuoteRow {
  id: string;
  status_id: string;
  quoted_status_id: string | null;
  account_id: string;
  quoted_account_id: string | null;
  state: QuoteState;
}

const COLUMNS = `id, status_id, quoted_status_id, account_id, quoted_account_id, state`;

/**
 * Records that `statusId` quotes `quotedStatusId`, in the post's transaction; an accepted quote counts on the quoted
 * status in the same statement.
 */
export async function insertQuote(db: Queryable, q: { statusId: string; accountId: string; quotedStatusId: string; quotedAccountId: string; state: QuoteState }): Promise<QuoteRow> {
  const { rows } = await db.query<QuoteRow>(
    `WITH q AS (
       INSERT INTO quotes (status_id, account_id, quoted_status_id, quoted_account_id, state) VALUES ($1, $2, $3, $4, $5)
       RETURNING ${COLUMNS}),
     counted AS (UPDATE statuses SET quotes_count = quotes_count + 1 WHERE id = $3 AND EXISTS (SELECT 1 FROM q WHERE state = 'accepted'))
     SELECT * FROM q`,
    [q.statusId, q.accountId, q.quotedStatusId, q.quotedAccountId, q.state],
  );
  return rows[0]!;
}

/** The quotes these statuses make, by quoting status id. */
export async function quotesOfStatuses(db: Queryable, statusIds: string[]): Promise<Map<string, QuoteRow>> {
  const out = new Map<string, QuoteRow>();
  if (statusIds.length === 0) return out;
  const { rows } = await db.query<QuoteRow>(`SELECT ${COLUMNS} FROM quotes WHERE status_id = ANY($1::bigint[])`, [statusIds]);
  for (const r of rows) out.set(r.status_id, r);
  return out;
}

/** The quote a status makes, if any. */
export async function quoteOfStatus(db: Queryable, statusId: string): Promise<QuoteRow | null> {
  return (await quotesOfStatuses(db, [statusId])).get(statusId) ?? null;
}

/**
 * A quoting status is deleted: its quote stops counting on the quoted status (if it counted). Returns the quote,
 * or null when the status quoted nothing.
 */
export async function forgetQuoteOf(db: Queryable, statusId: string): Promise<QuoteRow | null> {
  const { rows } = await db.query<QuoteRow>(
    `WITH q AS (SELECT ${COLUMNS} FROM quotes WHERE status_id = $1),
     uncounted AS (UPDATE statuses SET quotes_count = greatest(quotes_count - 1, 0)
                    WHERE id = (SELECT quoted_status_id FROM q WHERE state = 'accepted'))
     SELECT * FROM q`,
    [statusId],
  );
  return rows[0] ?? null;
}

/** The quoted author takes their approval back: `revoked`, no longer counted. Null when there was no such live quote. */
export async function revokeQuote(db: Queryable, quotedStatusId: string, quotingStatusId: string): Promise<QuoteRow | null> {
  const { rows } = await db.query<QuoteRow & { was: string }>(
    `UPDATE quotes q SET state = 'revoked', updated_at = now()
       FROM (SELECT id, state AS was FROM quotes WHERE status_id = $2 AND quoted_status_id = $1 FOR UPDATE) old
      WHERE q.id = old.id AND q.state IN ('pending', 'accepted')
      RETURNING q.id, q.status_id, q.quoted_status_id, q.account_id, q.quoted_account_id, q.state, old.was`,
    [quotedStatusId, quotingStatusId],
  );
  const row = rows[0];
  if (!row) return null;
  if (row.was === 'accepted') await db.query(`UPDATE statuses SET quotes_count = greatest(quotes_count - 1, 0) WHERE id = $1`, [quotedStatusId]);
  return row;
}

/** The live statuses quoting this one (any state), ids only: whose renderings change with it. */
export async function quotingStatusIds(db: Queryable, quotedStatusId: string, limit = 10_000): Promise<{ statusId: string; accountId: string; state: QuoteState }[]> {
  const { rows } = await db.query<{ status_id: string; account_id: string; state: QuoteState }>(
    `SELECT q.status_id, q.account_id, q.state FROM quotes q JOIN statuses s ON s.id = q.status_id AND s.deleted_at IS NULL
      WHERE q.quoted_status_id = $1 LIMIT $2`,
    [quotedStatusId, limit],
  );
  return rows.map((r) => ({ statusId: r.status_id, accountId: r.account_id, state: r.state }));
}

/** Accepted quotes of a status by live statuses, newest first, paged by quote id. */
export async function acceptedQuotesPage(db: Queryable, quotedStatusId: string, p: PageParams): Promise<{ statusIds: string[]; firstId: string | undefined; lastId: string | undefined }> {
  const values: unknown[] = [quotedStatusId];
  const c = pageClause('q.id', p, values);
  const { rows } = await db.query<{ id: string; status_id: string }>(
    `SELECT q.id, q.status_id FROM quotes q JOIN statuses s ON s.id = q.status_id AND s.deleted_at IS NULL
      WHERE q.quoted_status_id = $1 AND q.state = 'accepted' AND ${c.where} ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  const page = pageRows(rows, p);
  return { statusIds: page.map((r) => r.status_id), firstId: page[0]?.id, lastId: page[page.length - 1]?.id };
}
