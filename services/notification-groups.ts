import type { Queryable } from '../storage/db.ts';
import type { NotificationRow, NotificationType } from '../storage/notifications.ts';
import type { PageParams } from '../storage/paging.ts';
import { GROUPABLE_TYPES, groupsData, latestOfGroup, scanNotifications, type ScanFilters } from '../storage/notification-groups.ts';

/** A notification group as one page shows it (Mastodon's NotificationGroup). */
export interface PageGroup {
  key: string;
  type: NotificationType;
  statusId: string | null;
  /** The report of an admin.report notification (never grouped). */
  reportId: string | null;
  /** The collection of an added_to_collection or collection_update notification (never grouped). */
  collectionId?: string | null;
  count: number;
  /** Senders of the group's most recent notifications, newest first. */
  sampleAccountIds: string[];
  mostRecentId: string;
  /** Present when paging: the group's oldest and newest notification on this page, and when the newest came. */
  page?: { minId: string; maxId: string; latestAt: Date };
}

export interface GroupedPage {
  groups: PageGroup[];
  /** The newest and oldest notification the page covers (for its Link header), null when empty. */
  newestId: string | null;
  oldestId: string | null;
}

/** The grouped types asked for (all groupable ones when none are given; those that cannot be grouped are ignored). */
export function groupedTypes(asked: string[] | undefined): readonly string[] {
  return asked && asked.length > 0 ? GROUPABLE_TYPES.filter((t) => asked.includes(t)) : GROUPABLE_TYPES;
}

const keyOf = (n: NotificationRow, grouped: readonly string[]) => (n.group_key && grouped.includes(n.type) ? n.group_key : `ungrouped-${n.id}`);
const newer = (a: string, b: string) => (BigInt(a) > BigInt(b) ? a : b);
const older = (a: string, b: string) => (BigInt(a) < BigInt(b) ? a : b);

/**
 * A page of notification groups, as Mastodon pages them: notifications are read in id order (newest first, or from
 * `min_id` forward) and gathered into groups until `limit` groups are full. Reading is bounded: at most ten
 * notifications per group asked for, in batches, so a page of one huge group costs no more than that; the page then
 * covers what was read (its Link header continues below it). Each group's count and sample senders are of all its
 * notifications up to the page's newest (from the group index), as Mastodon counts them.
 */
export async function groupedPage(db: Queryable, accountId: string, f: ScanFilters, p: PageParams, grouped: readonly string[]): Promise<GroupedPage> {
  const asc = p.minId !== undefined;
  const batch = p.limit * 2;
  const cap = p.limit * 10;
  const bounds = asc ? { above: p.minId, below: p.maxId } : { above: p.sinceId, below: p.maxId };
  const groups = new Map<string, { first: NotificationRow; minId: string; maxId: string; latestAt: Date }>();
  let read = 0;
  let full = false;
  let exhausted = false;
  while (!full && !exhausted && read < cap) {
    const want = Math.min(batch, cap - read);
    const rows = await scanNotifications(db, accountId, f, bounds, asc ? 'asc' : 'desc', want);
    for (const n of rows) {
      const key = keyOf(n, grouped);
      const g = groups.get(key);
      if (g) {
        g.minId = older(g.minId, n.id);
        if (newer(g.maxId, n.id) === n.id) Object.assign(g, { maxId: n.id, latestAt: n.created_at, first: n });
      } else if (groups.size === p.limit) {
        full = true;
        break;
      } else {
        groups.set(key, { first: n, minId: n.id, maxId: n.id, latestAt: n.created_at });
      }
      read++;
      if (asc) bounds.above = n.id;
      else bounds.below = n.id;
    }
    if (!full && rows.length < want) exhausted = true;
  }
  if (groups.size === 0) return { groups: [], newestId: null, oldestId: null };

  const all = [...groups.values()];
  const newestId = all.map((g) => g.maxId).reduce(newer);
  const oldestId = all.map((g) => g.minId).reduce(older);
  // Paging forward to the end, the page reaches up to max_id (or now): its groups are counted that far.
  const upTo = asc && exhausted ? (p.maxId !== undefined ? (BigInt(p.maxId) - 1n).toString() : null) : newestId;
  const keys = [...groups.keys()].filter((k) => !k.startsWith('ungrouped-'));
  const data = await groupsData(db, accountId, keys, upTo, f.accountId);
  const out: PageGroup[] = [...groups].map(([key, g]) => {
    const d = data.get(key);
    return {
      key,
      type: g.first.type,
      statusId: g.first.status_id,
      reportId: g.first.report_id ?? null,
      collectionId: g.first.collection_id ?? null,
      count: d?.count ?? 1,
      sampleAccountIds: d?.sampleAccountIds ?? [g.first.from_account_id],
      mostRecentId: d ? newer(d.mostRecentId, g.maxId) : g.maxId,
      page: { minId: g.minId, maxId: g.maxId, latestAt: g.latestAt },
    };
  });
  out.sort((a, b) => (BigInt(a.page!.maxId) < BigInt(b.page!.maxId) ? 1 : -1));
  return { groups: out, newestId, oldestId };
}

/** One group by its key, with all its notifications counted; null when it has none. */
export async function findGroup(db: Queryable, accountId: string, key: string): Promise<PageGroup | null> {
  const n = await latestOfGroup(db, accountId, key);
  if (!n) return null;
  if (key.startsWith('ungrouped-')) {
    return { key, type: n.type, statusId: n.status_id, reportId: n.report_id ?? null, collectionId: n.collection_id ?? null, count: 1, sampleAccountIds: [n.from_account_id], mostRecentId: n.id };
  }
  const d = (await groupsData(db, accountId, [key], null)).get(key);
  return { key, type: n.type, statusId: n.status_id, reportId: n.report_id ?? null, collectionId: n.collection_id ?? null, count: d?.count ?? 1, sampleAccountIds: d?.sampleAccountIds ?? [n.from_account_id], mostRecentId: d?.mostRecentId ?? n.id };
}
