import type { Queryable } from './db.ts';
import { firstIdAt } from './trends.ts';
import { pageClause, pageRows, type PageParams } from './paging.ts';
import { notSilencedSql } from './instance-domain-blocks.ts';
import type { PreviewCardRow } from './preview-cards.ts';

// Link trends and what operators decided about trends (trend_reviews, trend_publishers).

export type ReviewKind = 'link' | 'status' | 'tag';

export interface CardDayRow {
  cardId: string;
  /** Midnight UTC of the day, in seconds since the epoch. */
  day: number;
  uses: number;
  accounts: number;
}

/** Shares of these cards in public, non-sensitive posts per UTC day since `since` (the card's statuses by key). */
export async function cardDailyUse(db: Queryable, cardIds: string[], since: Date): Promise<CardDayRow[]> {
  if (cardIds.length === 0) return [];
  const { rows } = await db.query<{ card_id: string; day: string; uses: string; accounts: string }>(
    `SELECT pcs.preview_card_id::text AS card_id, (floor(extract(epoch FROM s.created_at) / 86400) * 86400)::bigint AS day,
            count(*) AS uses, count(DISTINCT s.account_id) AS accounts
       FROM preview_cards_statuses pcs
       JOIN statuses s ON s.id = pcs.status_id
       JOIN accounts a ON a.id = s.account_id AND a.suspended_at IS NULL AND a.silenced_at IS NULL
      WHERE pcs.preview_card_id = ANY($1::bigint[]) AND pcs.status_id >= $2 AND s.created_at >= $3
        AND s.deleted_at IS NULL AND s.visibility = 'public' AND s.reblog_of_id IS NULL AND NOT s.sensitive AND s.spoiler_text = ''
      GROUP BY 1, 2`,
    [cardIds, firstIdAt(since), since],
  );
  return rows.map((r) => ({ cardId: r.card_id, day: Number(r.day), uses: Number(r.uses), accounts: Number(r.accounts) }));
}

/** Cards by id, in no particular order. */
export async function cardsByIds(db: Queryable, ids: string[]): Promise<Map<string, PreviewCardRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<PreviewCardRow>(`SELECT * FROM preview_cards WHERE id = ANY($1::bigint[])`, [ids]);
  return new Map(rows.map((r) => [String(r.id), { ...r, id: String(r.id) }]));
}

export interface ReviewRow {
  trendable: boolean;
  reviewed_at: Date;
}

/** The reviews of these links, statuses or tags, by target id (unreviewed ones are absent). */
export async function reviewsOf(db: Queryable, kind: ReviewKind, ids: string[]): Promise<Map<string, ReviewRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<ReviewRow & { target_id: string }>(
    `SELECT target_id::text, trendable, reviewed_at FROM trend_reviews WHERE kind = $1 AND target_id = ANY($2::bigint[])`, [kind, ids],
  );
  return new Map(rows.map(({ target_id, ...r }) => [target_id, r]));
}

/** Approves (`trendable`) or rejects a link, status or tag. */
export async function setReview(db: Queryable, kind: ReviewKind, id: string, trendable: boolean): Promise<void> {
  await db.query(
    `INSERT INTO trend_reviews (kind, target_id, trendable) VALUES ($1, $2, $3)
     ON CONFLICT (kind, target_id) DO UPDATE SET trendable = EXCLUDED.trendable, reviewed_at = now()`,
    [kind, id, trendable],
  );
}

export interface PublisherRow {
  id: string;
  domain: string;
  trendable: boolean;
  reviewed_at: Date | null;
  requested_review_at: Date | null;
}

const PUBLISHER = `id::text, domain, trendable, reviewed_at, requested_review_at`;

/** Makes a publisher row for each of these hosts that has none (their links now await review). */
export async function ensurePublishers(db: Queryable, domains: string[]): Promise<void> {
  if (domains.length === 0) return;
  await db.query(
    `INSERT INTO trend_publishers (domain, requested_review_at) SELECT d, now() FROM unnest($1::text[]) d ON CONFLICT (domain) DO NOTHING`,
    [domains],
  );
}

/** The publishers of these hosts or of a domain above them (`news.example` for `www.news.example`). */
export async function publishersCovering(db: Queryable, hosts: string[]): Promise<PublisherRow[]> {
  const candidates = [...new Set(hosts.flatMap(parentDomains))];
  if (candidates.length === 0) return [];
  const { rows } = await db.query<PublisherRow>(`SELECT ${PUBLISHER} FROM trend_publishers WHERE domain = ANY($1::text[])`, [candidates]);
  return rows;
}

/** `a.b.example` → `a.b.example`, `b.example`, `example`. */
export function parentDomains(host: string): string[] {
  const parts = host.split('.');
  return parts.map((_, i) => parts.slice(i).join('.')).filter((d) => d !== '');
}

export async function publishersPage(db: Queryable, p: PageParams): Promise<PublisherRow[]> {
  const values: unknown[] = [];
  const c = pageClause('id', p, values);
  const { rows } = await db.query<PublisherRow>(`SELECT ${PUBLISHER} FROM trend_publishers WHERE ${c.where} ORDER BY ${c.order} ${c.limit}`, values);
  return pageRows(rows, p);
}

/** A publisher by id, or by its domain. */
export async function findPublisher(db: Queryable, idOrDomain: string): Promise<PublisherRow | null> {
  const byId = /^\d{1,19}$/.test(idOrDomain);
  const { rows } = await db.query<PublisherRow>(
    `SELECT ${PUBLISHER} FROM trend_publishers WHERE ${byId ? 'id = $1::bigint' : 'domain = lower($1)'}`, [idOrDomain],
  );
  return rows[0] ?? null;
}

/** Approves or rejects a publisher (made if it was not there yet). */
export async function reviewPublisher(db: Queryable, domain: string, trendable: boolean): Promise<PublisherRow> {
  const { rows } = await db.query<PublisherRow>(
    `INSERT INTO trend_publishers (domain, trendable, reviewed_at) VALUES (lower($1), $2, now())
     ON CONFLICT (domain) DO UPDATE SET trendable = EXCLUDED.trendable, reviewed_at = now()
     RETURNING ${PUBLISHER}`,
    [domain, trendable],
  );
  return rows[0]!;
}

/** Public posts showing a card, newest first, paged: what a link's timeline lists (silenced authors for their followers). */
export async function linkTimelineIds(db: Queryable, cardId: string, viewerId: string | null, p: PageParams): Promise<string[]> {
  const values: unknown[] = [cardId, viewerId];
  const c = pageClause('pcs.status_id', p, values);
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id::text FROM preview_cards_statuses pcs
       JOIN statuses s ON s.id = pcs.status_id
       JOIN accounts a ON a.id = s.account_id
      WHERE pcs.preview_card_id = $1 AND s.deleted_at IS NULL AND s.visibility = 'public' AND s.reblog_of_id IS NULL
        AND a.suspended_at IS NULL AND a.silenced_at IS NULL AND ${notSilencedSql('a', '$2::bigint')} AND ${c.where}
      ORDER BY ${c.order} ${c.limit}`,
    values,
  );
  return pageRows(rows, p).map((r) => r.id);
}
