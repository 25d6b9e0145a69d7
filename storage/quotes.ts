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
  /** Federation (FEP-044f): the QuoteRequest that asked for it, and the stamp (QuoteAuthorization) of a remote quoted author. */
  activity_uri: string | null;
  approval_uri: string | null;
}

const COLUMNS = `id, status_id, quoted_status_id, account_id, quoted_account_id, state, activity_uri, approval_uri`;

/**
 * Records that `statusId` quotes `quotedStatusId`, in the post's transaction; an accepted quote counts on the quoted
 * status in the same statement.
 */
export async function insertQuote(db: Queryable, q: { statusId: string; accountId: string; quotedStatusId: string; quotedAccountId: string; state: QuoteState; approvalUri?: string | null; activityUri?: string | null }): Promise<QuoteRow> {
  const { rows } = await db.query<QuoteRow>(
    `WITH q AS (
       INSERT INTO quotes (status_id, account_id, quoted_status_id, quoted_account_id, state, approval_uri, activity_uri) VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${COLUMNS}),
     counted AS (UPDATE statuses SET quotes_count = quotes_count + 1 WHERE id = $3 AND EXISTS (SELECT 1 FROM q WHERE state = 'accepted'))
     SELECT * FROM q`,
    [q.statusId, q.accountId, q.quotedStatusId, q.quotedAccountId, q.state, q.approvalUri ?? null, q.activityUri ?? null],
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
      RETURNING q.id, q.status_id, q.quoted_status_id, q.account_id, q.quoted_account_id, q.state, q.activity_uri, q.approval_uri, old.was`,
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

/** A quote by its id. */
export async function findQuote(db: Queryable, id: string): Promise<QuoteRow | null> {
  const { rows } = await db.query<QuoteRow>(`SELECT ${COLUMNS} FROM quotes WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/**
 * A pending (or rejected) quote becomes accepted, counted on the quoted status, with the QuoteRequest that asked for
 * it and the stamp of a remote quoted author (either kept when not given). Null when it was accepted already or is
 * revoked (a revoked quote is not brought back by a late request).
 */
export async function acceptQuote(db: Queryable, statusId: string, p: { activityUri?: string | null; approvalUri?: string | null } = {}): Promise<QuoteRow | null> {
  const { rows } = await db.query<QuoteRow>(
    `WITH q AS (
       UPDATE quotes SET state = 'accepted', updated_at = now(),
              activity_uri = coalesce($2, activity_uri), approval_uri = coalesce($3, approval_uri)
        WHERE status_id = $1 AND state IN ('pending', 'rejected') RETURNING ${COLUMNS}),
     counted AS (UPDATE statuses SET quotes_count = quotes_count + 1 WHERE id = (SELECT quoted_status_id FROM q))
     SELECT * FROM q`,
    [statusId, p.activityUri ?? null, p.approvalUri ?? null],
  );
  return rows[0] ?? null;
}

/** A pending quote is refused by the quoted author (a QuoteRequest we answer with Reject). Null when none was pending. */
export async function rejectQuote(db: Queryable, statusId: string, activityUri: string | null): Promise<QuoteRow | null> {
  const { rows } = await db.query<QuoteRow>(
    `UPDATE quotes SET state = 'rejected', updated_at = now(), activity_uri = coalesce($2, activity_uri)
      WHERE status_id = $1 AND state = 'pending' RETURNING ${COLUMNS}`,
    [statusId, activityUri],
  );
  return rows[0] ?? null;
}

/** The quote a remote quoted author's stamp approved, by the stamp's id. */
export async function quoteByApprovalUri(db: Queryable, approvalUri: string): Promise<QuoteRow | null> {
  const { rows } = await db.query<QuoteRow>(`SELECT ${COLUMNS} FROM quotes WHERE approval_uri = $1 LIMIT 1`, [approvalUri]);
  return rows[0] ?? null;
}

/** Our quote whose QuoteRequest has this id (the quote's activity_uri). */
export async function quoteByActivityUri(db: Queryable, activityUri: string): Promise<QuoteRow | null> {
  const { rows } = await db.query<QuoteRow>(`SELECT ${COLUMNS} FROM quotes WHERE activity_uri = $1`, [activityUri]);
  return rows[0] ?? null;
}

/**
 * A remote status's quote rules as its Note now says (encoded by services/quotes.ts). Local statuses are left alone
 * (theirs change through setQuotePolicy). True when they changed.
 */
export async function setRemoteQuotePolicy(db: Queryable, statusId: string, policy: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE statuses SET quote_approval_policy = $2 WHERE id = $1 AND uri IS NOT NULL AND quote_approval_policy IS DISTINCT FROM $2`,
    [statusId, policy],
  );
  return (rowCount ?? 0) > 0;
}
