import type { AppContext } from '../../context.ts';
import type { StatusBundle } from '../../services/hydrate.ts';
import type { StatusRow } from '../../storage/statuses.ts';
import type { FilterContext } from '../../storage/filters.ts';
import { applyFilters, type ViewerFilters } from '../../services/filters.ts';
import { applyRelations, type ViewerRelations } from '../../services/relations.ts';
import { marksOfViewers, noViewerMarks, type ViewerMarks } from '../../storage/status-marks.ts';
import { findNotification } from '../../storage/notifications.ts';
import { renderStatus } from './status.ts';
import { renderNotifications } from './statuses.ts';
import { conversationPayload } from './conversation.ts';
import type { StreamMessage, StreamView } from '../../services/stream-events.ts';
import { findConversation } from '../../storage/conversations.ts';
import { findAnnouncement } from '../../storage/announcements.ts';
import { renderAnnouncements } from './announcement.ts';

/**
 * Streaming payloads (the JSON text Mastodon puts in `payload`), rendered for their receivers. An event reaches
 * every socket of a channel in the same turn; the receivers of one status gathered in that turn are served by one
 * load, one query for what they did with it (favourites, boosts, bookmarks, votes, muted threads), and one JSON
 * encoding per distinct view (at most a few), however many sockets there are. A new status's messages bring the
 * view most receivers share (StreamMessage's `view`): it goes as it is, with nothing read, to each receiver who is
 * not its author and has no filters, blocks or mutes (their versions kept in memory under client tracking); the
 * status is read only for the others. Null for a receiver who may not see it.
 */
export class StreamPayloads {
  private readonly ctx: AppContext;
  /** Receivers waiting for a status this turn, by status, then where it is shown, then viewer. */
  private pending = new Map<string, PendingStatus>();
  private scheduled = false;
  /**
   * Loads of a new status's public view under way, by status: one post reaches a process as several messages (the
   * public streams', each home shard's), often a few milliseconds apart and so in different batches; the batches
   * that come while the first one's load is out share it rather than each reading the status again. Only for
   * `update` (a new status: any read made after its first message arrived shows it as made, and a later edit comes
   * as a `status.update` of its own), and forgotten once the load ends.
   */
  private readonly newStatusLoads = new Map<string, Promise<LoadedStatus>>();

  constructor(ctx: AppContext) {
    this.ctx = ctx;
  }

  /**
   * A status for a receiver, with their filters of `context` applied (null: shown unfiltered, as on a direct
   * stream), handed to `done` once the batch it joins is rendered: null when it is not for them. A callback, not a
   * promise: one event is asked for by thousands of sessions in the same turn.
   */
  status(message: StatusMessage, viewerId: string, context: FilterContext | 'list' | null, done: (payload: string | null) => void): void {
    const { statusId, event, accountId: authorId, view } = message;
    let batch = this.pending.get(statusId);
    if (!batch) {
      this.pending.set(statusId, (batch = { byContext: new Map(), edited: false, authors: [], view: undefined }));
      this.ctx.liveDeliveries.begin(); // ended once this batch is delivered (flush)
      // The status is read at once, while the rest of this turn's receivers are gathered, unless the message brings
      // the view most of them are sent (then it is read, in flush, only if some receiver needs more).
      if (event === 'update' && view === undefined) this.loadNewStatus(statusId, authorId);
    }
    // An edit's view replaces the view from before it (or, without one, the edit is read afresh).
    if (event === 'status.update') {
      batch.edited = true;
      batch.view = view;
    } else if (!batch.edited && batch.view === undefined) batch.view = view;
    if (authorId !== undefined && batch.authors.length === 0) batch.authors.push(authorId);
    let receivers = batch.byContext.get(context);
    if (!receivers) batch.byContext.set(context, (receivers = new Map()));
    const receiver = receivers.get(viewerId);
    if (!receiver) receivers.set(viewerId, { viewerId, context, waiting: [done], viewed: view !== undefined });
    else {
      receiver.waiting.push(done);
      if (view === undefined) receiver.viewed = false;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  async notification(notificationId: string, viewerId: string): Promise<string | null> {
    const row = await findNotification(this.ctx.db, viewerId, notificationId);
    if (!row) return null;
    const [rendered] = await renderNotifications(this.ctx, viewerId, [row]);
    return rendered ? JSON.stringify(rendered) : null;
  }

  /** A direct conversation for its owner (services/conversations.ts). */
  async conversation(conversationId: string, viewerId: string): Promise<string | null> {
    return conversationPayload(this.ctx, viewerId, await findConversation(this.ctx.db, viewerId, conversationId));
  }

  /** A newly published announcement, with the receiver's own `read` and reactions. */
  async announcement(announcementId: string, viewerId: string): Promise<string | null> {
    const row = await findAnnouncement(this.ctx.db, announcementId);
    if (!row?.published) return null;
    const [rendered] = await renderAnnouncements(this.ctx.db, this.ctx.render, [row], viewerId);
    return rendered ? JSON.stringify(rendered) : null;
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    for (const [statusId, { byContext, edited, authors, view }] of batch) {
      const receivers: Receiver[] = [];
      for (const some of byContext.values()) for (const r of some.values()) receivers.push(r);
      // An edit is read afresh: a load started before it was made would show the status as it was.
      const open = () => (edited ? this.ctx.statusLoader.load(null, [statusId], authors) : this.loadNewStatus(statusId, authors[0]));
      void this.renderFor(statusId, view, open, receivers)
        .then(
          (payloads) => deliver(receivers, payloads),
          () => { for (const r of receivers) for (const done of r.waiting) done(null); },
        )
        .finally(() => this.ctx.liveDeliveries.end());
    }
  }

  /** A new status's public view: the load under way for it, or one started now. */
  private loadNewStatus(statusId: string, authorId: string | undefined): Promise<LoadedStatus> {
    const under = this.newStatusLoads.get(statusId);
    if (under) return under;
    const load = this.ctx.statusLoader.load(null, [statusId], authorId === undefined ? [] : [authorId]);
    this.newStatusLoads.set(statusId, load);
    const forget = () => { if (this.newStatusLoads.get(statusId) === load) this.newStatusLoads.delete(statusId); };
    load.then(forget, forget);
    return load;
  }

  /**
   * Payloads by receiver, with each receiver's filters applied; a receiver left out is not to be sent it. `view`: the
   * message's view of the status (StreamMessage), sent as it is to those it is for; `open` reads the status for the
   * others.
   */
  private async renderFor(statusId: string, view: string | undefined, open: () => Promise<LoadedStatus>, receivers: Receiver[]): Promise<Map<Receiver, string>> {
    // The receivers' filter and relation versions, from memory for the most part (CacheVersions.viewerVersions);
    // most are 0 (no filters, no blocks or mutes: nothing to load).
    const versions = await this.ctx.versions.viewerVersions([...new Set(receivers.map((r) => r.viewerId))]);
    const out = new Map<Receiver, string>();
    const shared = view === undefined ? null : sharedViewOf(view);
    let rest = receivers;
    if (shared) {
      rest = [];
      for (const r of receivers) {
        if (r.viewed && versions.f.get(r.viewerId) === '0' && versions.r.get(r.viewerId) === '0' && !shared.authors.has(r.viewerId)) out.set(r, shared.json);
        else rest.push(r);
      }
      if (rest.length === 0) return out;
    }
    const viewerIds = [...new Set(rest.map((r) => r.viewerId))];
    const unfiltered = await this.unfilteredFor(statusId, open(), viewerIds);
    const filtersOf = new Map<string, ViewerFilters>();
    const relationsOf = new Map<string, ViewerRelations>();
    // Only the few with filters, blocks or mutes have anything to load (no promise for each of the others).
    const loading: Promise<void>[] = [];
    for (const v of viewerIds) {
      const f = versions.f.get(v)!;
      const r = versions.r.get(v)!;
      if (f !== '0') loading.push(this.ctx.filters.forViewer(v, f).then((x) => void filtersOf.set(v, x)));
      if (r !== '0') loading.push(this.ctx.statusLoader.relations.forViewer(v, r).then((x) => void relationsOf.set(v, x)));
    }
    await Promise.all(loading);
    for (const r of rest) {
      const view = unfiltered.get(r.viewerId);
      if (!view) continue;
      // Blocks and mutes as REST applies them (services/relations.ts): an author who blocks the receiver is never
      // shown to them; the user and public streams leave out whom they block or mute, as their timelines do.
      const relations = relationsOf.get(r.viewerId);
      if (relations && !shownDespiteRelations(relations, r.context, r.viewerId, view)) continue;
      const filters = filtersOf.get(r.viewerId);
      if (!r.context || !filters || filters.filters.length === 0) {
        out.set(r, view.json);
        continue;
      }
      // A list is read with the home filters, as on Mastodon.
      const applied = applyFilters(filters, r.context === 'list' ? 'home' : r.context, r.viewerId, [view.row], view.bundle);
      const row = applied.rows[0];
      if (!row) continue; // a filter hides it
      out.set(r, applied.bundle === view.bundle ? view.json : JSON.stringify(renderStatus(this.ctx.render, applied.bundle, row)));
    }
    return out;
  }

  /** Each receiver's view of the status before filters, with what rendering it took. */
  private async unfilteredFor(statusId: string, loading: Promise<LoadedStatus>, viewerIds: string[]): Promise<Map<string, StatusView>> {
    const out = new Map<string, StatusView>();
    // The marks are asked for with the status, assuming it is no boost (a boost's are those of its original, asked
    // for once it is known).
    const early = marksOfViewers(this.ctx.db, viewerIds, statusId);
    early.catch(() => {});
    const open = await loading;
    const row = open.rows[0];
    if (!row) {
      // Followers-only or direct: seen by few, each checked as a REST read would check them.
      for (const viewerId of viewerIds) {
        const { rows, bundle } = await this.ctx.statusLoader.load(viewerId, [statusId]);
        if (rows[0]) out.set(viewerId, { json: JSON.stringify(renderStatus(this.ctx.render, bundle, rows[0])), row: rows[0], bundle });
      }
      return out;
    }
    // Public or unlisted: one view per combination of what the receivers did with the status shown (favourited,
    // boosted, bookmarked, muted its thread, voted in its poll), as REST shows it to each.
    const proper = row.reblog_of_id ?? row.id;
    const author = open.bundle.statuses.get(proper)?.account_id;
    const pollId = open.bundle.polls?.get(proper)?.id;
    const marks = await (proper === statusId ? early : marksOfViewers(this.ctx.db, viewerIds, proper));
    const views = new Map<string, StatusView>();
    for (const viewerId of viewerIds) {
      const m = marks.get(viewerId) ?? NO_MARKS;
      const own = viewerId === row.account_id || viewerId === author;
      const key = `${+m.favourited}${+m.reblogged}${+m.bookmarked}${+m.muted}:${m.choices.join(',')}`;
      let view = own ? undefined : views.get(key);
      if (view === undefined) {
        const bundle: StatusBundle = { ...open.bundle, ...marksAsBundle(m, proper, pollId), viewerId };
        view = { json: JSON.stringify(renderStatus(this.ctx.render, bundle, row)), row, bundle };
        // Whose own post it is shows in the entity (pinned); such views are not shared with others.
        if (!own) views.set(key, view);
      }
      out.set(viewerId, view);
    }
    return out;
  }
}

/**
 * A message's view (StreamMessage), and whom it is not for: the status's author and the boost's (their own posts
 * show as theirs). Null when someone has favourited or boosted the status shown, or voted in its poll: who, only a
 * read of the receivers' marks tells. (A bookmark has no count: one made in the moment between a post and the
 * arrival of its message does not show in that message; the next read of the status shows it.)
 */
function sharedViewOf(json: string): { json: string; authors: Set<string> } | null {
  type Shown = { account?: { id?: string }; favourites_count?: number; reblogs_count?: number; poll?: { votes_count?: number } | null };
  try {
    const status = JSON.parse(json) as Shown & { reblog?: Shown | null };
    const proper = status.reblog ?? status;
    if (proper.favourites_count !== 0 || proper.reblogs_count !== 0 || (proper.poll && proper.poll.votes_count !== 0)) return null;
    const authors = new Set<string>();
    for (const id of [status.account?.id, status.reblog?.account?.id]) if (id !== undefined) authors.add(id);
    return { json, authors };
  } catch {
    return null;
  }
}

/**
 * A status as an account that may see it, is not its author, and has not favourited, boosted or bookmarked it or
 * voted in its poll sees it: what most receivers of a new status's live events are sent. The fan-out job renders it
 * once and the stream messages to those who may see it carry it (StreamMessage's `view`). Read as its author (who
 * sees it whatever its visibility), rendered with nothing of theirs. Null when it is not to be shown (a suspended
 * author).
 */
export async function renderStreamView(ctx: Pick<AppContext, 'statusLoader' | 'render' | 'versions'>, statusId: string, authorId: string): Promise<StreamView | null> {
  const { rows, bundle, versions } = await ctx.statusLoader.load(authorId, [statusId]);
  const row = rows[0];
  if (!row) return null;
  const { statuses, accounts, mentions, tags, media, polls, cards, applications } = bundle;
  // Its application as everyone sees it (not as its author does, when they keep it to themselves).
  const asNoOne: StatusBundle = {
    statuses, accounts, mentions, tags, media, ...(polls ? { polls } : {}), ...(cards ? { cards } : {}), ...(applications ? { applications } : {}),
    favourited: new Set(), reblogged: new Set(), viewerId: NO_ACCOUNT,
  };
  // The statuses and accounts it shows, at the versions it was rendered under: a favourite, a boost, a vote, an
  // edit or a new display name bumps one of them.
  const shown = { s: [...versions.s.keys()], a: [...versions.a.keys()] };
  const stillCurrent = async () => {
    const now = await ctx.versions.getMany(shown);
    return (['s', 'a'] as const).every((kind) => shown[kind].every((id) => now[kind].get(id) === versions[kind].get(id)));
  };
  return { json: JSON.stringify(renderStatus(ctx.render, asNoOne, row)), stillCurrent };
}

/** No account's id (ids are positive): a viewer who is neither the author nor anyone who acted on the status. */
const NO_ACCOUNT = '0';

function shownDespiteRelations(relations: ViewerRelations, context: FilterContext | 'list' | null, viewerId: string, view: StatusView): boolean {
  const original = view.row.reblog_of_id ? view.bundle.statuses.get(view.row.reblog_of_id) : undefined;
  if (relations.blockedBy.has(view.row.account_id) || (original && relations.blockedBy.has(original.account_id))) return false;
  return applyRelations(relations, context, viewerId, [view.row], view.bundle).length === 1;
}

/** Receivers handed their payload (and so written to) per turn of the event loop. */
const DELIVER_PER_TURN = 250;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Hands each receiver its payload, a few hundred per turn: writing to a thousand sockets takes tens of milliseconds,
 * and in between, what else has come (the same post's messages for other streams, answers to their queries) is
 * taken in, so that the next batch is rendered while this one is written rather than after.
 */
async function deliver(receivers: Receiver[], payloads: Map<Receiver, string>): Promise<void> {
  let n = 0;
  for (const r of receivers) {
    const payload = payloads.get(r) ?? null;
    for (const done of r.waiting) done(payload);
    if (++n % DELIVER_PER_TURN === 0 && n < receivers.length) await nextTurn();
  }
}

/** A status's public view as the loader gives it. */
type LoadedStatus = Awaited<ReturnType<AppContext['statusLoader']['load']>>;

/** An event of a status, as sessions pass it on. */
type StatusMessage = Extract<StreamMessage, { event: 'update' | 'status.update' }>;

/** The receivers of one status gathered this turn, and whether any of them is told of an edit. */
interface PendingStatus {
  byContext: Map<FilterContext | 'list' | null, Map<string, Receiver>>;
  edited: boolean;
  /** The view a message brought (StreamMessage), if any: an edit's, once an edit is among them. */
  view: string | undefined;
  /** Its author, when a message named it (at most one: a status has one). */
  authors: string[];
}

/** Someone a status is rendered for: a viewer, where it is shown, and the sessions' callbacks waiting for it. */
interface Receiver {
  viewerId: string;
  context: FilterContext | 'list' | null;
  waiting: ((payload: string | null) => void)[];
  /**
   * Whether every message that named them for it brought a view: a message is sent only to those who may see what it
   * brings (a followers-only status's view, to followers), so another's view is not for them.
   */
  viewed: boolean;
}

const NO_MARKS = noViewerMarks();

/** A viewer's marks on a status (the original, for a boost) as a bundle holds them. */
function marksAsBundle(m: ViewerMarks, statusId: string, pollId: string | undefined): Pick<StatusBundle, 'favourited' | 'reblogged' | 'bookmarked' | 'pinned' | 'muted' | 'ownVotes'> {
  const setIf = (yes: boolean) => new Set(yes ? [statusId] : []);
  return {
    favourited: setIf(m.favourited), reblogged: setIf(m.reblogged), bookmarked: setIf(m.bookmarked), pinned: setIf(m.pinned), muted: setIf(m.muted),
    ...(pollId && m.choices.length > 0 ? { ownVotes: new Map([[pollId, m.choices]]) } : {}),
  };
}

interface StatusView {
  json: string;
  row: StatusRow;
  bundle: StatusBundle;
}

