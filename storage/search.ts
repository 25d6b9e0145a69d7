import type { Queryable } from './db.ts';
import { findAccountsByIds, type AccountRow } from './accounts.ts';
import { pageRows, type PageParams } from './paging.ts';

const likePrefix = (text: string) => `${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Accounts whose username starts with `prefix` (of `domain` when given), approved and not suspended; exact matches first. */
export async function searchAccounts(db: Queryable, prefix: string, domain: string | null, limit: number, offset: number): Promise<AccountRow[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id FROM accounts a LEFT JOIN users u ON u.account_id = a.id
      WHERE lower(a.username) LIKE $1 AND a.suspended_at IS NULL AND (a.domain IS NOT NULL OR u.approved)
        AND ($2::text IS NULL OR lower(a.domain) = lower($2))
      ORDER BY (lower(a.username) = lower($3)) DESC, a.followers_count DESC, a.id
      LIMIT $4 OFFSET $5`,
    [likePrefix(prefix), domain, prefix, limit, offset],
  );
  const byId = new Map((await findAccountsByIds(db, rows.map((r) => r.id))).map((a) => [a.id, a]));
  return rows.map((r) => byId.get(r.id)).filter((a): a is AccountRow => a !== undefined);
}

export async function searchTags(db: Queryable, prefix: string, limit: number, offset: number): Promise<{ id: string; name: string }[]> {
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT id, name FROM tags WHERE lower(name) LIKE $1 ORDER BY length(name), name LIMIT $2 OFFSET $3`,
    [likePrefix(prefix), limit, offset],
  );
  return rows;
}

/** A status by its ActivityPub id or its public page. */
export async function statusIdByLink(db: Queryable, link: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM statuses WHERE (uri = $1 OR url = $1) AND deleted_at IS NULL LIMIT 1`, [link]);
  return rows[0]?.id ?? null;
}

/** A condition of a status search besides its words: Mastodon's prefix clauses (`from:`, `has:`, …), resolved. */
export type StatusSearchFilter =
  /** accountId null: an account this server does not know, so nothing is by it. */
  | { kind: 'from'; accountId: string | null; negated: boolean }
  | { kind: 'has'; what: 'media' | 'image' | 'video' | 'audio' | 'poll'; negated: boolean }
  | { kind: 'is'; what: 'reply' | 'sensitive' | 'local'; negated: boolean }
  | { kind: 'language'; code: string; negated: boolean }
  /** domain null: this server's own accounts. */
  | { kind: 'domain'; domain: string | null; negated: boolean }
  /** created_at before (exclusive) or from (inclusive) an instant. */
  | { kind: 'before' | 'after'; at: Date };

export interface StatusSearch {
  viewerId: string;
  /** The language the words are stemmed in (a code for status_search_config); null or unknown: `simple` only. */
  language: string | null;
  /** Every word and phrase must match; none of the excluded ones may. */
  words: string[];
  phrases: string[];
  excludedWords: string[];
  excludedPhrases: string[];
  /** `in:`: the viewer's own and interacted-with statuses (library), public ones of indexable authors, or both. */
  scope: 'all' | 'library' | 'public';
  filters: StatusSearchFilter[];
  page: PageParams;
  offset: number;
}

const MEDIA_TYPES = { image: ['image'], video: ['video', 'gifv'], audio: ['audio'] } as const;

/**
 * The SQL of a status search (exported for the test that checks its plan). The words are matched against
 * `statuses.search_vector` (migration 1764900000000) through its GIN index: each word as
 * `stemmed-in-the-query's-language | as-written`, since each status holds its words both stemmed in its own
 * language and unstemmed. Which statuses may be found is Mastodon's rule with full-text search on: the viewer's
 * own, those that mention the viewer or that the viewer favourited or reblogged, and public ones by indexable
 * authors. Newest first.
 */
export function statusSearchQuery(s: StatusSearch): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  // Parameters PostgreSQL is given must be used, so this one is numbered when first needed.
  let languageParam = '';
  const lexemes = (fn: 'plainto_tsquery' | 'phraseto_tsquery', text: string) => {
    languageParam ||= param(s.language ?? '');
    const p = param(text);
    return `(${fn}(status_search_config(${languageParam}::text), ${p}::text) || ${fn}('pg_catalog.simple'::regconfig, ${p}::text))`;
  };
  const positive = [...s.words.map((w) => lexemes('plainto_tsquery', w)), ...s.phrases.map((p) => lexemes('phraseto_tsquery', p))];
  const negative = [...s.excludedWords.map((w) => lexemes('plainto_tsquery', w)), ...s.excludedPhrases.map((p) => lexemes('phraseto_tsquery', p))];

  const where = ['s.deleted_at IS NULL', 's.reblog_of_id IS NULL', 'a.suspended_at IS NULL'];
  if (positive.length > 0) {
    const tsq = positive.join(' && ') + (negative.length > 0 ? ` && !!(${negative.join(' || ')})` : '');
    where.push(`s.search_vector @@ (${tsq})`);
  } else if (negative.length > 0) {
    where.push(`NOT (s.search_vector @@ (${negative.join(' || ')}))`);
  }

  for (const f of s.filters) {
    let cond: string;
    switch (f.kind) {
      case 'from':
        cond = f.accountId === null ? 'FALSE' : `s.account_id = ${param(f.accountId)}`;
        break;
      case 'has':
        // Attachments an edit set aside (position 0) are no longer the status's.
        cond = f.what === 'poll' ? 'EXISTS (SELECT 1 FROM polls p WHERE p.status_id = s.id)'
          : f.what === 'media' ? 'EXISTS (SELECT 1 FROM media_attachments ma WHERE ma.status_id = s.id AND ma.position > 0)'
            : `EXISTS (SELECT 1 FROM media_attachments ma WHERE ma.status_id = s.id AND ma.position > 0 AND ma.type = ANY(${param(MEDIA_TYPES[f.what])}::text[]))`;
        break;
      case 'is':
        cond = f.what === 'reply' ? '(s.in_reply_to_id IS NOT NULL OR s.in_reply_to_account_id IS NOT NULL)'
          : f.what === 'sensitive' ? 's.sensitive' : 'a.domain IS NULL';
        break;
      case 'language':
        cond = `lower(split_part(replace(coalesce(s.language, ''), '_', '-'), '-', 1)) = ${param(f.code.toLowerCase())}`;
        break;
      case 'domain':
        cond = f.domain === null ? 'a.domain IS NULL' : `lower(a.domain) IS NOT DISTINCT FROM ${param(f.domain.toLowerCase())}`;
        break;
      case 'before':
        where.push(`s.created_at < ${param(f.at)}`);
        continue;
      case 'after':
        where.push(`s.created_at >= ${param(f.at)}`);
        continue;
    }
    where.push(f.negated ? `NOT (${cond})` : cond);
  }

  // Paging: newest first, or (min_id) the ones right after min_id, fetched oldest first and reversed by pageRows.
  if (s.page.maxId !== undefined) where.push(`s.id < ${param(s.page.maxId)}`);
  if (s.page.sinceId !== undefined) where.push(`s.id > ${param(s.page.sinceId)}`);
  if (s.page.minId !== undefined) where.push(`s.id > ${param(s.page.minId)}`);
  const order = s.page.minId !== undefined ? 'ASC' : 'DESC';
  const enough = param(s.page.limit + s.offset);

  // One bounded query per way of being found, each newest first with its own LIMIT, so that each can walk an index
  // in id order and stop (a common word) or collect the few matches from the GIN index (a rare one): an OR of them
  // all would be estimated badly and sort every match.
  const common = where.join(' AND ');
  const branch = (from: string, condition: string) =>
    `(SELECT s.id FROM ${from} JOIN accounts a ON a.id = s.account_id WHERE ${condition} AND ${common} ORDER BY s.id ${order} LIMIT ${enough})`;
  const branches: string[] = [];
  if (s.scope !== 'library') branches.push(branch('statuses s', `s.visibility = 'public' AND a.indexable`));
  if (s.scope !== 'public') {
    const v = param(s.viewerId);
    branches.push(
      branch('statuses s', `s.account_id = ${v}`),
      branch('mentions m JOIN statuses s ON s.id = m.status_id', `m.account_id = ${v}`),
      branch('favourites f JOIN statuses s ON s.id = f.status_id', `f.account_id = ${v}`),
      branch('statuses r JOIN statuses s ON s.id = r.reblog_of_id', `r.account_id = ${v} AND r.reblog_of_id IS NOT NULL AND r.deleted_at IS NULL`),
    );
  }
  return {
    text: `SELECT id FROM (${branches.join('\n  UNION\n  ')}) found ORDER BY id ${order} LIMIT ${param(s.page.limit)} OFFSET ${param(s.offset)}`,
    values,
  };
}

/** Ids of the statuses a search finds, newest first (render them through the StatusLoader, which checks visibility again). */
export async function searchStatusIds(db: Queryable, s: StatusSearch): Promise<string[]> {
  const { text, values } = statusSearchQuery(s);
  const { rows } = await db.query<{ id: string }>(text, values);
  return pageRows(rows, s.page).map((r) => r.id);
}
