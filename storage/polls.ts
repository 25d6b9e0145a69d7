import type { Queryable } from './db.ts';

export interface PollRow {
  id: string;
  status_id: string;
  account_id: string;
  options: string[];
  cached_tallies: number[];
  multiple: boolean;
  hide_totals: boolean;
  votes_count: number;
  voters_count: number | null;
  expires_at: Date | null;
  ended_at: Date | null;
  created_at: Date;
}

const COLUMNS = `id, status_id, account_id, options, cached_tallies, multiple, hide_totals, votes_count, voters_count, expires_at, ended_at, created_at`;

export interface NewPoll {
  statusId: string;
  accountId: string;
  options: string[];
  multiple: boolean;
  hideTotals: boolean;
  expiresAt: Date | null;
  /** Remote polls: the counts their server gave. */
  tallies?: number[];
  votersCount?: number | null;
}

export async function insertPoll(db: Queryable, p: NewPoll): Promise<PollRow> {
  const tallies = p.tallies ?? p.options.map(() => 0);
  const { rows } = await db.query<PollRow>(
    `INSERT INTO polls (status_id, account_id, options, cached_tallies, multiple, hide_totals, votes_count, voters_count, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    // A remote poll's voters are unknown (null) unless its server says.
    [p.statusId, p.accountId, p.options, tallies, p.multiple, p.hideTotals, tallies.reduce((a, b) => a + b, 0), p.tallies ? (p.votersCount ?? null) : 0, p.expiresAt],
  );
  return rows[0]!;
}

export async function findPoll(db: Queryable, id: string): Promise<PollRow | null> {
  const { rows } = await db.query<PollRow>(`SELECT ${COLUMNS} FROM polls WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function pollOfStatus(db: Queryable, statusId: string): Promise<PollRow | null> {
  const { rows } = await db.query<PollRow>(`SELECT ${COLUMNS} FROM polls WHERE status_id = $1`, [statusId]);
  return rows[0] ?? null;
}

export async function pollsOfStatuses(db: Queryable, statusIds: string[]): Promise<Map<string, PollRow>> {
  if (statusIds.length === 0) return new Map();
  const { rows } = await db.query<PollRow>(`SELECT ${COLUMNS} FROM polls WHERE status_id = ANY($1::bigint[])`, [statusIds]);
  return new Map(rows.map((r) => [r.status_id, r]));
}

export async function deletePollOfStatus(db: Queryable, statusId: string): Promise<void> {
  await db.query(`DELETE FROM polls WHERE status_id = $1`, [statusId]);
}

/** The choices each of these polls' voters made, for one account: poll id to option indexes. */
export async function ownVotes(db: Queryable, accountId: string, pollIds: string[]): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  if (pollIds.length === 0) return out;
  const { rows } = await db.query<{ poll_id: string; choice: number }>(
    `SELECT poll_id, choice FROM poll_votes WHERE account_id = $1 AND poll_id = ANY($2::bigint[]) ORDER BY poll_id, choice`, [accountId, pollIds],
  );
  for (const r of rows) out.set(r.poll_id, [...(out.get(r.poll_id) ?? []), r.choice]);
  return out;
}

/** Locks the poll for the rest of the transaction (votes on one poll take turns, so "already voted" holds). */
export async function lockPoll(db: Queryable, id: string): Promise<PollRow | null> {
  const { rows } = await db.query<PollRow>(`SELECT ${COLUMNS} FROM polls WHERE id = $1 FOR UPDATE`, [id]);
  return rows[0] ?? null;
}

/**
 * Records an account's choices and moves the counts (votes per option, votes, voters). `uris`: per choice, the id
 * of the Note that carried the vote (remote votes) or that we send (our votes on remote polls).
 */
export async function insertVotes(db: Queryable, poll: PollRow, accountId: string, choices: number[], uris: (string | null)[] = []): Promise<void> {
  await db.query(
    `INSERT INTO poll_votes (poll_id, account_id, choice, uri) SELECT $1, $2, c, u FROM unnest($3::int[], $4::text[]) AS v(c, u)`,
    [poll.id, accountId, choices, choices.map((_, i) => uris[i] ?? null)],
  );
  await db.query(
    `UPDATE polls SET cached_tallies = (SELECT array_agg(t + CASE WHEN (i - 1) = ANY($2::int[]) THEN 1 ELSE 0 END ORDER BY i)
                                          FROM unnest(cached_tallies) WITH ORDINALITY AS x(t, i)),
            votes_count = votes_count + $3, voters_count = coalesce(voters_count, 0) + 1, updated_at = now()
      WHERE id = $1`,
    [poll.id, choices, choices.length],
  );
}

/** Whether an account has voted on a poll. */
export async function hasVoted(db: Queryable, pollId: string, accountId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM poll_votes WHERE poll_id = $1 AND account_id = $2 LIMIT 1`, [pollId, accountId]);
  return rows.length > 0;
}

/** A remote poll's counts as its server last told them. */
export async function updateRemoteTallies(db: Queryable, pollId: string, tallies: number[], votersCount: number | null, expiresAt: Date | null): Promise<void> {
  await db.query(
    `UPDATE polls SET cached_tallies = $2, votes_count = $3, voters_count = $4, expires_at = coalesce($5, expires_at), updated_at = now()
      WHERE id = $1 AND cardinality(cached_tallies) = cardinality($2::int[])`,
    [pollId, tallies, tallies.reduce((a, b) => a + b, 0), votersCount, expiresAt],
  );
}

/** Marks a local poll's end handled, once; false when it was already (or the poll is gone, or not due yet). */
export async function markPollEnded(db: Queryable, pollId: string): Promise<PollRow | null> {
  const { rows } = await db.query<PollRow>(
    `UPDATE polls SET ended_at = now() WHERE id = $1 AND ended_at IS NULL AND expires_at <= now() + interval '5 seconds' RETURNING ${COLUMNS}`,
    [pollId],
  );
  return rows[0] ?? null;
}

/** Local accounts that voted on a poll. */
export async function localVoters(db: Queryable, pollId: string): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT DISTINCT v.account_id FROM poll_votes v JOIN accounts a ON a.id = v.account_id WHERE v.poll_id = $1 AND a.domain IS NULL`, [pollId],
  );
  return rows.map((r) => r.account_id);
}

export function pollExpired(p: PollRow, now = Date.now()): boolean {
  return p.expires_at !== null && p.expires_at.getTime() <= now;
}
