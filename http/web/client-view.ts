// What the signed-in pages show of statuses: the API's own entities (loadForViewer and renderStatus, as the API
// routes render them: the same visibility, blocks, mutes and filters), turned into the public pages' view-model,
// with what the viewer has done to each post and may do with it.
import type { AppContext } from '../../context.ts';
import type { FilterContext } from '../../storage/filters.ts';
import { loadForViewer } from '../serializers/statuses.ts';
import { renderStatus } from '../serializers/status.ts';
import { entryView, type EntryView } from './page-view.ts';

/** The viewer's own marks on a post, and what the page offers them. */
export interface ViewerMarks {
  favourited: boolean;
  reblogged: boolean;
  bookmarked: boolean;
  /** Pinned to the viewer's profile (their own posts only). */
  pinned: boolean;
  /** The viewer wrote it: they may delete it. */
  own: boolean;
  /** Public and unlisted posts may be boosted, and one's own followers-only ones (as Mastodon allows). */
  canBoost: boolean;
  /** A `warn` filter of the viewer matched it: the titles of those filters (the post is folded away behind them). */
  filteredBy: string[];
  /** The author's quote policy lets the viewer quote it (at once or with the author's approval), as `quote_approval` says. */
  canQuote: boolean;
}

export interface ClientEntry extends EntryView {
  marks: ViewerMarks;
  /** The thread page of the post on this server (`/@acct/:id`), for remote posts too. */
  threadPath: string;
}

/** The viewer's fields of a Status entity (renderViewerFields), of which the marks are made. */
export interface ViewerFlags {
  favourited?: boolean;
  reblogged?: boolean;
  bookmarked?: boolean;
  pinned?: boolean;
  filtered?: { filter: { title: string } }[];
  quote_approval?: { current_user?: string };
  reblog?: { quote_approval?: { current_user?: string } } | null;
}

/** The viewer's marks on a post (the original, for a boost) by `authorId`, of `visibility`, from its entity's viewer fields. */
export function marksOf(viewerId: string, post: { authorId: string; visibility: string }, flags: ViewerFlags): ViewerMarks {
  const own = post.authorId === viewerId;
  return {
    favourited: flags.favourited === true,
    reblogged: flags.reblogged === true,
    bookmarked: flags.bookmarked === true,
    pinned: flags.pinned === true,
    own,
    canBoost: post.visibility === 'public' || post.visibility === 'unlisted' || (own && post.visibility === 'private'),
    filteredBy: (flags.filtered ?? []).map((f) => f.filter.title),
    canQuote: ['automatic', 'manual'].includes((flags.reblog ?? flags).quote_approval?.current_user ?? ''),
  };
}

/** A Status entity rendered for the viewer as an entry of a signed-in page. */
export function clientEntry(ctx: AppContext, viewerId: string, entity: Record<string, unknown>): ClientEntry {
  const entry = entryView(ctx.render, entity);
  const p = entry.post;
  return { ...entry, threadPath: `${p.author.path}/${p.id}`, marks: marksOf(viewerId, { authorId: p.author.id, visibility: p.visibility }, entity as ViewerFlags) };
}

/**
 * Statuses by id for the viewer, in the order given, rendered as the API renders them in `context` (what the viewer
 * may not see, blocks, mutes and `hide` filters leave out).
 */
export async function clientEntries(ctx: AppContext, viewerId: string, ids: string[], context: FilterContext | 'search' | 'list' | null): Promise<ClientEntry[]> {
  if (ids.length === 0) return [];
  const { rows, bundle } = await loadForViewer(ctx, viewerId, ids, context);
  return rows.map((row) => clientEntry(ctx, viewerId, renderStatus(ctx.render, bundle, row)));
}
