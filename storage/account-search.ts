import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';

const likePrefix = (text: string) => `${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The words of a display-name query, as `to_tsquery('simple', …)` text matching each as a prefix ('ali':* & 'smi':*). */
export function displayNameQuery(words: string[]): string | null {
  const clean = words.flatMap((w) => w.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 8);
  return clean.length > 0 ? clean.map((w) => `'${w}':*`).join(' & ') : null;
}

export interface AccountSearch {
  /** Who is searching: accounts they follow rank first. */
  viewerId: string;
  /** Matched as a prefix of the username (accounts_username_prefix). */
  username?: string | null;
  /** Words matched as prefixes of display-name words (accounts_display_name_words); either match is enough. */
  words?: string[];
  /** Whose accounts: `null` local ones, a string those of domains starting with it, undefined any. */
  domain?: string | null;
  /** Only accounts the viewer follows. */
  following?: boolean;
  /** Accounts already shown (an exact match placed first). */
  excludeIds?: string[];
  limit: number;
  offset: number;
}

// What ranking needs, carried out of each branch so the candidates are never joined back to the whole table.
const COLUMNS = 'a.id, a.username, a.domain, a.suspended_at, a.followers_count';

/** How many accounts each index offers before ranking (plus the offset asked for). */
export const SEARCH_CANDIDATES = 1000;

/**
 * Accounts by username prefix or display-name words (Mastodon's `Account.advanced_search_for` without its full-text
 * ranking): approved and not suspended; exact username first, then accounts the viewer follows, then the most
 * followed. Candidates come from the indexes only, at most SEARCH_CANDIDATES (+ offset) from each: usernames in
 * index order, so the exact and shortest matches are always among them; with `following`, from the viewer's follows.
 */
export async function searchAccountsFor(db: Queryable, s: AccountSearch): Promise<AccountRow[]> {
  const params: unknown[] = [s.viewerId];
  const param = (v: unknown) => `$${params.push(v)}`;
  const tsquery = displayNameQuery(s.words ?? []);
  if ((!s.username && !tsquery) || s.limit < 1) return [];

  const username = s.username ? `lower(a.username) LIKE ${param(likePrefix(s.username))}` : null;
  const displayName = tsquery ? `to_tsvector('simple', a.display_name) @@ to_tsquery('simple', ${param(tsquery)})` : null;
  const domain = s.domain === null ? 'a.domain IS NULL'
    : s.domain !== undefined ? `lower(a.domain) LIKE ${param(likePrefix(s.domain))}` : 'true';
  const cap = param(SEARCH_CANDIDATES + s.offset);
  const branches = s.following
    ? [`SELECT ${COLUMNS} FROM follows f JOIN accounts a ON a.id = f.target_account_id
         WHERE f.account_id = $1 AND (${[username, displayName].filter(Boolean).join(' OR ')}) AND ${domain} LIMIT ${cap}`]
    : [
      ...(username ? [`SELECT ${COLUMNS} FROM accounts a WHERE ${username} AND ${domain} ORDER BY lower(a.username) USING ~<~ LIMIT ${cap}`] : []),
      ...(displayName ? [`SELECT ${COLUMNS} FROM accounts a WHERE ${displayName} AND ${domain} LIMIT ${cap}`] : []),
    ];
  const exclude = s.excludeIds?.length ? `AND c.id <> ALL(${param(s.excludeIds)}::bigint[])` : '';
  const exact = param((s.username ?? '').toLowerCase());

  const { rows } = await db.query<{ id: string }>(
    `SELECT c.id::text AS id
       FROM (${branches.map((b) => `(${b})`).join(' UNION ')}) c
      WHERE c.suspended_at IS NULL ${exclude}
        AND (c.domain IS NOT NULL OR EXISTS (SELECT 1 FROM users u WHERE u.account_id = c.id AND u.approved))
        AND NOT EXISTS (SELECT 1 FROM blocks b WHERE (b.account_id = $1 AND b.target_account_id = c.id) OR (b.account_id = c.id AND b.target_account_id = $1))
      ORDER BY (lower(c.username) = ${exact}) DESC,
               EXISTS (SELECT 1 FROM follows f WHERE f.account_id = $1 AND f.target_account_id = c.id) DESC,
               c.followers_count DESC, c.id
      LIMIT ${param(s.limit)} OFFSET ${param(s.offset)}`,
    params,
  );
  const byId = new Map((await findAccountsByIds(db, rows.map((r) => r.id))).map((a) => [a.id, a]));
  return rows.map((r) => byId.get(r.id)).filter((a): a is AccountRow => a !== undefined);
}
