import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';

// Private notes on accounts, featured accounts (endorsements), and familiar followers.

export const NOTE_LIMIT = 2000;

/** Sets the viewer's note on an account; an empty comment removes it. */
export async function setAccountNote(db: Queryable, accountId: string, targetId: string, comment: string): Promise<void> {
  if (comment === '') {
    await db.query(`DELETE FROM account_notes WHERE account_id = $1 AND target_account_id = $2`, [accountId, targetId]);
    return;
  }
  await db.query(
    `INSERT INTO account_notes (account_id, target_account_id, comment) VALUES ($1, $2, $3)
     ON CONFLICT (account_id, target_account_id) DO UPDATE SET comment = $3, updated_at = now()`,
    [accountId, targetId, comment],
  );
}

/** Notes written about an account, a batch at a time by note id (an account move copies them: jobs/account-move.ts). */
export async function notesAbout(db: Queryable, targetId: string, afterId: string, limit: number): Promise<{ id: string; accountId: string; comment: string }[]> {
  const { rows } = await db.query<{ id: string; account_id: string; comment: string }>(
    `SELECT id::text, account_id::text, comment FROM account_notes WHERE target_account_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
    [targetId, afterId, limit],
  );
  return rows.map((r) => ({ id: r.id, accountId: r.account_id, comment: r.comment }));
}

/**
 * Puts `text` at the head of the owner's note on an account (a new note if there is none), within NOTE_LIMIT; a
 * note already holding it is left alone, so a repeated job copies nothing twice.
 */
export async function prependAccountNote(db: Queryable, accountId: string, targetId: string, text: string): Promise<void> {
  await db.query(
    `INSERT INTO account_notes (account_id, target_account_id, comment) VALUES ($1, $2, left($3, ${NOTE_LIMIT}))
     ON CONFLICT (account_id, target_account_id) DO UPDATE SET comment = left($3 || E'\n\n' || account_notes.comment, ${NOTE_LIMIT}), updated_at = now()
      WHERE strpos(account_notes.comment, $3) = 0`,
    [accountId, targetId, text],
  );
}

/** Features an account the owner follows; false when they do not follow it (nothing is written then). */
export async function endorse(db: Queryable, accountId: string, targetId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO account_endorsements (account_id, target_account_id)
     SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM follows WHERE account_id = $1 AND target_account_id = $2)
     ON CONFLICT (account_id, target_account_id) DO NOTHING`,
    [accountId, targetId],
  );
  if (rowCount === 1) return true;
  const { rows } = await db.query(`SELECT 1 FROM account_endorsements WHERE account_id = $1 AND target_account_id = $2`, [accountId, targetId]);
  return rows.length === 1;
}

export async function unendorse(db: Queryable, accountId: string, targetId: string): Promise<void> {
  await db.query(`DELETE FROM account_endorsements WHERE account_id = $1 AND target_account_id = $2`, [accountId, targetId]);
}

/** An account's featured accounts, newest first, paged by endorsement id; suspended ones left out. */
export async function endorsementsPage(db: Queryable, accountId: string, p: PageParams): Promise<{ accounts: AccountRow[]; firstId: string | null; lastId: string | null }> {
  const values: unknown[] = [accountId];
  const clause = pageClause('r.id', p, values);
  const { rows } = await db.query<{ id: string; target: string }>(
    `SELECT r.id::text, r.target_account_id::text AS target FROM account_endorsements r
      WHERE r.account_id = $1 AND ${clause.where} ORDER BY ${clause.order} ${clause.limit}`,
    values,
  );
  const ordered = pageRows(rows, p);
  const byId = new Map((await findAccountsByIds(db, ordered.map((r) => r.target))).map((a) => [a.id, a]));
  return {
    accounts: ordered.flatMap((r) => { const a = byId.get(r.target); return a && !a.suspended_at ? [a] : []; }),
    firstId: ordered[0]?.id ?? null,
    lastId: ordered.at(-1)?.id ?? null,
  };
}

/**
 * For each target, accounts the viewer follows that follow it too (Mastodon's familiar followers), at most `perTarget`
 * each; those hiding their follows and suspended ones are left out.
 */
export async function familiarFollowers(db: Queryable, viewerId: string, targetIds: string[], perTarget: number): Promise<Map<string, string[]>> {
  if (targetIds.length === 0) return new Map();
  const { rows } = await db.query<{ target: string; ids: string[] }>(
    `SELECT t.id::text AS target,
            ARRAY(SELECT f2.account_id::text FROM follows f1
                    JOIN follows f2 ON f2.account_id = f1.target_account_id AND f2.target_account_id = t.id
                    JOIN accounts a ON a.id = f2.account_id
                   WHERE f1.account_id = $1 AND NOT a.hide_collections AND a.suspended_at IS NULL
                   ORDER BY f2.id DESC LIMIT $3) AS ids
       FROM unnest($2::bigint[]) AS t(id)`,
    [viewerId, targetIds, perTarget],
  );
  return new Map(rows.map((r) => [r.target, r.ids]));
}
