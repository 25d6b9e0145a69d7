import type { Queryable } from '../storage/db.ts';
import type { CacheVersions, VersionsUsed } from '../storage/cache-versions.ts';
import { findAccountsByIds, type AccountRow } from '../storage/accounts.ts';
import { findStatusesByIds, mentionsOf, tagsOf, viewerFlags, type StatusRow } from '../storage/statuses.ts';
import { viewerMarks } from '../storage/status-marks.ts';
import { mediaOfStatuses, type MediaRow } from '../storage/media.ts';
import { ownVotes, pollsOfStatuses, type PollRow } from '../storage/polls.ts';
import { cardsOfStatuses, type PreviewCardRow } from '../storage/preview-cards.ts';
import { visibleTo } from './visibility.ts';
import type { FilterMatch } from './filters.ts';
import { RelationsCache, type ViewerRelations } from './relations.ts';
import { quotesOfStatuses, type QuoteRow } from '../storage/quotes.ts';
import { followedAmong, policyNamesFollowers } from './quotes.ts';
import { statusApplicationsByIds, type StatusApplication } from '../storage/oauth.ts';
import { accountTexts, resolveEmojis, shortcodesIn } from './custom-emojis.ts';
import { EMOJI_VERSION_ID } from '../storage/cache-versions.ts';
import type { EmojiRow } from '../storage/custom-emojis.ts';

const FLAG_KINDS = ['favourited', 'reblogged', 'bookmarked', 'pinned', 'muted'] as const;
type ViewerFlags = Record<(typeof FLAG_KINDS)[number], Set<string>>;
const noFlags = (): ViewerFlags => ({ favourited: new Set(), reblogged: new Set(), bookmarked: new Set(), pinned: new Set(), muted: new Set() });

/** Everything needed to render a set of statuses. */
export interface StatusBundle {
  statuses: Map<string, StatusRow>;
  accounts: Map<string, AccountRow>;
  mentions: Map<string, string[]>;
  tags: Map<string, string[]>;
  media: Map<string, MediaRow[]>;
  /** Polls by status id; and the viewer's choices in them, by poll id (absent: no viewer, or no polls). */
  polls?: Map<string, PollRow>;
  ownVotes?: Map<string, number[]>;
  /** Link preview cards by status id (absent: none). */
  cards?: Map<string, PreviewCardRow>;
  /** The custom emoji each status's text, spoiler and poll options use, by status id (absent: none). */
  emojis?: Map<string, EmojiRow[]>;
  favourited: Set<string>;
  reblogged: Set<string>;
  /** The viewer's bookmarks, pins and muted conversations among these statuses (absent: none). */
  bookmarked?: Set<string>;
  pinned?: Set<string>;
  muted?: Set<string>;
  viewerId: string | null;
  /** The viewer's filters that match a status shown (services/filters.ts applyFilters), by status id. */
  filtered?: Map<string, FilterMatch[]>;
  /**
   * Quotes (Mastodon 4.5) by quoting status id; which quoted statuses (loaded into `statuses`) the viewer may see; the
   * authors the viewer follows (for `followers` quote policies); the viewer's blocks and mutes (a quote's state).
   */
  quotes?: Map<string, QuoteRow>;
  quoteVisible?: Set<string>;
  following?: Set<string>;
  relations?: ViewerRelations;
  /** The applications the statuses were posted from, by application id (absent: none). */
  applications?: Map<string, StatusApplication>;
}

interface Entry<T> {
  value: T;
  version: string;
  expires: number;
}

/** A bounded in-memory map whose entries are good for a while and only under the version they were stored with. */
class VersionedCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly max: number;
  private readonly ttlMs: number;

  constructor(max: number, ttlMs: number) {
    this.max = max;
    this.ttlMs = ttlMs;
  }

  /** Whatever is cached, current or not: for facts that never change, such as a status's author. */
  peek(id: string): T | undefined {
    return this.entries.get(id)?.value;
  }

  get(id: string, version: string): T | undefined {
    const e = this.entries.get(id);
    return e && e.version === version && e.expires > Date.now() ? e.value : undefined;
  }

  clear(): void {
    this.entries.clear();
  }

  set(id: string, version: string, value: T): void {
    this.entries.delete(id);
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(id, { value, version, expires: Date.now() + this.ttlMs });
  }
}

interface CachedStatus {
  status: StatusRow;
  mentions: string[];
  tags: string[];
  media: MediaRow[];
  poll: PollRow | null;
  card?: PreviewCardRow | null;
  quote?: QuoteRow | null;
  /** Custom emoji its text, spoiler and poll options use (resolved with the rows, in one query per batch). */
  emojis?: EmojiRow[];
}

/** The texts of a status that may use emoji, as Mastodon reads them: spoiler, text, poll options. */
const statusTexts = (s: StatusRow, poll: PollRow | null | undefined) => [s.spoiler_text, s.content, ...(poll?.options ?? [])];

/**
 * Loads statuses for rendering. Timelines read the same statuses over and over, and PostgreSQL row parsing
 * is what limits a Node process (DESIGN.md), so statuses and accounts are kept in memory and checked against
 * version counters in Redis (storage/cache-versions.ts) on every read: a changed count or a deletion shows at once.
 */
export class StatusLoader {
  private readonly statuses = new VersionedCache<CachedStatus>(50_000, 10 * 60_000);
  private readonly accounts = new VersionedCache<AccountRow>(20_000, 10 * 60_000);
  /**
   * Per viewer: which statuses they favourited, reblogged, bookmarked or pinned, or whose conversation they muted, as far
   * as asked. Only their own actions change it.
   */
  private readonly viewers = new VersionedCache<ViewerFlags & { known: Set<string> }>(20_000, 10 * 60_000);
  /**
   * Applications' names and websites by id (null: no such application). An application is never renamed, and there
   * are few, so they are kept without versions; bounded all the same.
   */
  private readonly applications = new Map<string, StatusApplication | null>();
  private readonly db: Queryable;
  private readonly versions: CacheVersions;
  /** Each viewer's blocks and mutes: whom they may not see, and whom their listings leave out. */
  readonly relations: RelationsCache;
  /** The custom emoji version last read (what a status just posted is cached under). */
  private emojiVersion: string | undefined;

  constructor(db: Queryable, versions: CacheVersions) {
    this.db = db;
    this.versions = versions;
    this.relations = new RelationsCache(db, versions);
    // Redis lost the versions these were kept under (storage/cache-versions.ts): numbers would be reused.
    versions.onReset?.(() => [this.statuses, this.accounts, this.viewers].forEach((c) => c.clear()));
  }

  /**
   * Cached values that are still current, loading the rest. Versions first, rows second: a row read after
   * its version can only be newer than the version says, so it is never cached under a later version.
   */
  private async current<T>(kind: 's' | 'a', cache: VersionedCache<T>, ids: string[], known: Map<string, string>, emojiVersion: string, loadMissing: (ids: string[]) => Promise<[string, T][]>): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    if (ids.length === 0) return out;
    // What is cached carries the custom emoji it uses, so it is current only under the emoji version it was made with.
    const cacheVersion = (id: string) => `${versionOf.get(id)!}|${emojiVersion}`;
    const versionOf = new Map<string, string>();
    const unversioned = ids.filter((id) => {
      const v = known.get(id);
      if (v !== undefined) versionOf.set(id, v);
      return v === undefined;
    });
    if (unversioned.length > 0) {
      const versions = await this.versions.get(kind, unversioned);
      unversioned.forEach((id, i) => {
        versionOf.set(id, versions[i]!);
        known.set(id, versions[i]!);
      });
    }
    const missing = ids.filter((id) => {
      const hit = cache.get(id, cacheVersion(id));
      if (hit) out.set(id, hit);
      return !hit;
    });
    if (missing.length > 0) {
      for (const [id, value] of await loadMissing(missing)) {
        cache.set(id, cacheVersion(id), value);
        out.set(id, value);
      }
    }
    return out;
  }

  private statusesById(ids: string[], known: Map<string, string>, emojiVersion: string): Promise<Map<string, CachedStatus>> {
    return this.current('s', this.statuses, ids, known, emojiVersion, async (missing) => {
      const [rows, mentions, tags, media, polls, cards, quotes] = await Promise.all([
        findStatusesByIds(this.db, missing), mentionsOf(this.db, missing), tagsOf(this.db, missing), mediaOfStatuses(this.db, missing), pollsOfStatuses(this.db, missing),
        cardsOfStatuses(this.db, missing), quotesOfStatuses(this.db, missing),
      ]);
      // The emoji of every status loaded here in one query (none when no text has a `:code:`).
      const emojis = await resolveEmojis(this.db, rows.map((st) => ({ key: st.id, accountId: st.account_id, texts: statusTexts(st, polls.get(st.id)) })));
      return rows.map((status) => [status.id, {
        status, mentions: mentions.get(status.id) ?? [], tags: tags.get(status.id) ?? [], media: media.get(status.id) ?? [], poll: polls.get(status.id) ?? null,
        card: cards.get(status.id) ?? null, quote: quotes.get(status.id) ?? null, emojis: emojis.get(status.id) ?? [],
      }]);
    });
  }

  /**
   * A status just posted here, with what its statement wrote (no media, no poll; the stored card it was given, if
   * any): its first rendering (the POST's answer) needs no query for it. Cached under version 0, which it has until
   * anything changes it. Its author, as viewer, knows they have not favourited, boosted, bookmarked or pinned it
   * yet, nor muted its conversation when it starts one.
   */
  rememberNew(status: StatusRow, mentions: string[], tags: string[], card: PreviewCardRow | null = null): void {
    // One whose text may use custom emoji is left to the first load, which resolves them.
    if (this.emojiVersion !== undefined && shortcodesIn(statusTexts(status, null)).length === 0) {
      this.statuses.set(status.id, `0|${this.emojiVersion}`, { status, mentions, tags, media: [], poll: null, card, emojis: [] });
    }
    if (!status.in_reply_to_id) this.viewers.peek(status.account_id)?.known.add(status.id);
  }

  /** The applications these statuses were posted from, asking PostgreSQL (once, for all) only about ones not seen yet. */
  private async applicationsOf(rows: StatusRow[]): Promise<Map<string, StatusApplication> | undefined> {
    const ids = [...new Set(rows.map((st) => st.application_id).filter((id): id is string => !!id))];
    if (ids.length === 0) return undefined;
    const unknown = ids.filter((id) => !this.applications.has(id));
    if (unknown.length > 0) {
      const found = await statusApplicationsByIds(this.db, unknown);
      if (this.applications.size + unknown.length > 10_000) this.applications.clear();
      for (const id of unknown) this.applications.set(id, found.get(id) ?? null);
    }
    const out = new Map<string, StatusApplication>();
    for (const id of ids) {
      const app = this.applications.get(id);
      if (app) out.set(id, app);
    }
    return out;
  }

  private accountsById(ids: string[], known: Map<string, string>, emojiVersion: string): Promise<Map<string, AccountRow>> {
    return this.current('a', this.accounts, ids, known, emojiVersion, async (missing) => {
      const rows = await findAccountsByIds(this.db, missing);
      const emojis = await resolveEmojis(this.db, rows.map((a) => ({ key: a.id, domain: a.domain, texts: accountTexts(a) })));
      return rows.map((a) => [a.id, Object.assign(a, { emojis: emojis.get(a.id) ?? [] })]);
    });
  }

  /** The viewer's flags for these statuses, asking PostgreSQL only about statuses not seen before. */
  private async flagsOf(viewerId: string, ids: string[], version: string): Promise<ViewerFlags> {
    let entry = this.viewers.get(viewerId, version);
    if (!entry) {
      entry = { known: new Set(), ...noFlags() };
      this.viewers.set(viewerId, version, entry);
    }
    const unknown = ids.filter((id) => !entry.known.has(id));
    if (unknown.length > 0) {
      const [found, marks] = await Promise.all([viewerFlags(this.db, viewerId, unknown), viewerMarks(this.db, viewerId, unknown)]);
      for (const id of unknown) entry.known.add(id);
      for (const kind of FLAG_KINDS) for (const id of { ...found, ...marks }[kind]) entry[kind].add(id);
      // Bounded: a viewer who scrolls far starts over rather than growing without end.
      if (entry.known.size > 5000) this.viewers.set(viewerId, '', { known: new Set(), ...noFlags() });
    }
    const out = noFlags();
    for (const kind of FLAG_KINDS) for (const id of ids) if (entry[kind].has(id)) out[kind].add(id);
    return out;
  }

  /**
   * Statuses (and what reblogs point at) by id, in the order asked, without what is deleted or hidden from the viewer.
   */
  async load(viewerId: string | null, ids: string[], authors: readonly string[] = []): Promise<{ rows: StatusRow[]; bundle: StatusBundle; versions: VersionsUsed; relations: ViewerRelations }> {
    // Every version a page needs is asked for in one round trip: the statuses, what they reblog, their authors
    // and mentioned accounts (facts that no edit changes, so any cached copy tells them) and the viewer's.
    // Whatever was not cached yet costs a second round trip, once.
    const wantedStatuses = new Set(ids);
    // `authors`: accounts the caller knows the statuses are by (a stream message names its status's author), whose
    // versions then come in the first read even when the statuses are not cached yet.
    const wantedAccounts = new Set<string>(authors);
    const addFacts = (e: CachedStatus | undefined) => {
      if (!e) return;
      wantedAccounts.add(e.status.account_id);
      for (const m of e.mentions) wantedAccounts.add(m);
    };
    for (const id of ids) {
      const e = this.statuses.peek(id);
      addFacts(e);
      if (e?.status.reblog_of_id) {
        wantedStatuses.add(e.status.reblog_of_id);
        addFacts(this.statuses.peek(e.status.reblog_of_id));
      }
    }
    // The viewer's filter and relation versions come in the same read: renderings depend on them too.
    const viewer = viewerId ? [viewerId] : [];
    const known = await this.versions.getMany({ s: [...wantedStatuses], a: [...wantedAccounts], v: viewer, f: viewer, r: viewer, e: [EMOJI_VERSION_ID] });
    const emojiVersion = known.e.get(EMOJI_VERSION_ID)!;
    if (!emojiVersion.startsWith('?')) this.emojiVersion = emojiVersion;

    const found = await this.statusesById([...new Set(ids)], known.s, emojiVersion);
    const originals = [...found.values()].map((e) => e.status.reblog_of_id).filter((id): id is string => !!id && !found.has(id));
    for (const [id, e] of await this.statusesById([...new Set(originals)], known.s, emojiVersion)) found.set(id, e);

    const all = [...found.values()].map((e) => e.status);
    const relations = await this.relations.forViewer(viewerId, viewerId ? known.r.get(viewerId) : undefined);
    const visible = await visibleTo(this.db, viewerId, all, relations.blockedBy);
    const rows = ids
      .map((id) => found.get(id)?.status)
      .filter((s): s is StatusRow => !!s && visible.has(s.id) && (!s.reblog_of_id || visible.has(s.reblog_of_id)));

    const renderedIds = [...new Set(rows.flatMap((s) => (s.reblog_of_id ? [s.id, s.reblog_of_id] : [s.id])))];
    // What the shown statuses quote (rendered inside them), and what those quote in turn (their ShallowQuote's state),
    // each loaded under its own version, and whether the viewer may see it.
    const quotedOf = (ids: Iterable<string>) => [...new Set([...ids].map((id) => found.get(id)?.quote?.quoted_status_id).filter((id): id is string => !!id))];
    const quoted = quotedOf(renderedIds);
    let quoteVisible = new Set<string>();
    if (quoted.length > 0) {
      const load = async (ids: string[]) => {
        for (const [id, e] of await this.statusesById(ids.filter((q) => !found.has(q)), known.s, emojiVersion)) found.set(id, e);
      };
      await load(quoted);
      const nested = quotedOf(quoted);
      await load(nested);
      const quotedRows = [...new Set([...quoted, ...nested])].map((id) => found.get(id)?.status).filter((st): st is StatusRow => !!st);
      quoteVisible = await visibleTo(this.db, viewerId, quotedRows, relations.blockedBy);
      for (const id of quoted) if (quoteVisible.has(id) && !renderedIds.includes(id)) renderedIds.push(id);
      for (const id of nested) {
        const e = found.get(id);
        if (e && !renderedIds.includes(id)) renderedIds.push(id);
      }
    }
    const accountIds = new Set<string>();
    for (const id of renderedIds) {
      const e = found.get(id)!;
      accountIds.add(e.status.account_id);
      for (const m of e.mentions) accountIds.add(m);
    }
    // The viewer's votes, asked only when a poll is shown (a vote bumps the status's version: see services/polls.ts).
    const pollIds = renderedIds.map((id) => found.get(id)!.poll?.id).filter((id): id is string => !!id);
    // Authors whose quote policy names their followers: whether the viewer follows them (their `quote_approval`).
    const followersOnly = viewerId
      ? [...new Set(renderedIds.map((id) => found.get(id)!.status).filter((st) => policyNamesFollowers(st) && st.account_id !== viewerId).map((st) => st.account_id))]
      : [];
    const [accounts, flags, votes, following, applications] = await Promise.all([
      this.accountsById([...accountIds], known.a, emojiVersion),
      viewerId ? this.flagsOf(viewerId, renderedIds, known.v.get(viewerId) ?? '0') : Promise.resolve(noFlags()),
      viewerId && pollIds.length > 0 ? ownVotes(this.db, viewerId, pollIds) : Promise.resolve(undefined),
      viewerId && followersOnly.length > 0 ? followedAmong(this.db, viewerId, followersOnly) : Promise.resolve(undefined),
      this.applicationsOf(renderedIds.map((id) => found.get(id)!.status)),
    ]);
    // A suspended author's statuses (a remote actor deleted by its server, say) are shown nowhere, boosted or not.
    const authorShown = (statusId: string) => !accounts.get(found.get(statusId)!.status.account_id)?.suspended_at;
    return {
      rows: rows.filter((st) => authorShown(st.id) && (!st.reblog_of_id || authorShown(st.reblog_of_id))),
      relations,
      versions: known,
      bundle: {
        statuses: new Map([...found].map(([id, e]) => [id, e.status])),
        accounts,
        mentions: new Map([...found].map(([id, e]) => [id, e.mentions])),
        tags: new Map([...found].map(([id, e]) => [id, e.tags])),
        media: new Map([...found].map(([id, e]) => [id, e.media])),
        polls: new Map([...found].flatMap(([id, e]) => (e.poll ? [[id, e.poll] as const] : []))),
        cards: new Map([...found].flatMap(([id, e]) => (e.card ? [[id, e.card] as const] : []))),
        emojis: new Map([...found].flatMap(([id, e]) => (e.emojis?.length ? [[id, e.emojis] as const] : []))),
        ...(votes ? { ownVotes: votes } : {}),
        ...(following ? { following } : {}),
        ...(applications ? { applications } : {}),
        quotes: new Map([...found].flatMap(([id, e]) => (e.quote ? [[id, e.quote] as const] : []))),
        quoteVisible,
        relations,
        ...flags,
        viewerId,
      },
    };
  }
}
