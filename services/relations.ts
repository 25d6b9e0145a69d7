import type { Queryable } from '../storage/db.ts';
import type { CacheVersions } from '../storage/cache-versions.ts';
import type { AccountRow } from '../storage/accounts.ts';
import type { StatusRow } from '../storage/statuses.ts';
import type { FilterContext } from '../storage/filters.ts';
import { viewerRelations } from '../storage/blocks.ts';

/**
 * Whom one viewer has shut out, and who has shut them out: what every read path consults. `notAfter` is when the
 * first timed mute ends (what was rendered with it must not outlive it).
 */
export interface ViewerRelations {
  blocking: Set<string>;
  blockedBy: Set<string>;
  /** Muted accounts, each with whether their notifications are muted too. */
  muting: Map<string, boolean>;
  /** Domains the viewer blocks, lower-cased. */
  domains: Set<string>;
  /** Members of the viewer's exclusive lists: their posts and boosts are read in those lists, not in home. */
  exclusive: Set<string>;
  notAfter: number | undefined;
}

export const NO_RELATIONS: ViewerRelations = Object.freeze({
  blocking: new Set<string>(),
  blockedBy: new Set<string>(),
  muting: new Map<string, boolean>(),
  domains: new Set<string>(),
  exclusive: new Set<string>(),
  notAfter: undefined,
});

export const hasRelations = (r: ViewerRelations) => r !== NO_RELATIONS;

/**
 * Each viewer's relations, kept while their relation version (bumped after every block, mute or domain block that
 * concerns them, in any process) is the one they were read under. Version 0 is someone nobody ever blocked and who
 * never blocked or muted anyone: they cost a map lookup and nothing else.
 */
export class RelationsCache {
  private readonly entries = new Map<string, { version: string; value: ViewerRelations }>();
  private readonly db: Queryable;
  private readonly versions: CacheVersions;

  constructor(db: Queryable, versions: CacheVersions) {
    this.db = db;
    this.versions = versions;
    versions.onReset?.(() => this.entries.clear()); // Redis lost the versions these were kept under
  }

  async forViewer(viewerId: string | null, version?: string): Promise<ViewerRelations> {
    if (!viewerId) return NO_RELATIONS;
    const v = version ?? (await this.versions.get('r', [viewerId]))[0]!;
    if (v === '0') return NO_RELATIONS;
    const hit = this.entries.get(viewerId);
    if (hit && hit.version === v && (hit.value.notAfter === undefined || hit.value.notAfter > Date.now())) return hit.value;
    const rows = await viewerRelations(this.db, viewerId);
    const value: ViewerRelations = {
      blocking: new Set(rows.blocking),
      blockedBy: new Set(rows.blockedBy),
      muting: new Map(rows.muting.map((m) => [m.id, m.notifications])),
      domains: new Set(rows.domains),
      exclusive: new Set(rows.exclusive),
      notAfter: rows.muting.reduce<number | undefined>((min, m) => (m.expiresAt && (min === undefined || m.expiresAt.getTime() < min) ? m.expiresAt.getTime() : min), undefined),
    };
    this.entries.delete(viewerId);
    if (this.entries.size >= 20_000) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(viewerId, { version: v, value });
    return value;
  }
}

const domainOf = (a: AccountRow | undefined) => a?.domain?.toLowerCase() ?? null;

/** Whether the viewer blocks this account or its domain. */
export function blocksAccount(r: ViewerRelations, account: AccountRow | undefined, id: string): boolean {
  if (r.blocking.has(id)) return true;
  const domain = domainOf(account);
  return domain !== null && r.domains.has(domain);
}

/** Whether listings shown to the viewer leave this account out (Mastodon's excluded_from_timeline accounts and domains). */
export function excludesAccount(r: ViewerRelations, account: AccountRow | undefined, id: string): boolean {
  return r.blockedBy.has(id) || r.muting.has(id) || blocksAccount(r, account, id);
}

/** Whether the viewer's notifications leave out those from this account. */
export function silencesNotificationsFrom(r: ViewerRelations, account: AccountRow | undefined, id: string): boolean {
  return r.blockedBy.has(id) || r.muting.get(id) === true || blocksAccount(r, account, id);
}

interface Rendering {
  statuses: Map<string, StatusRow>;
  accounts: Map<string, AccountRow>;
  mentions: Map<string, string[]>;
}

/**
 * Statuses a listing leaves out for a viewer who blocks or mutes someone, as Mastodon's feeds and StatusFilter do
 * (never the viewer's own):
 * - home (and lists): by or boosting an excluded account, a boost of one, or mentioning someone the viewer blocks or mutes; and
 *   by or boosted by a member of one of the viewer's exclusive lists (Mastodon's exclusive_list_users);
 * - public, thread, and search: by an excluded account, or a boost of one;
 * - account (someone's profile): boosts of excluded accounts (the profile's own posts stay: they were asked for);
 * - notifications are filtered by who sent them (see silencesNotificationsFrom).
 */
export function applyRelations(r: ViewerRelations, context: FilterContext | 'search' | 'list' | null, viewerId: string, rows: StatusRow[], b: Rendering): StatusRow[] {
  if (!hasRelations(r) || context === null || context === 'notifications') return rows;
  const excluded = (accountId: string) => accountId !== viewerId && excludesAccount(r, b.accounts.get(accountId), accountId);
  return rows.filter((s) => {
    const original = s.reblog_of_id ? b.statuses.get(s.reblog_of_id) : undefined;
    if (original && excluded(original.account_id)) return false;
    if (context === 'account') return true;
    if (excluded(s.account_id)) return false;
    if (context !== 'home' && context !== 'list') return true;
    if (context === 'home' && r.exclusive.has(s.account_id)) return false;
    const proper = original ?? s;
    return !(b.mentions.get(proper.id) ?? []).some((m) => m !== viewerId && (r.blocking.has(m) || r.muting.has(m)));
  });
}
