import { Collection, CollectionPage, Note } from '@fedify/vocab';
import type { RequestContext } from '@fedify/fedify';
import type { AppContext, AppFederation } from '../context.ts';
import type { AccountRow } from '../storage/accounts.ts';
import { findStatus, type StatusRow } from '../storage/statuses.ts';
import { repliesPage, type ListedReply } from '../storage/replies.ts';
import { isId } from '../storage/ids.ts';
import { publishedLocalAccount } from '../services/local-accounts.ts';
import { canSee } from '../services/visibility.ts';
import { statusUri } from '../services/uris.ts';
import { serverHoldsStatus } from '../storage/audience.ts';
import { signedRequester } from './signed-requests.ts';

// The `replies` collection of our Notes, as Mastodon publishes it (ActivityPub::NoteSerializer, RepliesController):
// an unordered Collection whose first page, inlined in the Note, lists the author's own first public or unlisted
// replies (a thread's continuation), then pages through the rest of the author's replies and after them everyone
// else's. Pages list ids, oldest first; a cursor says whose replies and after which id (`author:<id>`,
// `others:<id>`). Followers-only, direct and deleted replies are never listed.

/** Replies inlined in a Note's first page (Mastodon: 5). */
const INLINE = 5;
/** Replies on a served page (Mastodon's DESCENDANTS_LIMIT is 60). */
export const REPLIES_PAGE = 40;
const NAME = 'replies';

export type RepliesCursor = { by: 'author' | 'others'; minId: string | undefined };

export function parseRepliesCursor(cursor: string): RepliesCursor | null {
  const m = /^(author|others):(\d{0,20})$/.exec(cursor);
  if (!m || (m[2] !== '' && !isId(m[2]!))) return null;
  return { by: m[1] as 'author' | 'others', minId: m[2] || undefined };
}

const cursorOf = (c: RepliesCursor): string => `${c.by}:${c.minId ?? ''}`;

/** The collection's id: the Note's own with `/replies`, where Mastodon serves it. */
export function repliesCollectionUri(app: AppContext, author: Pick<AccountRow, 'username'>, s: Pick<StatusRow, 'id' | 'uri'>): URL {
  return new URL(`${statusUri(app.config, s, author.username)}/replies`);
}

/** A page's URL, as Fedify writes the pages of the collections it serves (`?cursor=`). */
function pageUri(collection: URL, c: RepliesCursor): URL {
  const url = new URL(collection);
  url.searchParams.set('cursor', cursorOf(c));
  return url;
}

function replyUri(app: AppContext, r: ListedReply): URL {
  return new URL(statusUri(app.config, r, r.username));
}

/** What comes after a page: the author's next replies, then everyone else's from the start, then nothing. */
function nextCursor(by: RepliesCursor['by'], rows: ListedReply[], limit: number): RepliesCursor | null {
  if (rows.length === limit) return { by, minId: rows.at(-1)!.id };
  return by === 'author' ? { by: 'others', minId: undefined } : null;
}

/** The `replies` of a local status's Note, its first page inlined (the author's first few replies). */
export async function repliesCollectionOf(app: AppContext, author: AccountRow, s: StatusRow): Promise<Collection> {
  const id = repliesCollectionUri(app, author, s);
  const rows = await repliesPage(app.db, s.id, author.id, { by: 'author', limit: INLINE });
  // As Mastodon: after inlined self-replies the next page goes on with the author's; with none, with others'.
  const next = rows.length > 0 ? { by: 'author' as const, minId: rows.at(-1)!.id } : { by: 'others' as const, minId: undefined };
  return new Collection({
    id,
    first: new CollectionPage({ partOf: id, next: pageUri(id, next), items: rows.map((r) => replyUri(app, r)) }),
  });
}

/**
 * Whether a local status may be served to the one asking: public and unlisted ones to anyone, followers-only and
 * direct ones to a signed request from someone who may see them or whose server already holds them.
 */
export async function mayServeStatus(fed: RequestContext<AppContext>, status: StatusRow): Promise<boolean> {
  if (await canSee(fed.data.db, null, status)) return true;
  const signer = await signedRequester(fed);
  if (!signer) return false;
  return (await canSee(fed.data.db, signer.id, status)) || (signer.domain !== null && (await serverHoldsStatus(fed.data.db, status, signer.domain)));
}

/** The status a replies collection belongs to, if it is one of ours that may be served to this request. */
async function repliedStatus(fed: RequestContext<AppContext>, values: { identifier: string; id: string }): Promise<{ author: AccountRow; status: StatusRow } | null> {
  if (!isId(values.id)) return null;
  const author = await publishedLocalAccount(fed.data, values.identifier);
  const status = author ? await findStatus(fed.data.db, values.id) : null;
  if (!author || !status || status.account_id !== author.id || status.reblog_of_id || status.deleted_at) return null;
  return (await mayServeStatus(fed, status)) ? { author, status } : null;
}

/** Serves the collection at its id (Fedify's custom collection dispatcher), paged by the cursors above. */
export function setRepliesDispatcher(federation: AppFederation, authorized: (fed: RequestContext<AppContext>) => Promise<boolean>): void {
  federation
    .setCollectionDispatcher(NAME, Note, '/users/{identifier}/statuses/{id}/replies', async (fed, values, cursor) => {
      // Without a cursor only for a status that may not be served (setFirstCursor): not found.
      if (cursor === null) return null;
      const found = await repliedStatus(fed, values);
      if (!found) return null;
      const c = parseRepliesCursor(cursor);
      if (!c) return null;
      // Pages may be a moment behind (a replica), as the outbox's.
      const rows = await repliesPage(await fed.data.readDb(null), found.status.id, found.author.id, { by: c.by, minId: c.minId, limit: REPLIES_PAGE });
      const next = nextCursor(c.by, rows, REPLIES_PAGE);
      // Fedify's collection pages take ids (URLs) as items as well as objects.
      return { items: rows.map((r) => replyUri(fed.data, r)) as unknown as Note[], nextCursor: next ? cursorOf(next) : null };
    })
    // The collection itself names its first page, for a status that may be served to this request; Fedify serves
    // the collection without asking the dispatcher when there is a first cursor, so this is where that is checked.
    .setFirstCursor(async (fed, values) => ((await repliedStatus(fed, values)) ? cursorOf({ by: 'author', minId: undefined }) : null))
    .authorize((fed) => authorized(fed));
}
